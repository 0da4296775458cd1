package main

import (
	"context"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// A malformed QUEUES_* integer, boolean or duration stops each process with an error naming
// the variable (it was silently the default before), and before anything is started.
func TestMalformedEnvironmentNamesTheVariable(t *testing.T) {
	runs := map[string]func(context.Context, []string) error{"api": runAPI, "pusher": runPusher, "serve": runServe}
	for _, tc := range []struct{ process, name, value string }{
		{"api", "QUEUES_RATE_SEND", "ten"},
		{"api", "QUEUES_REDIS_CLUSTER", "yes"},
		{"api", "QUEUES_REDIS_SYNC_REPLICAS", "1.5"},
		{"api", "QUEUES_PUSH_ALLOW_PRIVATE", "maybe"},
		{"api", "QUEUES_MOVE_LEASE", "soon"},
		{"pusher", "QUEUES_PUSH_MAX_IN_FLIGHT", "many"},
		{"pusher", "QUEUES_BACKLOG_TOP", "-x"},
		{"pusher", "QUEUES_REDIS_CLUSTER", "on?"},
		{"serve", "QUEUES_RATE_FIFO_RECEIVE", "fast"},
		{"serve", "QUEUES_PUSH_ALLOW_PRIVATE", "maybe"},
	} {
		t.Run(tc.process+"/"+tc.name, func(t *testing.T) {
			t.Setenv(tc.name, tc.value)
			// An unknown flag makes a run that ignored the variable fail at once, without
			// starting anything (a variable is applied before the command line is parsed).
			err := runs[tc.process](t.Context(), []string{"-no-such-flag"})
			if err == nil || !strings.Contains(err.Error(), tc.name+"=") {
				t.Fatalf("%s=%s: %v, want an error naming the variable", tc.name, tc.value, err)
			}
		})
	}
}

// A well-formed variable sets the flag, and the command line overrides it.
func TestEnvironmentSetsFlagsBelowTheCommandLine(t *testing.T) {
	t.Setenv("QUEUES_RATE_SEND", "7")
	var r struct{ got int }
	fs := newTestFlags(&r.got)
	if err := parseFlags(fs, nil); err != nil || r.got != 7 {
		t.Fatalf("from the variable: %d, %v", r.got, err)
	}
	fs = newTestFlags(&r.got)
	if err := parseFlags(fs, []string{"-rate-send", "9"}); err != nil || r.got != 9 {
		t.Fatalf("over the variable: %d, %v", r.got, err)
	}
}

func newTestFlags(into *int) *pflag.FlagSet {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.IntVar(into, "rate-send", 3, "")
	bindEnv(fs, "rate-send", "QUEUES_RATE_SEND")
	return fs
}
