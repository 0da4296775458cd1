package service

import (
	"context"
	"strings"
	"time"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
)

// What the operations (core.go) share with the /v1 routes that pkg/api still serves itself.

// lookupQueue resolves the {queue} path value of the caller's project (docs/api-tour.md): a UUID-shaped
// value is tried as an id and then as a name (a name may look like a UUID; one equal to another
// queue's id is then reached by its own id or slug), a que_ value is a slug, anything else a
// name. Another project's queue is NotFound, the same answer as a missing one.
func (s *Service) lookupQueue(ctx context.Context, project ids.ID, ref string) (meta.Queue, error) {
	switch {
	case ids.LooksLikeUUID(ref):
		id, _ := ids.ParseUUID(ref)
		q, err := s.cfg.Meta.GetQueue(ctx, project, id)
		if apierr.CodeOf(err) != apierr.NotFound {
			return q, err
		}
		return s.cfg.Meta.GetQueueByName(ctx, project, ref)
	case strings.HasPrefix(ref, ids.QueuePrefix):
		id, err := ids.ParseSlug(ids.QueuePrefix, ref)
		if err != nil {
			return meta.Queue{}, apierr.Invalid("queue", "malformed queue slug %q", ref)
		}
		return s.cfg.Meta.GetQueue(ctx, project, id)
	case !LooksLikeQueueName(ref):
		return meta.Queue{}, apierr.New(apierr.NotFound, "no queue %q", ref)
	default:
		return s.cfg.Meta.GetQueueByName(ctx, project, ref)
	}
}

// SetRedrive points q's redrive at the dead-letter queue dlqID (ref as the caller wrote it),
// which must be another queue of the same project and type.
func (s *Service) SetRedrive(ctx context.Context, q *meta.Queue, dlqID ids.ID, ref string, maxReceiveCount int) error {
	if dlqID == q.ID {
		return apierr.Invalid("redrive.deadLetterQueue", "a queue cannot be its own dead-letter queue")
	}
	dlq, gerr := s.cfg.Meta.GetQueue(ctx, q.ProjectID, dlqID)
	if apierr.CodeOf(gerr) == apierr.NotFound {
		return apierr.Field(apierr.NotFound, "redrive.deadLetterQueue", "no queue %s in this project", ref)
	} else if gerr != nil {
		return gerr
	}
	if dlq.Type != q.Type {
		return apierr.Invalid("redrive.deadLetterQueue", "the dead-letter queue must be of the same type (%s), it is %s", q.Type, dlq.Type)
	}
	q.Redrive = &meta.Redrive{DeadLetterQueue: dlqID, MaxReceiveCount: maxReceiveCount}
	return nil
}

func (s *Service) stats(ctx context.Context, q meta.Queue) (engine.Stats, error) {
	eq, err := s.engineQueue(ctx, q)
	if err != nil {
		return engine.Stats{}, err
	}
	return s.cfg.Engine.Stats(ctx, eq)
}

// deleteQueueSubscription removes a deleted queue's subscription. A failure is logged: the
// pusher fleet deletes subscriptions whose queue is gone.
func (s *Service) deleteQueueSubscription(ctx context.Context, q meta.Queue) {
	if s.cfg.Subscriptions == nil {
		return
	}
	err := s.cfg.Subscriptions.DeleteSubscription(ctx, q.ID)
	switch {
	case err == nil:
		s.PushChanged(ctx, q.ID)
	case apierr.CodeOf(err) != apierr.NotFound:
		s.cfg.Logger.Error("deleting a deleted queue's subscription", "queue", q.ID.String(), "err", err)
	}
}

// PushChanged tells the pusher fleet that a queue's subscription changed.
func (s *Service) PushChanged(ctx context.Context, queue ids.ID) {
	if s.cfg.PushChanged != nil {
		s.cfg.PushChanged(ctx, queue)
	}
}

// deleteQueueBindings deletes the bindings of a deleted queue.
func (s *Service) deleteQueueBindings(ctx context.Context, q meta.Queue) {
	if s.cfg.Topics == nil || s.cfg.TopicEngine == nil {
		return
	}
	bs, err := s.cfg.Topics.DeleteQueueBindings(ctx, q.ID)
	if err != nil {
		s.cfg.Logger.Error("deleting a deleted queue's bindings", "queue", q.ID.String(), "err", err)
		return
	}
	for _, b := range bs {
		s.Unbind(ctx, q.ProjectID, b)
	}
}

// Unbind removes a deleted binding's cursor and the mark it keeps with its queue. The stored
// binding is gone, so the fan-out no longer copies for it: a failure here leaves only
// unreachable state, logged.
func (s *Service) Unbind(ctx context.Context, project ids.ID, b meta.Binding) {
	t, err := s.cfg.Topics.GetTopic(ctx, project, b.TopicID)
	if apierr.CodeOf(err) == apierr.NotFound {
		return // the topic's delete frees its bindings
	}
	if err == nil {
		err = s.cfg.TopicEngine.Unbind(ctx, EngineTopic(t), b.ID, b.QueueID)
	}
	if err != nil {
		s.cfg.Logger.Error("unbinding a deleted binding", "binding", b.ID.String(), "err", err)
	}
}

// EngineTopic is what the engine needs of a topic (MaxStoredBytes only where a publish sets it).
func EngineTopic(t meta.Topic) engine.Topic {
	return engine.Topic{ID: t.ID, Project: t.ProjectID, Type: engine.Type(t.Type), Retention: time.Duration(t.RetentionSeconds) * time.Second}
}

// NeedConsumer refuses a receive of an exclusive queue that names no consumer.
func NeedConsumer(q meta.Queue, req engine.ReceiveRequest) error {
	if q.Type == string(engine.FIFO) && q.GroupPolicy == string(engine.GroupExclusive) && req.Consumer == nil && req.BindTo == "" {
		return ErrConsumerRequired
	}
	return nil
}

// HeldSettled tells the engine which consumers' deliveries were settled (errs[j] nil), and,
// with vis, until when each stays held (0: released). Settlements of deliveries without a
// consumer cost nothing here. A failure is logged: the settlement itself stands, and the
// holding lapses at its deadline anyway.
func (s *Service) HeldSettled(ctx context.Context, q engine.Queue, ds []engine.Delivery, errs []error, vis func(j int) time.Duration) {
	var cs []engine.HeldChange
	now := s.cfg.Clock.Now()
	for j, d := range ds {
		if d.Consumer == 0 || j >= len(errs) || errs[j] != nil {
			continue
		}
		c := engine.HeldChange{Delivery: d}
		if vis != nil && vis(j) > 0 {
			c.Until = now.Add(vis(j))
		}
		cs = append(cs, c)
	}
	if len(cs) == 0 {
		return
	}
	if err := s.cfg.Engine.Settled(ctx, q, cs); err != nil {
		s.cfg.Logger.Warn("recording consumers' settlements; their holdings lapse at the deadline",
			"queue", q.ID.String(), "err", err)
	}
}

// visDeliveries are the deliveries of visibility changes.
func visDeliveries(cs []engine.VisibilityChange) []engine.Delivery {
	ds := make([]engine.Delivery, len(cs))
	for i, c := range cs {
		ds[i] = c.Delivery
	}
	return ds
}

// CountMessages counts the messages of a settle call that succeeded (errs[j] nil) under op
// in queues_messages_total.
func (s *Service) CountMessages(op string, errs []error, err error) {
	if err != nil {
		return
	}
	n := 0
	for _, e := range errs {
		if e == nil {
			n++
		}
	}
	s.cfg.Messages.WithLabelValues(op).Add(float64(n))
}
