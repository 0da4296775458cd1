package main

import (
	"context"
	"strings"
	"testing"
)

// The bench's flags are checked before anything is dialled: a bad -cpu-pids, and flags that
// belong to the other client, are refused with an error naming the flag.
func TestBenchFlagsRefused(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-cpu-pids", "api=x"}, "cpu-pids"},
		{[]string{"-cpu-pids", "bench=1"}, "cpu-pids"},
		{[]string{"-stream"}, "stream"},
		{[]string{"-raw", "-poll"}, "poll"},
		{[]string{"-raw", "-sendbatch"}, "sendbatch"},
		{[]string{"-send-window", "-2"}, "send window"},
	} {
		args := append([]string{"-url", "http://127.0.0.1:1", "-neighbour-a-process=false", "-quiet"}, c.args...)
		err := runBench(context.Background(), args)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error about %s", c.args, err, c.want)
		}
	}
}
