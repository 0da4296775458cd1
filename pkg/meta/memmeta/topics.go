package memmeta

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/meta/internal/pagecursor"
)

var _ meta.TopicStore = (*Store)(nil)

// topicState is the store's topics and bindings (guarded by Store.mu).
type topicState struct {
	topics   map[ids.ID]meta.Topic
	names    map[nameKey]ids.ID
	bindings map[ids.ID]meta.Binding // by binding id
}

func newTopicState() topicState {
	return topicState{topics: map[ids.ID]meta.Topic{}, names: map[nameKey]ids.ID{}, bindings: map[ids.ID]meta.Binding{}}
}

func (s *Store) topicsOf(project ids.ID) int64 {
	var n int64
	for _, t := range s.ts.topics {
		if t.ProjectID == project {
			n++
		}
	}
	return n
}

// CreateTopicWithin stores a new topic with Version 1 under the project's maxTopics (<= 0:
// none).
func (s *Store) CreateTopicWithin(_ context.Context, t meta.Topic, maxTopics int64) error {
	if err := t.CheckNew(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.projects[t.ProjectID]; !ok {
		return projectNotFound(t.ProjectID)
	}
	nk := nameKey{t.ProjectID, t.Name}
	if _, ok := s.ts.names[nk]; ok {
		return meta.TopicNameTaken(t.Name)
	}
	if _, ok := s.ts.topics[t.ID]; ok {
		return meta.IDTaken(meta.KindTopic, t.ID)
	}
	if maxTopics > 0 && s.topicsOf(t.ProjectID) >= maxTopics {
		return meta.TopicQuota(maxTopics)
	}
	t = meta.CloneTopic(t)
	t.Version = 1
	s.ts.topics[t.ID] = t
	s.ts.names[nk] = t.ID
	return nil
}

// GetTopic reads a topic by id within a project.
func (s *Store) GetTopic(_ context.Context, projectID, topicID ids.ID) (meta.Topic, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.ts.topics[topicID]
	if !ok || t.ProjectID != projectID {
		return meta.Topic{}, meta.TopicNotFound(topicID)
	}
	return t, nil
}

// GetTopicByName reads a topic by name within a project.
func (s *Store) GetTopicByName(_ context.Context, projectID ids.ID, name string) (meta.Topic, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, ok := s.ts.names[nameKey{projectID, name}]
	if !ok {
		return meta.Topic{}, meta.NameNotFound(meta.KindTopic, name)
	}
	return s.ts.topics[id], nil
}

// GetTopicByID reads a topic by id alone.
func (s *Store) GetTopicByID(_ context.Context, topicID ids.ID) (meta.Topic, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.ts.topics[topicID]
	if !ok {
		return meta.Topic{}, meta.TopicNotFound(topicID)
	}
	return t, nil
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
	s.mu.Lock()
	var all []meta.Topic
	for k, id := range s.ts.names {
		if k.project == projectID && strings.HasPrefix(k.name, prefix) {
			all = append(all, s.ts.topics[id])
		}
	}
	s.mu.Unlock()
	key := func(t meta.Topic) string { return t.Name }
	slices.SortFunc(all, func(a, b meta.Topic) int { return cmp.Compare(a.Name, b.Name) })
	ts, last := page(all, key, after, pg.Size())
	next := ""
	if last != "" {
		next = pagecursor.Encode(pagecursor.Cursor{List: "topics", Project: projectID.String(), After: last})
	}
	return slices.Clone(ts), next, nil
}

// CountTopics counts a project's topics.
func (s *Store) CountTopics(_ context.Context, projectID ids.ID) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.topicsOf(projectID), nil
}

// UpdateTopic replaces RetentionSeconds (and UpdatedAt) if the stored Version is t.Version.
func (s *Store) UpdateTopic(_ context.Context, t meta.Topic) (meta.Topic, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.ts.topics[t.ID]
	if !ok || cur.ProjectID != t.ProjectID {
		return meta.Topic{}, meta.TopicNotFound(t.ID)
	}
	if cur.Version != t.Version {
		return meta.Topic{}, meta.ErrTopicConflict
	}
	cur.RetentionSeconds, cur.UpdatedAt = t.RetentionSeconds, t.UpdatedAt.UTC()
	cur.Version++
	s.ts.topics[t.ID] = cur
	return cur, nil
}

// DeleteTopic deletes a topic and its bindings.
func (s *Store) DeleteTopic(_ context.Context, projectID, topicID ids.ID) (meta.Topic, []meta.Binding, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.ts.topics[topicID]
	if !ok || t.ProjectID != projectID {
		return meta.Topic{}, nil, meta.TopicNotFound(topicID)
	}
	bs := s.bindingsWhere(func(b meta.Binding) bool { return b.TopicID == topicID })
	for _, b := range bs {
		delete(s.ts.bindings, b.ID)
	}
	delete(s.ts.topics, topicID)
	delete(s.ts.names, nameKey{projectID, t.Name})
	return t, bs, nil
}

// bindingsWhere lists the bindings that keep says, in binding id order. The caller holds mu.
func (s *Store) bindingsWhere(keep func(meta.Binding) bool) []meta.Binding {
	var out []meta.Binding
	for _, b := range s.ts.bindings {
		if keep(b) {
			out = append(out, b)
		}
	}
	slices.SortFunc(out, func(a, b meta.Binding) int { return cmp.Compare(a.ID.String(), b.ID.String()) })
	return out
}

// CreateBinding stores a new binding with Version 1 (see meta.TopicStore for the checks, made
// in the order the conformance suite pins).
func (s *Store) CreateBinding(_ context.Context, b meta.Binding) error {
	if err := b.CheckNew(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if q, ok := s.queues[b.QueueID]; !ok || q.q.ProjectID != b.ProjectID {
		return queueNotFound(b.QueueID)
	}
	if t, ok := s.ts.topics[b.TopicID]; !ok || t.ProjectID != b.ProjectID {
		return meta.TopicNotFound(b.TopicID)
	}
	var ofQueue, ofTopic int
	for _, o := range s.ts.bindings {
		if o.QueueID == b.QueueID && o.TopicID == b.TopicID {
			return meta.BindingTaken(b.QueueID, b.TopicID)
		}
		if o.QueueID == b.QueueID {
			ofQueue++
		}
		if o.TopicID == b.TopicID {
			ofTopic++
		}
	}
	if _, ok := s.ts.bindings[b.ID]; ok {
		return meta.IDTaken(meta.KindBinding, b.ID)
	}
	switch {
	case ofQueue >= meta.MaxSourcesPerQueue:
		return meta.SourcesQuota()
	case ofTopic >= meta.MaxBindingsPerTopic:
		return meta.BindingsQuota()
	}
	b = meta.CloneBinding(b)
	b.Version = 1
	s.ts.bindings[b.ID] = b
	return nil
}

func queueNotFound(id ids.ID) error { return meta.NotFound(meta.KindQueue, id) }

// GetBinding reads one binding of a queue.
func (s *Store) GetBinding(_ context.Context, queueID, bindingID ids.ID) (meta.Binding, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.ts.bindings[bindingID]
	if !ok || b.QueueID != queueID {
		return meta.Binding{}, meta.BindingNotFound(bindingID)
	}
	return b, nil
}

// QueueBindings lists a queue's bindings in binding id order.
func (s *Store) QueueBindings(_ context.Context, queueID ids.ID) ([]meta.Binding, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bindingsWhere(func(b meta.Binding) bool { return b.QueueID == queueID }), nil
}

// TopicBindings lists a topic's bindings in binding id order.
func (s *Store) TopicBindings(_ context.Context, topicID ids.ID) ([]meta.Binding, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bindingsWhere(func(b meta.Binding) bool { return b.TopicID == topicID }), nil
}

// UpdateBinding replaces Filter (and UpdatedAt) if the stored Version is b.Version.
func (s *Store) UpdateBinding(_ context.Context, b meta.Binding) (meta.Binding, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.ts.bindings[b.ID]
	if !ok || cur.QueueID != b.QueueID {
		return meta.Binding{}, meta.BindingNotFound(b.ID)
	}
	if cur.Version != b.Version {
		return meta.Binding{}, meta.ErrBindingConflict
	}
	cur.Filter, cur.UpdatedAt = b.Filter, b.UpdatedAt.UTC()
	cur.Version++
	s.ts.bindings[b.ID] = cur
	return cur, nil
}

// DeleteBinding deletes one binding of a queue.
func (s *Store) DeleteBinding(_ context.Context, queueID, bindingID ids.ID) (meta.Binding, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.ts.bindings[bindingID]
	if !ok || b.QueueID != queueID {
		return meta.Binding{}, meta.BindingNotFound(bindingID)
	}
	delete(s.ts.bindings, bindingID)
	return b, nil
}

// DeleteQueueBindings deletes every binding of a queue.
func (s *Store) DeleteQueueBindings(_ context.Context, queueID ids.ID) ([]meta.Binding, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	bs := s.bindingsWhere(func(b meta.Binding) bool { return b.QueueID == queueID })
	for _, b := range bs {
		delete(s.ts.bindings, b.ID)
	}
	return bs, nil
}
