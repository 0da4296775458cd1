package main

import (
	"context"
	"strings"
	"testing"
)

// TestValidateNamesTheVariable: a value of the right type but out of bounds stops the process
// at start-up (Validate, before anything is opened) with an error naming the variable.
func TestValidateNamesTheVariable(t *testing.T) {
	runs := map[string]func(context.Context, []string) error{"api": runAPI, "pusher": runPusher}
	for _, tc := range []struct{ process, name, value string }{
		{"api", "QUEUES_REDIS_SYNC_REPLICAS", "-1"},
		{"api", "QUEUES_STREAM_MAX_PER_PROJECT", "0"},
		{"api", "QUEUES_STREAM_MAX_PER_REPLICA", "-1"},
		{"pusher", "QUEUES_BACKLOG_TOP", "-3"},
		{"pusher", "QUEUES_PUSH_MAX_IN_FLIGHT", "-1"},
	} {
		t.Run(tc.process+"/"+tc.name, func(t *testing.T) {
			t.Setenv(tc.name, tc.value)
			err := runs[tc.process](t.Context(), nil)
			if err == nil || !strings.Contains(err.Error(), tc.name) {
				t.Fatalf("%s=%s: %v, want an error naming the variable", tc.name, tc.value, err)
			}
		})
	}
}
