package main

import (
	"context"
	"fmt"
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
	var got int
	if _, err := parseAsOperator(testFlags(&got)); err != nil || got != 7 {
		t.Fatalf("from the variable: %d, %v", got, err)
	}
	if _, err := parseAsOperator(testFlags(&got), "-rate-send", "9"); err != nil || got != 9 {
		t.Fatalf("over the variable: %d, %v", got, err)
	}
}

func testFlags(into *int) func(fs *pflag.FlagSet) {
	return func(fs *pflag.FlagSet) {
		fs.IntVar(into, "rate-send", 3, "")
		bindEnv(fs, "rate-send", "QUEUES_RATE_SEND")
	}
}

// One dash and two parse to the same values, as Go's flag package allowed; a value that
// starts with a dash stays a value, and "--" or the first non-flag argument ends the flags.
func TestOneDashLongFlags(t *testing.T) {
	type got struct {
		phases string
		count  int
		json   bool
		rest   []string
	}
	parse := func(args ...string) (got, error) {
		g := got{rest: []string{}}
		rest, err := parseAsOperator(func(fs *pflag.FlagSet) {
			fs.StringVar(&g.phases, "phases", "produce", "")
			fs.IntVar(&g.count, "count", 1, "")
			fs.BoolVar(&g.json, "j", false, "") // a one-letter long flag, as health's -q
		}, args...)
		if rest != nil {
			g.rest = rest
		}
		return g, err
	}
	for _, tc := range []struct {
		args []string
		want got
	}{
		{[]string{"-phases", "consume", "-count", "5", "-j"}, got{"consume", 5, true, []string{}}},
		{[]string{"--phases", "consume", "--count", "5", "--j"}, got{"consume", 5, true, []string{}}},
		{[]string{"-phases=consume", "--count=5", "-j=true"}, got{"consume", 5, true, []string{}}},
		{[]string{"-phases", "-count", "-count", "-5"}, got{"-count", -5, false, []string{}}},
		{[]string{"-count", "2", "--", "-phases", "x"}, got{"produce", 2, false, []string{"-phases", "x"}}},
		{[]string{"-count", "2", "url", "-phases", "x"}, got{"produce", 2, false, []string{"url", "-phases", "x"}}},
	} {
		g, err := parse(tc.args...)
		if err != nil || fmt.Sprint(g) != fmt.Sprint(tc.want) {
			t.Errorf("%q: %+v, %v; want %+v", tc.args, g, err, tc.want)
		}
	}
	if _, err := parse("-bogus"); err == nil || !strings.Contains(err.Error(), "--bogus") {
		t.Errorf("-bogus: %v, want an unknown flag naming it", err)
	}
	for _, help := range []string{"-h", "-help", "--help"} {
		if g, err := parse(help); err != nil || len(g.rest) > 0 {
			t.Errorf("%s: %+v, %v; want the help", help, g, err)
		}
	}
}
