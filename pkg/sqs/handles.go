package sqs

import (
	"context"

	"github.com/queueshq/queues/pkg/engine"
)

// An older receipt handle on the SQS door (see docs/sqs.md, "Older receipt handles").
//
// SQS keeps every receipt handle of a message usable for ChangeMessageVisibility while the
// message exists: a handle from an earlier receive changes the visibility of the message as
// it is now (localstack, whose tests are validated against AWS, keeps all of a message's
// handles until it is deleted, and suites verified against AWS rely on it). DeleteMessage
// with an older handle succeeds without deleting (AWS's DeleteMessage reference), which the
// engine's stale answer already gives. /v1 keeps its rule (docs/api-tour.md): a handle is stale
// once the message is received again.
//
// The engine knows a handle by its delivery's attempt number, which every later receive of
// the message raises by one; so a stale change is tried again, in one more storage call, on
// the next laterDeliveries attempts of the same message, of which at most one is current.

// laterDeliveries bounds how many later receives of a message an older handle reaches.
const laterDeliveries = 8

// onCurrentDelivery retries the stale entries of a visibility change (errs[i] stale for
// cs[i]) on their messages' later deliveries, and replaces errs[i] with that outcome when one
// of them is the message's current delivery. A failure of the retry leaves errs as they were.
func (d *Door) onCurrentDelivery(ctx context.Context, cs []engine.VisibilityChange, errs []error) {
	var probes []engine.VisibilityChange
	var owner []int
	for i, err := range errs {
		if !isStale(err) {
			continue
		}
		for k := uint32(1); k <= laterDeliveries && cs[i].Delivery.Attempt+k > cs[i].Delivery.Attempt; k++ {
			p := cs[i]
			p.Delivery.Attempt += k
			probes, owner = append(probes, p), append(owner, i)
		}
	}
	if len(probes) == 0 {
		return
	}
	perrs, err := d.cfg.Backend.ChangeVisibility(ctx, probes)
	if err != nil {
		return
	}
	found := map[int]bool{}
	for j, perr := range perrs {
		i := owner[j]
		switch {
		case found[i]:
		case perr == nil:
			errs[i], found[i] = nil, true
		case !isStale(perr):
			// The current delivery refused the change itself (past the 12 hours, say).
			errs[i], found[i] = perr, true
		}
	}
}
