package memmeta

import (
	"cmp"
	"context"
	"slices"

	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/meta/internal/pagecursor"
)

var _ meta.SubscriptionStore = (*Store)(nil)

func cloneSub(s meta.Subscription) meta.Subscription {
	s.CreatedAt, s.UpdatedAt = s.CreatedAt.UTC(), s.UpdatedAt.UTC()
	if !s.DisabledAt.IsZero() {
		s.DisabledAt = s.DisabledAt.UTC()
	}
	if !s.PreviousExpiresAt.IsZero() {
		s.PreviousExpiresAt = s.PreviousExpiresAt.UTC()
	}
	return s
}

func subNotFound(q ids.ID) error {
	return meta.NotFound(meta.KindSubscription, q)
}

// CreateSubscription stores a queue's subscription with Version 1.
func (s *Store) CreateSubscription(ctx context.Context, sub meta.Subscription) error {
	return s.CreateSubscriptionWithin(ctx, sub, 0)
}

// CreateSubscriptionWithin is CreateSubscription with the project's maxSubscriptions quota
// (<= 0: none).
func (s *Store) CreateSubscriptionWithin(_ context.Context, sub meta.Subscription, maxSubs int64) error {
	if sub.ID.IsZero() || sub.QueueID.IsZero() {
		return meta.ZeroID("subscription or queue")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.queues[sub.QueueID]
	if !ok || r.q.ProjectID != sub.ProjectID {
		return meta.NotFound(meta.KindQueue, sub.QueueID)
	}
	if _, ok := s.subs[sub.QueueID]; ok {
		return meta.SubscriptionExists(sub.QueueID)
	}
	if n := s.countsLocked(sub.ProjectID).Subscriptions; maxSubs > 0 && n >= maxSubs {
		return meta.QuotaReached(meta.LimitMaxSubscriptions, maxSubs)
	}
	sub = cloneSub(sub)
	sub.Version = 1
	s.subs[sub.QueueID] = sub
	return nil
}

// GetSubscription reads a queue's subscription.
func (s *Store) GetSubscription(_ context.Context, queueID ids.ID) (meta.Subscription, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sub, ok := s.subs[queueID]
	if !ok {
		return meta.Subscription{}, subNotFound(queueID)
	}
	return cloneSub(sub), nil
}

// UpdateSubscription replaces a subscription's settings if the stored Version is sub.Version.
func (s *Store) UpdateSubscription(_ context.Context, sub meta.Subscription) (meta.Subscription, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.subs[sub.QueueID]
	if !ok || cur.ID != sub.ID {
		return meta.Subscription{}, subNotFound(sub.QueueID)
	}
	if cur.Version != sub.Version {
		return meta.Subscription{}, meta.ErrSubscriptionConflict
	}
	next := cloneSub(sub)
	next.ProjectID, next.CreatedAt = cur.ProjectID, cur.CreatedAt
	next.Version = cur.Version + 1
	s.subs[sub.QueueID] = next
	return next, nil
}

// DeleteSubscription deletes a queue's subscription.
func (s *Store) DeleteSubscription(_ context.Context, queueID ids.ID) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.subs[queueID]; !ok {
		return subNotFound(queueID)
	}
	delete(s.subs, queueID)
	return nil
}

// ListSubscriptions lists every subscription in queue id order.
func (s *Store) ListSubscriptions(_ context.Context, pg meta.Page) ([]meta.Subscription, string, error) {
	after := ""
	if pg.Cursor != "" {
		var err error
		after, err = pagecursor.Decode(pg.Cursor, "subscriptions", "", func(a string) bool {
			_, err := ids.ParseUUID(a)
			return err == nil
		})
		if err != nil {
			return nil, "", err
		}
	}
	s.mu.Lock()
	all := make([]meta.Subscription, 0, len(s.subs))
	for _, sub := range s.subs {
		all = append(all, cloneSub(sub))
	}
	s.mu.Unlock()
	key := func(x meta.Subscription) string { return x.QueueID.String() }
	slices.SortFunc(all, func(a, b meta.Subscription) int { return cmp.Compare(key(a), key(b)) })
	out, last := page(all, key, after, pg.Size())
	next := ""
	if last != "" {
		next = pagecursor.Encode(pagecursor.Cursor{List: "subscriptions", After: last})
	}
	return slices.Clone(out), next, nil
}
