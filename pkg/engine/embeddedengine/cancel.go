package embeddedengine

import (
	"context"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/engine"
)

// Cancel returns valid deliveries without counting them (SPEC §12): the message is visible
// again now, as a release makes it, with one more cancel; the cancel beyond q.MaxCancels
// dead-letters it with engine.CancelReason instead. A delivery cancelled already answers
// success and changes nothing.
func (e *Engine) Cancel(ctx context.Context, q engine.Queue, ds []engine.Delivery) ([]error, error) {
	return e.settle(ctx, q, len(ds), func(qi *queue, w *writes, i int, now int64) error {
		m := live(qi, q, ds[i], now)
		switch {
		case m == nil:
			return apierr.ErrStale
		case m.cut:
			return nil
		case int(m.cancels) >= q.MaxCancels:
			e.deadLetterParking(w, qi, q, m, engine.CancelReason, now)
		default:
			m.cancels++
			m.cut = true
			m.at = now
			qi.place(m, now)
			w.putMsg(qi, m)
		}
		w.wake(qi.id)
		return nil
	})
}
