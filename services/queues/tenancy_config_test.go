package main

import (
	"context"
	"strings"
	"testing"
)

// TestDefaultLimitsConfig: a malformed QUEUES_DEFAULT_LIMITS or QUEUES_USAGE_FLUSH_EVERY stops
// api and serve at start-up with an error naming the variable (before anything is opened).
func TestDefaultLimitsConfig(t *testing.T) {
	for _, tc := range []struct{ env, value, want string }{
		{"QUEUES_DEFAULT_LIMITS", `{"maxQueues": -5}`, "QUEUES_DEFAULT_LIMITS (-default-limits): maxQueues: must be"},
		{"QUEUES_DEFAULT_LIMITS", `maxQueues=5`, "QUEUES_DEFAULT_LIMITS"},
		{"QUEUES_DEFAULT_LIMITS", `{"maxQueus": 5}`, "maxQueus: unknown limit"},
		{"QUEUES_USAGE_FLUSH_EVERY", "1m", "QUEUES_USAGE_FLUSH_EVERY"},
		{"QUEUES_TRUSTED_PROXIES", "10.0.0.0/33", "QUEUES_TRUSTED_PROXIES (-trusted-proxies)"},
	} {
		t.Run(tc.env+"="+tc.value, func(t *testing.T) {
			t.Setenv(tc.env, tc.value)
			for name, run := range map[string]func(context.Context, []string) error{"api": runAPI, "serve": runServe} {
				err := run(context.Background(), []string{"-listen", "127.0.0.1:0", "-data-dir", t.TempDir()}[:map[string]int{"api": 2, "serve": 4}[name]])
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("%s: %v, want an error with %q", name, err, tc.want)
				}
			}
		})
	}
}
