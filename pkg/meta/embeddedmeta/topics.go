package embeddedmeta

// Topics and bindings, in the same bbolt file as the rest:
//
//	topics         topic id -> JSON of the topic
//	topicNames     project id ‖ name -> topic id (names unique per project, apart from the
//	               queues' names bucket: a topic and a queue may share a name)
//	bindings       binding id -> JSON of the binding
//	queueBindings  queue id ‖ binding id -> topic id (a queue's bindings, in binding id order)
//	topicBindings  topic id ‖ binding id -> queue id (a topic's bindings, in binding id order)
//
// Each change is one bbolt transaction, so the bounds (topics per project, one binding per
// queue and topic, sources per queue, bindings per topic) are counted in the transaction that
// creates, and the indexes never disagree with the records.

import (
	"bytes"
	"context"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/meta/internal/pagecursor"
)

var (
	bTopics        = []byte("topics")
	bTopicNames    = []byte("topicNames")
	bBindings      = []byte("bindings")
	bQueueBindings = []byte("queueBindings")
	bTopicBindings = []byte("topicBindings")

	topicBuckets = [][]byte{bTopics, bTopicNames, bBindings, bQueueBindings, bTopicBindings}
)

var _ meta.TopicStore = (*Store)(nil)

func getTopic(tx *bolt.Tx, id ids.ID) (*meta.Topic, error) {
	var t meta.Topic
	ok, err := getJSON(tx.Bucket(bTopics), id[:], &t)
	if err != nil || !ok {
		return nil, err
	}
	t = meta.CloneTopic(t)
	return &t, nil
}

func getBinding(tx *bolt.Tx, id ids.ID) (*meta.Binding, error) {
	var b meta.Binding
	ok, err := getJSON(tx.Bucket(bBindings), id[:], &b)
	if err != nil || !ok {
		return nil, err
	}
	b = meta.CloneBinding(b)
	return &b, nil
}

// countPrefix counts the keys of bucket that start with prefix.
func countPrefix(tx *bolt.Tx, bucket, prefix []byte) int64 {
	var n int64
	c := tx.Bucket(bucket).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		n++
	}
	return n
}

// CreateTopicWithin stores a new topic with Version 1 under the project's maxTopics (<= 0:
// none), counted in the same transaction.
func (s *Store) CreateTopicWithin(_ context.Context, t meta.Topic, maxTopics int64) error {
	if err := t.CheckNew(); err != nil {
		return err
	}
	t = meta.CloneTopic(t)
	t.Version = 1
	return s.update(func(tx *bolt.Tx) error {
		if !hasProject(tx, t.ProjectID) {
			return projectNotFound(t.ProjectID)
		}
		nk := cat(t.ProjectID, []byte(t.Name))
		if tx.Bucket(bTopicNames).Get(nk) != nil {
			return meta.TopicNameTaken(t.Name)
		}
		if tx.Bucket(bTopics).Get(t.ID[:]) != nil {
			return meta.IDTaken(meta.KindTopic, t.ID)
		}
		if maxTopics > 0 && countPrefix(tx, bTopicNames, t.ProjectID[:]) >= maxTopics {
			return meta.TopicQuota(maxTopics)
		}
		if err := putJSON(tx.Bucket(bTopics), t.ID[:], t); err != nil {
			return err
		}
		return tx.Bucket(bTopicNames).Put(nk, t.ID[:])
	})
}

// readTopic runs a read of one topic; fn answers it from the transaction (nil: not found).
func (s *Store) readTopic(fn func(tx *bolt.Tx) (*meta.Topic, error), notFound error) (meta.Topic, error) {
	var out meta.Topic
	err := s.view(func(tx *bolt.Tx) error {
		t, err := fn(tx)
		if err != nil {
			return err
		}
		if t == nil {
			return notFound
		}
		out = *t
		return nil
	})
	return out, err
}

// GetTopic reads a topic by id within a project.
func (s *Store) GetTopic(_ context.Context, projectID, topicID ids.ID) (meta.Topic, error) {
	return s.readTopic(func(tx *bolt.Tx) (*meta.Topic, error) {
		t, err := getTopic(tx, topicID)
		if t != nil && t.ProjectID != projectID {
			t = nil
		}
		return t, err
	}, meta.TopicNotFound(topicID))
}

// GetTopicByName reads a topic by name within a project.
func (s *Store) GetTopicByName(_ context.Context, projectID ids.ID, name string) (meta.Topic, error) {
	return s.readTopic(func(tx *bolt.Tx) (*meta.Topic, error) {
		id := tx.Bucket(bTopicNames).Get(cat(projectID, []byte(name)))
		if len(id) != 16 || name == "" {
			return nil, nil
		}
		return getTopic(tx, ids.ID(id))
	}, meta.NameNotFound(meta.KindTopic, name))
}

// GetTopicByID reads a topic by id alone.
func (s *Store) GetTopicByID(_ context.Context, topicID ids.ID) (meta.Topic, error) {
	return s.readTopic(func(tx *bolt.Tx) (*meta.Topic, error) { return getTopic(tx, topicID) }, meta.TopicNotFound(topicID))
}

// ListTopics lists a project's topics whose names start with prefix, in name (byte) order.
func (s *Store) ListTopics(_ context.Context, projectID ids.ID, prefix string, pg meta.Page) ([]meta.Topic, string, error) {
	after := ""
	if pg.Cursor != "" {
		var err error
		after, err = pagecursor.Decode(pg.Cursor, "topics", projectID.String(), func(a string) bool {
			return a != "" && strings.HasPrefix(a, prefix)
		})
		if err != nil {
			return nil, "", err
		}
	}
	limit := pg.Size()
	var out []meta.Topic
	more := false
	err := s.view(func(tx *bolt.Tx) error {
		pre := cat(projectID, []byte(prefix))
		c := tx.Bucket(bTopicNames).Cursor()
		k, v := c.Seek(pre)
		if after != "" {
			ak := cat(projectID, []byte(after))
			if k, v = c.Seek(ak); k != nil && bytes.Equal(k, ak) {
				k, v = c.Next()
			}
		}
		for ; k != nil && bytes.HasPrefix(k, pre); k, v = c.Next() {
			if len(out) == limit {
				more = true
				return nil
			}
			t, err := getTopic(tx, ids.ID(v))
			if err != nil {
				return err
			}
			if t != nil {
				out = append(out, *t)
			}
		}
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	next := ""
	if more {
		next = pagecursor.Encode(pagecursor.Cursor{List: "topics", Project: projectID.String(), After: out[len(out)-1].Name})
	}
	return out, next, nil
}

// CountTopics counts a project's topics.
func (s *Store) CountTopics(_ context.Context, projectID ids.ID) (int64, error) {
	var n int64
	err := s.view(func(tx *bolt.Tx) error {
		n = countPrefix(tx, bTopicNames, projectID[:])
		return nil
	})
	return n, err
}

// UpdateTopic replaces RetentionSeconds (and UpdatedAt) if the stored Version is t.Version.
func (s *Store) UpdateTopic(_ context.Context, t meta.Topic) (meta.Topic, error) {
	var out meta.Topic
	err := s.update(func(tx *bolt.Tx) error {
		cur, err := getTopic(tx, t.ID)
		if err != nil {
			return err
		}
		if cur == nil || cur.ProjectID != t.ProjectID {
			return meta.TopicNotFound(t.ID)
		}
		if cur.Version != t.Version {
			return meta.ErrTopicConflict
		}
		cur.RetentionSeconds, cur.UpdatedAt = t.RetentionSeconds, t.UpdatedAt.UTC()
		cur.Version++
		out = *cur
		return putJSON(tx.Bucket(bTopics), t.ID[:], cur)
	})
	return out, err
}

// DeleteTopic deletes a topic and its bindings in one transaction.
func (s *Store) DeleteTopic(_ context.Context, projectID, topicID ids.ID) (meta.Topic, []meta.Binding, error) {
	var out meta.Topic
	var bs []meta.Binding
	err := s.update(func(tx *bolt.Tx) error {
		t, err := getTopic(tx, topicID)
		if err != nil {
			return err
		}
		if t == nil || t.ProjectID != projectID {
			return meta.TopicNotFound(topicID)
		}
		if bs, err = indexedBindings(tx, bTopicBindings, topicID); err != nil {
			return err
		}
		for _, b := range bs {
			if err := deleteBinding(tx, b); err != nil {
				return err
			}
		}
		out = *t
		if err := tx.Bucket(bTopics).Delete(topicID[:]); err != nil {
			return err
		}
		return tx.Bucket(bTopicNames).Delete(cat(projectID, []byte(t.Name)))
	})
	if err != nil {
		return meta.Topic{}, nil, err
	}
	return out, bs, nil
}
