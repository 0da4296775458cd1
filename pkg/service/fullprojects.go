package service

import (
	"context"
	"errors"
	"sync"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
)

// fullProjects remembers the projects this replica last saw refused for maxStoredBytes. A send
// to one of them first reads the project's exact stored bytes: while they are at the limit
// (not merely near it), every send fails (a message's body is never empty), so the send is
// refused before its body is decoded. A tenant sending 256 KiB payloads at its rate limit past its quota otherwise
// costs the replica a full decode of each refused body, CPU its neighbours wait for
// (docs/measurements/tenancy-neighbours.md). Projects not marked pay one map lookup.
type fullProjects struct{ m sync.Map } // ids.ID → struct{}

func (f *fullProjects) mark(project ids.ID) { f.m.Store(project, struct{}{}) }

// refuseWhileFull answers 403 quota_exceeded (maxStoredBytes), the engines' answer to a send
// past the limit, when q's project is marked full and still is; nil means decode and send as
// usual. The queue's send rate applies first, as it does to every send.
func (s *Admission) refuseWhileFull(ctx context.Context, q meta.Queue) error {
	if _, ok := s.full.m.Load(q.ProjectID); !ok {
		return nil
	}
	lim, err := s.EffectiveLimits(ctx, q.ProjectID)
	if err != nil {
		return err
	}
	max := lim.MaxStoredBytes
	stored, err := s.cfg.Engine.StoredBytes(ctx, q.ProjectID)
	if err != nil || max <= 0 || stored < max {
		s.full.m.Delete(q.ProjectID)
		return nil //nolint:nilerr // an unreadable count admits the send: the engine's own check refuses past the limit
	}
	if err := s.QueueRate(ctx, q, "send"); err != nil {
		return err
	}
	return storedBytesAnswer(max)
}

// noteSendErr marks q's project full when err is a maxStoredBytes refusal.
func (s *Admission) noteSendErr(q meta.Queue, err error) {
	if errors.Is(err, engine.ErrStoredBytesExceeded) {
		s.full.mark(q.ProjectID)
	}
}
