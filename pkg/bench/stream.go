package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	qclient "github.com/queueshq/queues/sdk/go/client"
)

// The consumers of -stream: one receive stream each (GET /v1/queues/{queue}/stream,
// docs/streaming.md) instead of receive requests. Each stream holds StreamWindow batches of
// credit; a batch is acknowledged over the stream as it arrives, and its credit is granted
// again once the acknowledgement is answered, so every delivered message is acknowledged and
// the service never holds more than the window for one consumer.

// streamConsumers runs n stream consumers until count distinct messages were delivered.
func (r *runner) streamConsumers(ctx context.Context, g *group, st *stats, queue string, n, count int, done func()) {
	for range n {
		g.go_(ctx, func(ctx context.Context) error {
			err := r.streamConsume(ctx, st, queue, count)
			if st.delivered.Load() >= int64(count) {
				done()
			}
			return err
		})
	}
}

func (r *runner) streamConsume(ctx context.Context, st *stats, queue string, count int) error {
	c, err := qclient.New(r.cfg.URL, qclient.WithToken(r.cfg.Token), qclient.WithHTTPClient(r.c.hc))
	if err != nil {
		return err
	}
	s, err := c.Stream(ctx, queue, qclient.StreamOptions{MaxMessages: r.cfg.Batch})
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("opening the receive stream: %w", err)
	}
	defer s.Close()
	var acks sync.WaitGroup
	defer acks.Wait() // before the close: every delivered message is acknowledged
	if err := s.Credit(ctx, r.cfg.StreamWindow*r.cfg.Batch); err != nil {
		return err
	}
	errc := make(chan error, 1)
	for ctx.Err() == nil && st.delivered.Load() < int64(count) {
		msgs, err := s.Next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		now := time.Now()
		handles := make([]string, len(msgs))
		for i, m := range msgs {
			if !st.deliver(m.Body, now) {
				return fmt.Errorf("received a message the generator did not send: %.40q", m.Body)
			}
			handles[i] = m.ReceiptHandle
		}
		acks.Go(func() {
			if err := r.streamAck(ctx, st, s, handles); err != nil {
				select {
				case errc <- err:
				default:
				}
			}
		})
		select {
		case err := <-errc:
			return err
		default:
		}
	}
	return nil
}

// streamAck acknowledges one batch over the stream and grants its credit again.
func (r *runner) streamAck(ctx context.Context, st *stats, s *qclient.Stream, handles []string) error {
	// The ack is not cut short with the phase: a delivered message is always acknowledged.
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	t0 := time.Now()
	res, err := s.Ack(actx, handles)
	st.request("ack", time.Since(t0))
	if err != nil {
		return fmt.Errorf("ack over the stream: %w", err)
	}
	for _, e := range res {
		if e != nil {
			return fmt.Errorf("ack failed: %w", e)
		}
	}
	st.acked.Add(int64(len(handles)))
	if ctx.Err() != nil {
		return nil
	}
	if err := s.Credit(ctx, len(handles)); err != nil && ctx.Err() == nil && !errors.Is(err, qclient.ErrStreamClosed) {
		return err
	}
	return nil
}
