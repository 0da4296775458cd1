// Package sweeper runs the engine's background work (retention expiry, interrupted
// dead-letter moves) over every queue, on a timer. Every replica may run it: the engine's Sweep
// is safe to run concurrently, so no replica is special.
package sweeper

import (
	"context"
	"log/slog"
	"time"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
)

// Run sweeps every interval until ctx ends.
func Run(ctx context.Context, store meta.Store, eng engine.Engine, every time.Duration, log *slog.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if err := Once(ctx, store, eng); err != nil && ctx.Err() == nil {
			log.Warn("sweep failed; retrying next round", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Once sweeps every queue of every project once.
func Once(ctx context.Context, store meta.Store, eng engine.Engine) error {
	all, err := allQueues(ctx, store)
	if err != nil {
		return err
	}
	byID := make(map[ids.ID]meta.Queue, len(all))
	for _, q := range all {
		byID[q.ID] = q
	}
	qs := make([]engine.Queue, 0, len(all))
	for _, q := range all {
		var dlq *meta.Queue
		if q.Redrive != nil {
			if d, ok := byID[q.Redrive.DeadLetterQueue]; ok {
				dlq = &d
			}
		}
		qs = append(qs, q.Engine(dlq))
	}
	for len(qs) > 0 {
		n := min(len(qs), 100)
		if err := eng.Sweep(ctx, qs[:n]); err != nil {
			return err
		}
		qs = qs[n:]
	}
	return nil
}

func allQueues(ctx context.Context, store meta.Store) ([]meta.Queue, error) {
	var out []meta.Queue
	cursor := ""
	for {
		ps, next, err := store.ListProjects(ctx, meta.Page{Limit: 1000, Cursor: cursor})
		if err != nil {
			return nil, err
		}
		for _, p := range ps {
			qc := ""
			for {
				qs, qn, err := store.ListQueues(ctx, p.ID, "", meta.Page{Limit: 1000, Cursor: qc})
				if err != nil {
					return nil, err
				}
				out = append(out, qs...)
				if qn == "" {
					break
				}
				qc = qn
			}
		}
		if next == "" {
			return out, nil
		}
		cursor = next
	}
}
