package service

import (
	"context"
	"time"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/meta"
)

// goneCheck is how often a waiting receive checks whether its queue was deleted.
const goneCheck = 200 * time.Millisecond

// repoll bounds how long a waiting receive goes without looking at its queue.
const repoll = 2 * time.Second

// LongPoll receives, and while nothing is available waits up to wait for a wake-up from any
// replica (a send, a release), for the time the next delayed or in-flight message becomes
// visible, or for the server to drain. A queue deleted meanwhile answers 404.
func (s *Service) LongPoll(ctx context.Context, q meta.Queue, req engine.ReceiveRequest, wait time.Duration) ([]engine.Received, error) {
	var wake <-chan struct{}
	var gone <-chan time.Time
	deadline := time.Now().Add(wait)
	for {
		sctx, cancel := context.WithTimeout(ctx, s.cfg.StorageTimeout)
		eq, err := s.engineQueue(sctx, q)
		var res engine.ReceiveResult
		if err == nil {
			res, err = s.cfg.Engine.Receive(sctx, eq, req)
		}
		cancel()
		if err != nil {
			return nil, err
		}
		left := time.Until(deadline)
		if len(res.Messages) > 0 || left <= 0 {
			return res.Messages, nil
		}
		if wake == nil && FairnessOf(q) != FairnessFast {
			return s.fairPoll(ctx, q, req, deadline, wait) // fairness.go
		}
		if wake == nil {
			// A receive that would park takes one of the project's waiting slots; with all
			// of them taken it answers at once, empty (maxWaitingReceives).
			release, ok := s.Park(ctx, q.ProjectID, wait)
			defer release()
			if !ok {
				return nil, nil
			}
			// Only a receive that found nothing watches (most find messages at once), and it
			// looks once more after it started watching, so a send in between is not missed.
			// A filtered one is woken only by sends that may hold a message it selects, so a
			// storm of others costs it nothing (docs/delivery-options.md#consumers-backlogs-and-fairness).
			ch, stop := s.cfg.Engine.WatchFilter(q.ID, req.Filter)
			defer stop()
			wake = ch
			tick := time.NewTicker(goneCheck)
			defer tick.Stop()
			gone = tick.C
			continue
		}
		if !res.NextVisibleAt.IsZero() {
			if until := res.NextVisibleAt.Sub(s.cfg.Clock.Now()); until < left {
				left = max(until, time.Millisecond)
			}
		}
		// Wake-ups travel over pub/sub, which drops messages while a subscription reconnects:
		// look again now and then, so a lost wake-up costs at most this long.
		left = min(left, repoll)
		timer := time.NewTimer(left)
	wait:
		for {
			select {
			case <-wake:
				break wait
			case <-timer.C:
				break wait
			case <-gone:
				if s.cfg.Meta.Gone(q.ID) {
					timer.Stop()
					return nil, apierr.New(apierr.NotFound, "the queue was deleted")
				}
			case <-s.cfg.Draining:
				timer.Stop()
				return nil, nil
			case <-ctx.Done():
				timer.Stop()
				return nil, ctx.Err()
			}
		}
		timer.Stop()
	}
}

// engineQueue turns stored settings into what the engine needs, with the dead-letter queue's.
func (s *Service) engineQueue(ctx context.Context, q meta.Queue) (engine.Queue, error) {
	return meta.EngineQueue(ctx, s.cfg.Meta, q)
}
