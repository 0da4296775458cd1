package service

import (
	"context"
	"errors"
	"time"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/auth"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/receipt"
)

// The operations behind both doors: each does what the /v1 route (pkg/api) and the SQS
// action (pkg/sqs) do after decoding their request, so both doors share one behaviour.

// NewQueue is a queue of the project with the default settings, created now.
func (s *Service) NewQueue(project ids.ID, name, typ string) meta.Queue {
	now := s.cfg.Clock.Now().UTC().Truncate(time.Millisecond)
	return meta.Queue{
		ID: ids.New(), ProjectID: project, Name: name, Type: typ,
		CreatedAt: now, UpdatedAt: now,
		VisibilityTimeoutSeconds: DefaultVisibilitySeconds, RetentionSeconds: DefaultRetentionSeconds,
	}
}

// CreateQueue stores a new queue (validated): engine storage first, so a queue visible in
// metadata always has its storage ready. A taken name is QueueExists (field "name").
func (s *Service) CreateQueue(ctx context.Context, q meta.Queue) error {
	if err := s.QueueQuotaFull(ctx, q.ProjectID); err != nil {
		return err
	}
	eq, err := s.engineQueue(ctx, q)
	if err != nil {
		return err
	}
	if err := s.cfg.Engine.CreateQueue(ctx, eq); err != nil {
		return err
	}
	if err := s.CreateQueueWithin(ctx, q); err != nil {
		switch apierr.CodeOf(err) {
		case apierr.QueueExists:
			return apierr.Field(apierr.QueueExists, "name", "a queue named %q already exists in this project", q.Name)
		case apierr.QuotaExceeded:
			// Nothing refers to the storage made for it.
			if derr := s.cfg.Engine.DeleteQueue(ctx, q.ID); derr != nil {
				s.cfg.Logger.Warn("freeing a refused queue's storage", "queue", q.ID.String(), "err", derr)
			}
		}
		return err
	}
	return nil
}

// UpdateQueue applies change to the queue's stored settings and stores them, re-reading and
// re-applying when another writer got there first.
func (s *Service) UpdateQueue(ctx context.Context, q meta.Queue, change func(*meta.Queue) error) (meta.Queue, error) {
	for attempt := 0; ; attempt++ {
		cur, err := s.cfg.Meta.GetQueue(ctx, q.ProjectID, q.ID)
		if err != nil {
			return cur, err
		}
		if err := change(&cur); err != nil {
			return cur, err
		}
		cur.UpdatedAt = s.cfg.Clock.Now().UTC().Truncate(time.Millisecond)
		out, err := s.cfg.Meta.UpdateQueue(ctx, cur)
		if errors.Is(err, meta.ErrVersionConflict) && attempt < 5 {
			continue
		}
		return out, err
	}
}

// DeleteQueue deletes a queue, its subscription and its messages. A queue named as another's
// dead-letter queue is QueueInUse.
func (s *Service) DeleteQueue(ctx context.Context, q meta.Queue) error {
	if _, err := s.cfg.Meta.DeleteQueue(ctx, q.ProjectID, q.ID); err != nil {
		if apierr.CodeOf(err) == apierr.QueueInUse {
			return apierr.New(apierr.QueueInUse, "queue %q is another queue's dead-letter queue; remove that redrive policy first", q.Name)
		}
		return err
	}
	s.deleteQueueSubscription(ctx, q)
	s.deleteQueueBindings(ctx, q) // bindings.go
	// The queue is gone for every caller now; its messages are unreachable (new queues get new
	// ids) and are freed here. A failure leaves only unreachable data behind, so it is logged
	// rather than reported as a failed delete.
	if err := s.cfg.Engine.DeleteQueue(ctx, q.ID); err != nil {
		s.cfg.Logger.Error("deleting a deleted queue's messages", "queue", q.ID.String(), "err", err)
	}
	return nil
}

// LookupQueue resolves a queue reference (id, slug or name) within a project.
func (s *Service) LookupQueue(ctx context.Context, project ids.ID, ref string) (meta.Queue, error) {
	return s.lookupQueue(ctx, project, ref)
}

// QueueByName finds a project's queue by its name only (the SQS door's QueueUrl and ARNs name
// a queue so, even when the name looks like another queue's id). Not a queue name: NotFound,
// without a storage call.
func (s *Service) QueueByName(ctx context.Context, project ids.ID, name string) (meta.Queue, error) {
	if !LooksLikeQueueName(name) {
		return meta.Queue{}, apierr.New(apierr.NotFound, "no queue %q", name)
	}
	return s.cfg.Meta.GetQueueByName(ctx, project, name)
}

// ListQueues lists a project's queues by name prefix.
func (s *Service) ListQueues(ctx context.Context, project ids.ID, prefix string, page meta.Page) ([]meta.Queue, string, error) {
	return s.cfg.Meta.ListQueues(ctx, project, prefix, page)
}

// QueueByID reads a queue by id alone.
func (s *Service) QueueByID(ctx context.Context, id ids.ID) (meta.Queue, error) {
	return s.cfg.Meta.GetQueueByID(ctx, id)
}

// ApplyRedrive sets or (with a nil dead-letter queue) clears q's redrive policy, with the
// /v1 checks: another queue of the same project and type; maxReceiveCount is the caller's to
// check.
func (s *Service) ApplyRedrive(ctx context.Context, q *meta.Queue, dlq *ids.ID, maxReceiveCount int) error {
	if dlq == nil {
		q.Redrive = nil
		return nil
	}
	return s.SetRedrive(ctx, q, *dlq, dlq.String(), maxReceiveCount)
}

// Stats are a queue's counts.
func (s *Service) Stats(ctx context.Context, q meta.Queue) (engine.Stats, error) {
	return s.stats(ctx, q)
}

// Purge removes every message sent before now.
func (s *Service) Purge(ctx context.Context, q meta.Queue) error {
	eq, err := s.engineQueue(ctx, q)
	if err != nil {
		return err
	}
	return s.cfg.Engine.Purge(ctx, eq)
}

// Send stores validated messages under the queue's send rate limit.
func (s *Service) Send(ctx context.Context, q meta.Queue, msgs []engine.Message) ([]engine.SendResult, error) {
	if err := s.QueueRate(ctx, q, "send"); err != nil {
		return nil, err
	}
	eq, err := s.engineQueue(ctx, q)
	if err != nil {
		return nil, err
	}
	lim, err := s.EffectiveLimits(ctx, q.ProjectID)
	if err != nil {
		return nil, err
	}
	eq.MaxStoredBytes = lim.MaxStoredBytes
	res, err := s.cfg.Engine.Send(ctx, eq, msgs)
	if err != nil {
		return nil, err
	}
	stored := 0
	for _, r := range res {
		if r.Err == nil {
			stored++
			if r.Duplicate {
				s.cfg.Messages.WithLabelValues("duplicate").Inc()
			}
		}
	}
	s.cfg.Messages.WithLabelValues("sent").Add(float64(stored))
	return res, nil
}

// Receive claims messages under the queue's receive rate limit, waiting up to wait for some
// (a long poll; ctx bounds it).
func (s *Service) Receive(ctx context.Context, q meta.Queue, req engine.ReceiveRequest, wait time.Duration) ([]engine.Received, error) {
	if err := NeedConsumer(q, req); err != nil { // grouppolicy.go
		return nil, err
	}
	lctx, cancel := context.WithTimeout(ctx, s.cfg.StorageTimeout)
	err := s.QueueRate(lctx, q, "receive")
	cancel()
	if err != nil {
		return nil, err
	}
	msgs, err := s.LongPoll(ctx, q, req, wait)
	if err == nil {
		s.cfg.Messages.WithLabelValues("received").Add(float64(len(msgs)))
	}
	return msgs, err
}

// Receipts is the receipt handle signer (handles of either door settle through either).
func (s *Service) Receipts() *receipt.Signer { return s.cfg.Receipts }

// Ack deletes deliveries, which may belong to several queues: one error per delivery (a
// deleted queue's are stale), or an error of the whole call.
func (s *Service) Ack(ctx context.Context, ds []engine.Delivery) ([]error, error) {
	return s.ByQueue(ctx, ds, func(ctx context.Context, q engine.Queue, idx []int) ([]error, error) {
		sub := make([]engine.Delivery, len(idx))
		for j, i := range idx {
			sub[j] = ds[i]
		}
		errs, err := s.cfg.Engine.Ack(ctx, q, sub)
		s.HeldSettled(ctx, q, sub, errs, nil)
		s.CountMessages("acked", errs, err)
		s.MeterAcked(q.Project, errs, err)
		return errs, err
	})
}

// Cancel returns deliveries without counting them (docs/delivery-options.md#cancel), as Ack does.
func (s *Service) Cancel(ctx context.Context, ds []engine.Delivery) ([]error, error) {
	return s.ByQueue(ctx, ds, func(ctx context.Context, q engine.Queue, idx []int) ([]error, error) {
		sub := make([]engine.Delivery, len(idx))
		for j, i := range idx {
			sub[j] = ds[i]
		}
		errs, err := s.cfg.Engine.Cancel(ctx, q, sub)
		s.HeldSettled(ctx, q, sub, errs, nil)
		s.CountMessages("cancelled", errs, err)
		return errs, err
	})
}

// ChangeVisibility changes deliveries' visibility, as Ack does.
func (s *Service) ChangeVisibility(ctx context.Context, cs []engine.VisibilityChange) ([]error, error) {
	ds := make([]engine.Delivery, len(cs))
	for i, c := range cs {
		ds[i] = c.Delivery
	}
	return s.ByQueue(ctx, ds, func(ctx context.Context, q engine.Queue, idx []int) ([]error, error) {
		sub := make([]engine.VisibilityChange, len(idx))
		for j, i := range idx {
			sub[j] = cs[i]
		}
		errs, err := s.cfg.Engine.ChangeVisibility(ctx, q, sub)
		s.HeldSettled(ctx, q, visDeliveries(sub), errs, func(j int) time.Duration { return sub[j].Visibility })
		return errs, err
	})
}

// ByQueue runs op once per queue named by ds, with the indexes of that queue's deliveries,
// and gathers one error per delivery in ds's order.
func (s *Service) ByQueue(ctx context.Context, ds []engine.Delivery, op func(ctx context.Context, q engine.Queue, idx []int) ([]error, error)) ([]error, error) {
	groups := map[ids.ID][]int{}
	var order []ids.ID
	for i, d := range ds {
		if _, seen := groups[d.Queue]; !seen {
			order = append(order, d.Queue)
		}
		groups[d.Queue] = append(groups[d.Queue], i)
	}
	out := make([]error, len(ds))
	for _, qid := range order {
		idx := groups[qid]
		mq, err := s.cfg.Meta.GetQueueByID(ctx, qid)
		if apierr.CodeOf(err) == apierr.NotFound {
			// A deleted queue's handles are stale.
			for _, i := range idx {
				out[i] = apierr.ErrStale
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		q, err := s.engineQueue(ctx, mq)
		if err != nil {
			return nil, err
		}
		errs, err := op(ctx, q, idx)
		if err != nil {
			return nil, err
		}
		for j, i := range idx {
			out[i] = errs[j]
		}
	}
	return out, nil
}

// TokenPrincipal checks a project token's record (revocation, expiry) as bearer
// authentication does, and answers the principal it stands for.
func (s *Service) TokenPrincipal(ctx context.Context, project, token ids.ID) (auth.Principal, error) {
	t, err := s.cfg.Meta.GetToken(ctx, project, token)
	switch {
	case apierr.CodeOf(err) == apierr.NotFound:
		return auth.Principal{}, apierr.New(apierr.Unauthenticated, "unknown token")
	case err != nil:
		return auth.Principal{}, err
	case t.RevokedAt != nil:
		return auth.Principal{}, apierr.New(apierr.Unauthenticated, "the token was revoked")
	case t.ExpiresAt != nil && !s.cfg.Clock.Now().Before(*t.ExpiresAt):
		return auth.Principal{}, apierr.New(apierr.Unauthenticated, "the token expired")
	}
	return auth.Principal{ProjectID: project, TokenID: token, Scopes: t.Scopes}, nil
}

// TokenProject answers a token's project from its id alone.
func (s *Service) TokenProject(ctx context.Context, token ids.ID) (ids.ID, error) {
	return s.cfg.Meta.TokenProject(ctx, token)
}
