package embeddedmeta

import (
	"bytes"
	"context"

	bolt "go.etcd.io/bbolt"

	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
)

// indexedBindings reads the bindings an index bucket (queueBindings or topicBindings) lists
// under owner, in binding id order.
func indexedBindings(tx *bolt.Tx, index []byte, owner ids.ID) ([]meta.Binding, error) {
	var out []meta.Binding
	c := tx.Bucket(index).Cursor()
	for k, _ := c.Seek(owner[:]); k != nil && bytes.HasPrefix(k, owner[:]); k, _ = c.Next() {
		b, err := getBinding(tx, ids.ID(k[16:]))
		if err != nil {
			return nil, err
		}
		if b != nil {
			out = append(out, *b)
		}
	}
	return out, nil
}

// deleteBinding deletes a binding and its two index entries.
func deleteBinding(tx *bolt.Tx, b meta.Binding) error {
	if err := tx.Bucket(bBindings).Delete(b.ID[:]); err != nil {
		return err
	}
	if err := tx.Bucket(bQueueBindings).Delete(cat(b.QueueID, b.ID[:])); err != nil {
		return err
	}
	return tx.Bucket(bTopicBindings).Delete(cat(b.TopicID, b.ID[:]))
}

// checkNewBinding answers why b may not be created, in the order the conformance suite pins
// (nil: it may).
func checkNewBinding(tx *bolt.Tx, b meta.Binding) error {
	q, err := getQueue(tx, b.QueueID)
	if err != nil {
		return err
	}
	if q == nil || q.Q.ProjectID != b.ProjectID {
		return meta.NotFound(meta.KindQueue, b.QueueID)
	}
	t, err := getTopic(tx, b.TopicID)
	if err != nil {
		return err
	}
	if t == nil || t.ProjectID != b.ProjectID {
		return meta.TopicNotFound(b.TopicID)
	}
	var sources int
	c := tx.Bucket(bQueueBindings).Cursor()
	for k, v := c.Seek(b.QueueID[:]); k != nil && bytes.HasPrefix(k, b.QueueID[:]); k, v = c.Next() {
		if bytes.Equal(v, b.TopicID[:]) {
			return meta.BindingTaken(b.QueueID, b.TopicID)
		}
		sources++
	}
	if tx.Bucket(bBindings).Get(b.ID[:]) != nil {
		return meta.IDTaken(meta.KindBinding, b.ID)
	}
	switch {
	case sources >= meta.MaxSourcesPerQueue:
		return meta.SourcesQuota()
	case countPrefix(tx, bTopicBindings, b.TopicID[:]) >= meta.MaxBindingsPerTopic:
		return meta.BindingsQuota()
	}
	return nil
}

// CreateBinding stores a new binding with Version 1, its checks and bounds counted in the
// same transaction.
func (s *Store) CreateBinding(_ context.Context, b meta.Binding) error {
	if err := b.CheckNew(); err != nil {
		return err
	}
	b = meta.CloneBinding(b)
	b.Version = 1
	return s.update(func(tx *bolt.Tx) error {
		if err := checkNewBinding(tx, b); err != nil {
			return err
		}
		if err := putJSON(tx.Bucket(bBindings), b.ID[:], b); err != nil {
			return err
		}
		if err := tx.Bucket(bQueueBindings).Put(cat(b.QueueID, b.ID[:]), b.TopicID[:]); err != nil {
			return err
		}
		return tx.Bucket(bTopicBindings).Put(cat(b.TopicID, b.ID[:]), b.QueueID[:])
	})
}

// queueBinding reads one binding of a queue (nil when the queue has no such binding).
func queueBinding(tx *bolt.Tx, queueID, bindingID ids.ID) (*meta.Binding, error) {
	b, err := getBinding(tx, bindingID)
	if err != nil || b == nil || b.QueueID != queueID {
		return nil, err
	}
	return b, nil
}

// GetBinding reads one binding of a queue.
func (s *Store) GetBinding(_ context.Context, queueID, bindingID ids.ID) (meta.Binding, error) {
	var out meta.Binding
	err := s.view(func(tx *bolt.Tx) error {
		b, err := queueBinding(tx, queueID, bindingID)
		if err != nil {
			return err
		}
		if b == nil {
			return meta.BindingNotFound(bindingID)
		}
		out = *b
		return nil
	})
	return out, err
}

func (s *Store) listBindings(index []byte, owner ids.ID) ([]meta.Binding, error) {
	var out []meta.Binding
	err := s.view(func(tx *bolt.Tx) error {
		var err error
		out, err = indexedBindings(tx, index, owner)
		return err
	})
	return out, err
}

// QueueBindings lists a queue's bindings in binding id order.
func (s *Store) QueueBindings(_ context.Context, queueID ids.ID) ([]meta.Binding, error) {
	return s.listBindings(bQueueBindings, queueID)
}

// TopicBindings lists a topic's bindings in binding id order.
func (s *Store) TopicBindings(_ context.Context, topicID ids.ID) ([]meta.Binding, error) {
	return s.listBindings(bTopicBindings, topicID)
}

// UpdateBinding replaces Filter (and UpdatedAt) if the stored Version is b.Version.
func (s *Store) UpdateBinding(_ context.Context, b meta.Binding) (meta.Binding, error) {
	var out meta.Binding
	err := s.update(func(tx *bolt.Tx) error {
		cur, err := queueBinding(tx, b.QueueID, b.ID)
		if err != nil {
			return err
		}
		if cur == nil {
			return meta.BindingNotFound(b.ID)
		}
		if cur.Version != b.Version {
			return meta.ErrBindingConflict
		}
		cur.Filter, cur.UpdatedAt = b.Filter, b.UpdatedAt.UTC()
		cur.Version++
		out = *cur
		return putJSON(tx.Bucket(bBindings), b.ID[:], cur)
	})
	return out, err
}

// DeleteBinding deletes one binding of a queue.
func (s *Store) DeleteBinding(_ context.Context, queueID, bindingID ids.ID) (meta.Binding, error) {
	var out meta.Binding
	err := s.update(func(tx *bolt.Tx) error {
		b, err := queueBinding(tx, queueID, bindingID)
		if err != nil {
			return err
		}
		if b == nil {
			return meta.BindingNotFound(bindingID)
		}
		out = *b
		return deleteBinding(tx, *b)
	})
	return out, err
}

// DeleteQueueBindings deletes every binding of a queue in one transaction.
func (s *Store) DeleteQueueBindings(_ context.Context, queueID ids.ID) ([]meta.Binding, error) {
	var out []meta.Binding
	err := s.update(func(tx *bolt.Tx) error {
		bs, err := indexedBindings(tx, bQueueBindings, queueID)
		if err != nil {
			return err
		}
		for _, b := range bs {
			if err := deleteBinding(tx, b); err != nil {
				return err
			}
		}
		out = bs
		return nil
	})
	return out, err
}
