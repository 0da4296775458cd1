package embeddedengine

import (
	"context"
	"time"

	"github.com/queueshq/queues/pkg/engine"
)

// Cancel returns valid deliveries without counting them (docs/delivery-options.md#cancel): the
// message is visible again now, as a release makes it, with one more cancel; the cancel beyond
// q.MaxCancels dead-letters it with engine.CancelReason instead. A delivery cancelled already
// answers success and changes nothing.
func (e *Engine) Cancel(ctx context.Context, q engine.Queue, ds []engine.Delivery) ([]error, error) {
	return e.cancel(ctx, q, ds, 0, false)
}

// CancelAfter returns valid deliveries without counting them, in flight until delay has
// passed (capped at engine.MaxInFlight from the receive); past q.MaxCancels a delivery is
// retried after delay, counted, as ChangeVisibility would (engine.Engine).
func (e *Engine) CancelAfter(ctx context.Context, q engine.Queue, ds []engine.Delivery, delay time.Duration) ([]error, error) {
	return e.cancel(ctx, q, ds, max(min(delay, engine.MaxVisibility), 0).Milliseconds(), true)
}

// cancel is Cancel and CancelAfter: keep retries the deliveries beyond maxCancels, counted,
// rather than dead-lettering them.
func (e *Engine) cancel(ctx context.Context, q engine.Queue, ds []engine.Delivery, delay int64, keep bool) ([]error, error) {
	return e.settle(ctx, q, len(ds), func(qi *queue, w *writes, i int, now int64) error {
		m := live(qi, q, ds[i], now)
		if m == nil {
			return engine.ErrStale
		}
		at := max(min(now+delay, m.receivedAt+engine.MaxInFlight.Milliseconds()), now)
		switch {
		case m.cut:
			return nil
		case int(m.cancels) >= q.MaxCancels && keep:
			m.at = at // counted: the delivery stays as it was received
			qi.place(m, now)
			w.putMsg(qi, m)
		case int(m.cancels) >= q.MaxCancels:
			e.deadLetterParking(w, qi, q, m, engine.CancelReason, now)
		default:
			m.cancels++
			m.cut = true
			m.at = at
			qi.place(m, now)
			w.putMsg(qi, m)
		}
		w.wake(qi.id)
		return nil
	})
}
