package redisengine

import (
	"context"
	"errors"
	"time"

	"github.com/queueshq/queues/pkg/engine"
)

// Cancel returns valid deliveries without counting them (docs/delivery-options.md#cancel;
// scripts/cancel.lua): the message is visible again now with one more cancel recorded in its state,
// or, past q.MaxCancels, leaves for the dead-letter queue through the outbox like DeadLetter.
func (e *Engine) Cancel(ctx context.Context, q engine.Queue, ds []engine.Delivery) ([]error, error) {
	return e.cancel(ctx, q, ds, 0, false)
}

// CancelAfter returns valid deliveries without counting them, in flight until delay has
// passed; past q.MaxCancels a delivery is retried after delay, counted (engine.Engine).
func (e *Engine) CancelAfter(ctx context.Context, q engine.Queue, ds []engine.Delivery, delay time.Duration) ([]error, error) {
	return e.cancel(ctx, q, ds, max(min(delay, engine.MaxVisibility), 0), true)
}

// cancel is Cancel and CancelAfter: keep leaves the deliveries beyond maxCancels to
// retryOver rather than the dead-letter queue.
func (e *Engine) cancel(ctx context.Context, q engine.Queue, ds []engine.Delivery, delay time.Duration, keep bool) ([]error, error) {
	if err := e.clockOK(); err != nil {
		return nil, err
	}
	if q.Type == engine.FIFO {
		return e.fifoCancel(ctx, q, ds, delay, keep)
	}
	now := e.nowMs()
	redrive := "0"
	if q.Redrive != nil && q.Redrive.DeadLetter != nil {
		redrive = "1"
	}
	over := "dl"
	if keep {
		over = "keep"
	}
	errs, err := e.settleBatch(ctx, q, "cancel", ds, nil,
		func(k partKeys, idx []int) scriptCall {
			args := []any{now, q.MaxCancels, redrive, engine.CancelReason, e.opts.Channel, q.ID.String(),
				delay.Milliseconds(), engine.MaxInFlight.Milliseconds(), over}
			for _, j := range idx {
				args = append(args, string(ds[j].MessageID[:]), ds[j].Attempt)
			}
			return scriptCall{cancelScript, e.withBytes(q, k, k.Scheduled, k.InFlight, k.Messages, k.LegacyStates, k.Expiry, k.DeadLetterOutbox), args}
		},
		func(p int, idx []int, val any, errs []error) error {
			return e.cancelled(ctx, q, p, idx, val, errs, redrive == "1")
		})
	if err != nil {
		return nil, err
	}
	return e.retryOver(ctx, q, ds, errs, delay)
}

// retryOver retries after delay, counted, the deliveries CancelAfter found beyond
// maxCancels (marked errOverCancels in errs), their answers in errs.
func (e *Engine) retryOver(ctx context.Context, q engine.Queue, ds []engine.Delivery, errs []error, delay time.Duration) ([]error, error) {
	var over []int
	for i, err := range errs {
		if err == errOverCancels {
			over = append(over, i)
		}
	}
	if len(over) == 0 {
		return errs, nil
	}
	cs := make([]engine.VisibilityChange, len(over))
	for n, i := range over {
		cs[n] = engine.VisibilityChange{Delivery: ds[i], Visibility: delay}
	}
	cerrs, err := e.ChangeVisibility(ctx, q, cs)
	for n, i := range over {
		switch {
		case err != nil:
			errs[i] = err
		case errors.Is(cerrs[n], engine.ErrVisibilityLimit):
			// The delay passes the message's time in flight: it returns as late as it may.
			errs[i] = nil
			_, _ = e.ChangeVisibility(ctx, q, []engine.VisibilityChange{{Delivery: ds[i]}})
		default:
			errs[i] = cerrs[n]
		}
	}
	return errs, nil
}

// cancelled reads cancel.lua's answer for partition p and finishes its dead-letter moves.
func (e *Engine) cancelled(ctx context.Context, q engine.Queue, p int, idx []int, val any, errs []error, redrive bool) error {
	vals, _ := val.([]any)
	if len(vals) != 2 {
		return errBadReply
	}
	if err := codes(vals[0], idx, errs, overCode); err != nil {
		return err
	}
	if !redrive {
		e.fold(ctx, q.Project, []partKeys{keysOf(q.ID, p)})
	}
	if moved, _ := vals[1].([]any); len(moved) > 0 {
		e.finishMoves(ctx, q, p, outboxPairs(moved))
	}
	return nil
}

// fifoCancel is Cancel on a fifo queue (scripts/fifo_cancel.lua); the deliveries it finds beyond
// q.MaxCancels, left unchanged, are dead-lettered next with CancelReason, or with keep
// retried after delay, counted.
func (e *Engine) fifoCancel(ctx context.Context, q engine.Queue, ds []engine.Delivery, delay time.Duration, keep bool) ([]error, error) {
	now := e.nowMs()
	var over []int
	errs, err := e.settleBatch(ctx, q, "cancel", ds, nil,
		func(k partKeys, idx []int) scriptCall {
			args := []any{now, q.MaxCancels, e.opts.Channel, q.ID.String(), delay.Milliseconds(), engine.MaxInFlight.Milliseconds()}
			for _, j := range idx {
				args = append(args, string(ds[j].MessageID[:]), ds[j].Attempt)
			}
			return scriptCall{fifoCancelScript, k.fifo(), args}
		},
		func(_ int, idx []int, val any, errs []error) error {
			return codes(val, idx, errs, overCode)
		})
	if err != nil {
		return nil, err
	}
	if keep {
		return e.retryOver(ctx, q, ds, errs, delay)
	}
	for i, err := range errs {
		if err == errOverCancels {
			over = append(over, i)
		}
	}
	return e.cancelOver(ctx, q, ds, errs, over)
}

// overCode reads a cancel script's code 3: the delivery is beyond maxCancels, unchanged.
func overCode(c int64) error {
	if c == 3 {
		return errOverCancels
	}
	return errBadReply
}

// errOverCancels marks, inside fifoCancel, a delivery whose cancel is beyond maxCancels.
var errOverCancels = errors.New("beyond maxCancels")

// cancelOver dead-letters the deliveries ds[over] with CancelReason, their answers in errs.
func (e *Engine) cancelOver(ctx context.Context, q engine.Queue, ds []engine.Delivery, errs []error, over []int) ([]error, error) {
	if len(over) == 0 {
		return errs, nil
	}
	rs := make([]engine.DeadLetterRequest, len(over))
	for n, i := range over {
		rs[n] = engine.DeadLetterRequest{Delivery: ds[i], Reason: engine.CancelReason}
	}
	derrs, err := e.DeadLetter(ctx, q, rs)
	for n, i := range over {
		if err != nil {
			errs[i] = err
		} else {
			errs[i] = derrs[n]
		}
	}
	return errs, nil
}
