package fanout

import (
	"fmt"
	"testing"

	"github.com/queueshq/queues/pkg/engine"
)

// TestReasonWording: a binding records, byte for byte, the text it recorded when the engines
// built these refusals with package apierr (bindings read back over /v1 show it).
func TestReasonWording(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		err  error
		want string
	}{
		{&engine.TooLarge{Bytes: 2048, Limit: 1024}, "the message is 2048 bytes (body and attributes); the queue's maxMessageBytes is 1024"},
		{&engine.StoredBytesExceeded{Limit: 150}, "the send would take the project's stored bytes past its limit of 150 bytes (maxStoredBytes); consume or purge messages first"},
		{&engine.DedupTaken{DedupID: "taken"}, `the queue's deduplication window holds dedup id "taken" for another message`},
	} {
		for _, err := range []error{c.err, fmt.Errorf("copy: %w", c.err)} {
			if got := reason(err); got != c.want {
				t.Errorf("%v: recorded %q, want %q", err, got, c.want)
			}
		}
	}
}
