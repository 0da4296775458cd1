package client

import (
	"context"
	"errors"
	"sync/atomic"
	"time"
)

// receiveLoop receives for the consumer: over the receive stream while the service offers
// one (docs/streaming.md), reconnecting when a stream that worked ends, and by polling
// (ConsumeOptions.Pollers receives in flight) when the service or a proxy before it does not
// take the stream's upgrade, or ConsumeOptions.Polling asks for it.
func (co *consumer) receiveLoop(ctx context.Context, stop context.CancelFunc) {
	if co.o.Polling {
		co.pollers(ctx, stop)
		return
	}
	failures := 0
	binary := true
	for ctx.Err() == nil {
		s, err := co.c.Stream(ctx, co.queue, StreamOptions{VisibilityTimeoutSeconds: Int(int(co.vt / time.Second)), Filter: co.o.Filter,
			ConsumerID: co.o.ConsumerID, Binary: binary})
		if err != nil && binary && refusesBinary(err) {
			// A service that knows the parameter and not binary batches: JSON batches carry
			// the same fields. One older than the parameter ignores it and writes JSON text
			// frames, which the stream reads as well.
			binary = false
			continue
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			switch CodeOf(err) {
			case CodeUnauthenticated, CodePermissionDenied:
				co.setFatal(err)
				stop()
				return
			}
			if failures == 0 {
				// Never a stream here: polling answers every case (a missing queue included,
				// which it reports as the fatal error it is).
				co.pollers(ctx, stop)
				return
			}
			co.report("receive", "", err)
		} else if co.streamSession(ctx, s, stop) {
			failures = 0
		}
		failures++
		backoff := min(100*time.Millisecond<<min(failures, 6), 5*time.Second)
		if !sleepCtx(ctx, backoff) {
			return
		}
	}
}

// refusesBinary reports whether a stream's dial was refused for its encoding parameter.
func refusesBinary(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == CodeInvalidArgument && e.Field == "encoding"
}

func (co *consumer) setFatal(err error) {
	co.mu.Lock()
	if co.fatal == nil {
		co.fatal = err
	}
	co.mu.Unlock()
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// streamSession runs one stream until it ends: the room the handlers free is granted as
// credit, and what the service delivers is handed to the handlers. Credit granted and not
// used when the stream ends is room again. It reports whether anything was delivered.
func (co *consumer) streamSession(ctx context.Context, s *Stream, stop context.CancelFunc) bool {
	co.stream.Store(s)
	defer co.stream.CompareAndSwap(s, nil)
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var granted atomic.Int64
	creditDone := make(chan struct{})
	go func() {
		defer close(creditDone)
		for {
			n := co.take(sctx)
			if n == 0 {
				return
			}
			granted.Add(int64(n))
			// Not sctx: the websocket closes its connection when a write's context ends
			// mid-write, which at shutdown would cut off the answer to an ack in flight (the
			// ack then re-sent over HTTP is answered receipt_handle_stale). Close ends a
			// blocked write instead.
			if err := s.Credit(context.WithoutCancel(sctx), n); err != nil {
				cancel()
				return
			}
		}
	}()
	delivered := false
	for {
		msgs, err := s.Next(sctx)
		if err != nil {
			break
		}
		delivered = true
		granted.Add(-int64(len(msgs)))
		co.hold(msgs, time.Now())
	}
	cancel()
	<-creditDone
	_ = s.Close()
	// Batches that arrived before the close are held like the others (released at shutdown
	// if no handler takes them).
	for drained := false; !drained; {
		select {
		case msgs := <-s.msgs:
			granted.Add(-int64(len(msgs)))
			co.hold(msgs, time.Now())
		default:
			drained = true
		}
	}
	for range granted.Load() {
		co.room <- struct{}{}
	}
	switch err := s.Err(); CodeOf(err) {
	case CodeNotFound, CodeUnauthenticated, CodePermissionDenied, CodeInvalidArgument:
		co.setFatal(err)
		stop()
	}
	return delivered
}
