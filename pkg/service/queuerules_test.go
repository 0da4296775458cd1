package service

import (
	"strings"
	"testing"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/ids"
)

// TestValidateQueueName: a name is 1 to 80 of A-Z, a-z, 0-9, _ and -; only a fifo queue's may
// end in ".fifo" (75 before it); none may start with the queue slug prefix.
func TestValidateQueueName(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		fifo bool
		ok   bool
	}{
		{"orders", false, true},
		{"Orders_2-b", false, true},
		{strings.Repeat("a", 80), false, true},
		{strings.Repeat("a", 81), false, false},
		{"", false, false},
		{"has space", false, false},
		{"dot.ted", false, false},
		{"orders.fifo", true, true},
		{strings.Repeat("a", 75) + ".fifo", true, true},
		{strings.Repeat("a", 76) + ".fifo", true, false},
		{".fifo", true, false},
		{"orders.fifo", false, false}, // a standard queue's name may not end in .fifo
		{"orders", true, true},        // nor need a fifo queue's
		{ids.QueuePrefix + "x", false, false},
	} {
		err := ValidateQueueName(c.name, c.fifo)
		if (err == nil) != c.ok {
			t.Errorf("ValidateQueueName(%q, fifo %v) = %v, want ok %v", c.name, c.fifo, err, c.ok)
		}
		if err != nil && (err.Code != apierr.InvalidArgument || err.Field != "name") {
			t.Errorf("ValidateQueueName(%q): %s on %q, want invalid_argument on name", c.name, err.Code, err.Field)
		}
	}
}

// TestLooksLikeQueueName: the shape alone, which the lookups check before any storage call:
// ".fifo" ends a name of either type here.
func TestLooksLikeQueueName(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"q": true, strings.Repeat("z", 80): true, strings.Repeat("z", 81): false,
		"q.fifo": true, "q.fifo.fifo": false, "q/x": false, "é": false,
	} {
		if got := LooksLikeQueueName(name); got != want {
			t.Errorf("LooksLikeQueueName(%q) = %v, want %v", name, got, want)
		}
	}
}
