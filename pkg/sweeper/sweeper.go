// Package sweeper runs the engine's background work (retention expiry, interrupted
// dead-letter moves) on a timer. Every replica may run it: the engine's Sweep is safe to run
// concurrently, so no replica is special.
//
// A round sweeps the queues the engine lists as active (engine.Engine.ActiveQueues: those that
// may hold messages), so its cost follows the queues with work, not every queue of every
// project. The first round of a process, and one an hour after, sweep every queue the metadata
// store lists, which covers queues whose messages predate the engine's active list.
package sweeper

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
)

// FullEvery is how often a process sweeps every queue rather than the active ones.
const FullEvery = time.Hour

// DefaultEvery is the sweep period of a process that names none (api and serve alike).
const DefaultEvery = 10 * time.Second

// Run sweeps every interval (0: DefaultEvery) until ctx ends: every queue first and each
// FullEvery, else the active ones.
func Run(ctx context.Context, store meta.Store, eng engine.Engine, every time.Duration, log *slog.Logger) {
	if every == 0 {
		every = DefaultEvery
	}
	t := time.NewTicker(every)
	defer t.Stop()
	var lastFull time.Time
	for {
		var err error
		if lastFull.IsZero() || time.Since(lastFull) >= FullEvery {
			if err = Full(ctx, store, eng); err == nil {
				lastFull = time.Now()
			}
		} else {
			err = Once(ctx, store, eng)
		}
		if err != nil && ctx.Err() == nil {
			log.Warn("sweep failed; retrying next round", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Once sweeps the engine's active queues once. One the metadata store no longer has (deleted,
// its data left behind) is deleted from the engine.
func Once(ctx context.Context, store meta.Store, eng engine.Engine) error {
	active, err := eng.ActiveQueues(ctx)
	if err != nil {
		return err
	}
	var qs []engine.Queue
	var errs []error
	for _, id := range active {
		q, err := store.GetQueueByID(ctx, id)
		if errors.Is(err, meta.ErrNotFound) {
			errs = append(errs, eng.DeleteQueue(ctx, id))
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		eq, err := meta.EngineQueue(ctx, store, q)
		if err != nil { // the next round sweeps it
			errs = append(errs, err)
			continue
		}
		qs = append(qs, eq)
	}
	return errors.Join(append(errs, sweep(ctx, eng, qs))...)
}

// Full sweeps every queue of every project once.
func Full(ctx context.Context, store meta.Store, eng engine.Engine) error {
	all, err := allQueues(ctx, store)
	if err != nil {
		return err
	}
	byID := make(queueMap, len(all))
	for _, q := range all {
		byID[q.ID] = q
	}
	qs := make([]engine.Queue, 0, len(all))
	for _, q := range all {
		eq, _ := meta.EngineQueue(ctx, byID, q) // a map answers found or not found only
		qs = append(qs, eq)
	}
	return sweep(ctx, eng, qs)
}

// queueMap is every queue by id, read once, for EngineQueue.
type queueMap map[ids.ID]meta.Queue

func (m queueMap) GetQueueByID(_ context.Context, id ids.ID) (meta.Queue, error) {
	q, ok := m[id]
	if !ok {
		return meta.Queue{}, meta.NotFound(meta.KindQueue, id)
	}
	return q, nil
}

// sweep runs the engine's Sweep over qs, 100 at a time.
func sweep(ctx context.Context, eng engine.Engine, qs []engine.Queue) error {
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
