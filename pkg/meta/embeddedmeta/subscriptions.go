package embeddedmeta

// Push subscriptions and the pusher's attempts log, in the same bbolt file as the rest:
//
//	subs       queue id -> JSON of the subscription (at most one per queue: the key is the
//	           queue id, and the queue must exist in the subscription's project)
//	attempts   a nested bucket per subscription id; in it, sequence (8 bytes, big-endian) ->
//	           one attempt record as the caller encoded it; the newest `keep` are kept
//
// As in the other stores, deleting a queue does not touch its subscription: the API deletes
// the subscription after the queue, and the pusher deletes any subscription whose queue is
// gone. Deleting a subscription deletes its attempts log in the same transaction.

import (
	"context"
	"encoding/binary"
	"errors"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
)

var (
	bSubs     = []byte("subs")
	bAttempts = []byte("attempts")
)

var _ meta.SubscriptionStore = (*Store)(nil)

func cloneSub(s meta.Subscription) meta.Subscription {
	s.CreatedAt, s.UpdatedAt = s.CreatedAt.UTC(), s.UpdatedAt.UTC()
	if !s.DisabledAt.IsZero() {
		s.DisabledAt = s.DisabledAt.UTC()
	}
	if s.PreviousExpiresAt.IsZero() {
		s.PreviousExpiresAt = time.Time{}
	} else {
		s.PreviousExpiresAt = s.PreviousExpiresAt.UTC()
	}
	return s
}

func subNotFound(q ids.ID) error {
	return meta.NotFound(meta.KindSubscription, q)
}

func getSub(tx *bolt.Tx, queueID ids.ID) (*meta.Subscription, error) {
	var s meta.Subscription
	ok, err := getJSON(tx.Bucket(bSubs), queueID[:], &s)
	if err != nil || !ok {
		return nil, err
	}
	s = cloneSub(s)
	return &s, nil
}

// CreateSubscription stores a queue's subscription with Version 1: the queue must exist in the
// subscription's project (NotFound) and have no subscription yet (SubscriptionExists).
func (s *Store) CreateSubscription(ctx context.Context, sub meta.Subscription) error {
	return s.CreateSubscriptionWithin(ctx, sub, 0)
}

// CreateSubscriptionWithin is CreateSubscription with the project's maxSubscriptions quota
// (<= 0: none), counted in the same transaction.
func (s *Store) CreateSubscriptionWithin(_ context.Context, sub meta.Subscription, maxSubs int64) error {
	if sub.ID.IsZero() || sub.QueueID.IsZero() {
		return meta.ZeroID("subscription or queue")
	}
	sub = cloneSub(sub)
	sub.Version = 1
	return s.update(func(tx *bolt.Tx) error {
		q, err := getQueue(tx, sub.QueueID)
		if err != nil {
			return err
		}
		if q == nil || q.Q.ProjectID != sub.ProjectID {
			return meta.NotFound(meta.KindQueue, sub.QueueID)
		}
		b := tx.Bucket(bSubs)
		if b.Get(sub.QueueID[:]) != nil {
			return meta.SubscriptionExists(sub.QueueID)
		}
		if n, err := countSubs(tx, sub.ProjectID); err != nil || (maxSubs > 0 && n >= maxSubs) {
			if err != nil {
				return err
			}
			return meta.QuotaReached(meta.LimitMaxSubscriptions, maxSubs)
		}
		return putJSON(b, sub.QueueID[:], sub)
	})
}

// GetSubscription reads a queue's subscription.
func (s *Store) GetSubscription(_ context.Context, queueID ids.ID) (meta.Subscription, error) {
	var out meta.Subscription
	err := s.view(func(tx *bolt.Tx) error {
		sub, err := getSub(tx, queueID)
		if err != nil {
			return err
		}
		if sub == nil {
			return subNotFound(queueID)
		}
		out = *sub
		return nil
	})
	if err != nil {
		return meta.Subscription{}, err
	}
	return out, nil
}

// UpdateSubscription replaces a subscription's settings and secrets if its stored Version is
// sub.Version; ID, QueueID, ProjectID and CreatedAt are kept.
func (s *Store) UpdateSubscription(_ context.Context, sub meta.Subscription) (meta.Subscription, error) {
	var out meta.Subscription
	err := s.update(func(tx *bolt.Tx) error {
		cur, err := getSub(tx, sub.QueueID)
		if err != nil {
			return err
		}
		if cur == nil || cur.ID != sub.ID {
			return subNotFound(sub.QueueID)
		}
		if cur.Version != sub.Version {
			return meta.ErrSubscriptionConflict
		}
		next := cloneSub(sub)
		next.ProjectID, next.CreatedAt = cur.ProjectID, cur.CreatedAt
		next.Version = cur.Version + 1
		out = next
		return putJSON(tx.Bucket(bSubs), sub.QueueID[:], next)
	})
	if err != nil {
		return meta.Subscription{}, err
	}
	return out, nil
}

// DeleteSubscription deletes a queue's subscription and its attempts log.
func (s *Store) DeleteSubscription(_ context.Context, queueID ids.ID) error {
	return s.update(func(tx *bolt.Tx) error {
		cur, err := getSub(tx, queueID)
		if err != nil {
			return err
		}
		if cur == nil {
			return subNotFound(queueID)
		}
		if err := tx.Bucket(bSubs).Delete(queueID[:]); err != nil {
			return err
		}
		if err := tx.Bucket(bAttempts).DeleteBucket(cur.ID[:]); err != nil && !errors.Is(err, berrors.ErrBucketNotFound) {
			return err
		}
		return tx.Bucket(bHealth).Delete(cur.ID[:])
	})
}

// ListSubscriptions lists every subscription in queue id order (raw id bytes sort as the
// UUID strings do).
func (s *Store) ListSubscriptions(_ context.Context, pg meta.Page) ([]meta.Subscription, string, error) {
	return listByID(s, pg, "subscriptions", bSubs, func(sub meta.Subscription) (meta.Subscription, ids.ID) {
		return cloneSub(sub), sub.QueueID
	})
}

// ---- attempts log ----

// AppendAttempt adds one record to a subscription's attempts log and drops all but the newest
// keep. Concurrent appends share one transaction and one fsync (bbolt's Batch), so a pusher
// with many batches in flight does not wait on one sync per attempt.
func (s *Store) AppendAttempt(_ context.Context, subID ids.ID, record []byte, keep int) error {
	if keep < 1 {
		keep = 1
	}
	return storageErr(s.db.Batch(func(tx *bolt.Tx) error {
		b, err := tx.Bucket(bAttempts).CreateBucketIfNotExists(subID[:])
		if err != nil {
			return err
		}
		seq, err := b.NextSequence()
		if err != nil {
			return err
		}
		if err := b.Put(seqKey(seq), record); err != nil {
			return err
		}
		// Sequences grow by one per append, so the one falling out of the window is seq-keep.
		if seq > uint64(keep) {
			return b.Delete(seqKey(seq - uint64(keep)))
		}
		return nil
	}))
}

// RecentAttempts returns up to limit records of a subscription's attempts log, newest first
// (none for a subscription that never pushed).
func (s *Store) RecentAttempts(_ context.Context, subID ids.ID, limit int) ([][]byte, error) {
	var out [][]byte
	err := s.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bAttempts).Bucket(subID[:])
		if b == nil {
			return nil
		}
		c := b.Cursor()
		for k, v := c.Last(); k != nil && len(out) < limit; k, v = c.Prev() {
			out = append(out, append([]byte(nil), v...))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func seqKey(n uint64) []byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], n)
	return k[:]
}
