package sqs

import (
	"fmt"
	"testing"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/engine"
)

// TestFigureRefusalsAnswer: the engines' refusals that carry figures (a message over its
// queue's size, the project's byte quota, a fifo copy's taken dedup id) get the SQS answers
// the engines' own *apierr.Error values got before the service layer worded them.
func TestFigureRefusalsAnswer(t *testing.T) {
	t.Parallel()
	quota := apierr.New(apierr.QuotaExceeded, "the send would take the project's stored bytes past its limit of %d bytes "+
		"(maxStoredBytes); consume or purge messages first", 1000)
	quota.Details = map[string]any{"limit": "maxStoredBytes"}
	for _, c := range []struct {
		err    error
		before *apierr.Error
	}{
		{&engine.TooLarge{Bytes: 300, Limit: 256},
			apierr.New(apierr.PayloadTooLarge, "the message is %d bytes (body and attributes); the queue's maxMessageBytes is %d", 300, 256)},
		{&engine.StoredBytesExceeded{Limit: 1000}, quota},
		{&engine.DedupTaken{DedupID: "d1"},
			apierr.New(apierr.InvalidArgument, "the queue's deduplication window holds dedup id %q for another message", "d1")},
	} {
		want := *fromAPI(c.before)
		if want.Status >= 500 {
			t.Fatalf("%v: the answer before is a server error %+v", c.before, want)
		}
		for _, err := range []error{c.err, fmt.Errorf("send: %w", c.err)} {
			if got := *fromAPI(err); got != want {
				t.Errorf("%v: SQS answers %+v, before %+v", err, got, want)
			}
		}
	}
}
