// Package memmeta is an in-memory meta.Store: a fast fake for unit tests of the layers above
// the metadata store. It passes the metatest conformance suite, so it behaves like the
// DynamoDB store, but it keeps nothing across restarts.
package memmeta

import (
	"cmp"
	"context"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/meta/internal/pagecursor"
)

type tokenKey struct{ project, token ids.ID }
type nameKey struct {
	project ids.ID
	name    string
}

type queueRec struct {
	q    meta.Queue
	refs int // queues naming this one as their dead-letter queue
}

// Store is an in-memory meta.Store, safe for concurrent use. The zero value is not usable;
// call New.
type Store struct {
	mu       sync.Mutex
	projects map[ids.ID]meta.Project
	tokens   map[tokenKey]meta.Token
	queues   map[ids.ID]*queueRec
	names    map[nameKey]ids.ID
	subs     map[ids.ID]meta.Subscription // by queue id (subscriptions.go)
	tenancy  tenancy                      // tenancy.go
	moves    map[ids.ID]meta.MoveTask     // by task id (movetasks.go)
	ts       topicState                   // topics.go
	sigKeys  []meta.SigningKey            // signingkeys.go
}

var _ meta.Store = (*Store)(nil)

// New returns an empty store.
func New() *Store {
	return &Store{
		projects: map[ids.ID]meta.Project{},
		tokens:   map[tokenKey]meta.Token{},
		queues:   map[ids.ID]*queueRec{},
		names:    map[nameKey]ids.ID{},
		subs:     map[ids.ID]meta.Subscription{},
		tenancy:  newTenancy(),
		moves:    map[ids.ID]meta.MoveTask{},
		ts:       newTopicState(),
	}
}

// page cuts sorted keys after after into one page and the cursor of the next.
func page[T any](all []T, keyOf func(T) string, after string, limit int) ([]T, string) {
	rest := all[sort.Search(len(all), func(i int) bool { return keyOf(all[i]) > after }):]
	if len(rest) <= limit {
		return rest, ""
	}
	return rest[:limit], keyOf(rest[limit-1])
}

// ---- projects ----

// CreateProject stores a new project.
func (s *Store) CreateProject(_ context.Context, p meta.Project) error {
	if p.ID.IsZero() {
		return meta.ZeroID("project")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.projects[p.ID]; ok {
		return meta.IDTaken(meta.KindProject, p.ID)
	}
	p.CreatedAt = p.CreatedAt.UTC()
	s.projects[p.ID] = p
	return nil
}

// GetProject reads a project.
func (s *Store) GetProject(_ context.Context, id ids.ID) (meta.Project, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.projects[id]
	if !ok {
		return meta.Project{}, meta.NotFound(meta.KindProject, id)
	}
	return p, nil
}

// ListProjects lists projects in id (creation) order.
func (s *Store) ListProjects(_ context.Context, pg meta.Page) ([]meta.Project, string, error) {
	after := ""
	if pg.Cursor != "" {
		var err error
		after, err = pagecursor.Decode(pg.Cursor, "projects", "", func(a string) bool {
			_, err := ids.ParseUUID(a)
			return err == nil
		})
		if err != nil {
			return nil, "", err
		}
	}
	s.mu.Lock()
	all := make([]meta.Project, 0, len(s.projects))
	for _, p := range s.projects {
		all = append(all, p)
	}
	s.mu.Unlock()
	key := func(p meta.Project) string { return p.ID.String() }
	slices.SortFunc(all, func(a, b meta.Project) int { return cmp.Compare(key(a), key(b)) })
	ps, last := page(all, key, after, pg.Size())
	next := ""
	if last != "" {
		next = pagecursor.Encode(pagecursor.Cursor{List: "projects", After: last})
	}
	return slices.Clone(ps), next, nil
}

// ---- tokens ----

// CreateToken stores a token of an existing project.
func (s *Store) CreateToken(_ context.Context, t meta.Token) error {
	if t.ID.IsZero() {
		return meta.ZeroID("token")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.projects[t.ProjectID]; !ok {
		return meta.NotFound(meta.KindProject, t.ProjectID)
	}
	k := tokenKey{t.ProjectID, t.ID}
	if _, ok := s.tokens[k]; ok {
		return meta.IDTaken(meta.KindToken, t.ID)
	}
	s.tokens[k] = meta.CloneToken(t)
	return nil
}

// GetToken reads a token.
func (s *Store) GetToken(_ context.Context, projectID, tokenID ids.ID) (meta.Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tokens[tokenKey{projectID, tokenID}]
	if !ok {
		return meta.Token{}, meta.NotFound(meta.KindToken, tokenID)
	}
	return meta.CloneToken(t), nil
}

// TokenProject finds a token's project.
func (s *Store) TokenProject(_ context.Context, tokenID ids.ID) (ids.ID, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.tokens {
		if k.token == tokenID {
			return k.project, nil
		}
	}
	return ids.ID{}, meta.NotFound(meta.KindToken, tokenID)
}

// RevokeToken sets RevokedAt unless it is already set.
func (s *Store) RevokeToken(_ context.Context, projectID, tokenID ids.ID, at time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := tokenKey{projectID, tokenID}
	t, ok := s.tokens[k]
	if !ok {
		return meta.NotFound(meta.KindToken, tokenID)
	}
	if t.RevokedAt == nil {
		t.RevokedAt = new(at.UTC())
		s.tokens[k] = t
	}
	return nil
}

// ---- queues ----

// dlq returns the record of a dead-letter queue if it exists in project.
func (s *Store) dlq(project, id ids.ID) (*queueRec, bool) {
	r, ok := s.queues[id]
	if !ok || r.q.ProjectID != project {
		return nil, false
	}
	return r, true
}

// CreateQueue stores a new queue with Version 1.
func (s *Store) CreateQueue(ctx context.Context, q meta.Queue) error {
	return s.CreateQueueWithin(ctx, q, 0)
}

// CreateQueueWithin is CreateQueue with the project's maxQueues quota (<= 0: none).
func (s *Store) CreateQueueWithin(_ context.Context, q meta.Queue, maxQueues int64) error {
	if err := q.CheckNew(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.projects[q.ProjectID]; !ok {
		return meta.NotFound(meta.KindProject, q.ProjectID)
	}
	nk := nameKey{q.ProjectID, q.Name}
	if _, ok := s.names[nk]; ok {
		return meta.QueueNameTaken(q.Name)
	}
	var dlq *queueRec
	if q.Redrive != nil {
		var ok bool
		if dlq, ok = s.dlq(q.ProjectID, q.Redrive.DeadLetterQueue); !ok {
			return meta.DeadLetterNotFound(q.Redrive.DeadLetterQueue)
		}
	}
	if _, ok := s.queues[q.ID]; ok {
		return meta.IDTaken(meta.KindQueue, q.ID)
	}
	if n := s.countsLocked(q.ProjectID).Queues; maxQueues > 0 && n >= maxQueues {
		return meta.QuotaReached(meta.LimitMaxQueues, maxQueues)
	}
	q = meta.CloneQueue(q)
	q.Version = 1
	s.queues[q.ID] = &queueRec{q: q}
	s.names[nk] = q.ID
	if dlq != nil {
		dlq.refs++
	}
	return nil
}

// GetQueue reads a queue by id within a project.
func (s *Store) GetQueue(_ context.Context, projectID, queueID ids.ID) (meta.Queue, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.queues[queueID]
	if !ok || r.q.ProjectID != projectID {
		return meta.Queue{}, meta.NotFound(meta.KindQueue, queueID)
	}
	return meta.CloneQueue(r.q), nil
}

// GetQueueByName reads a queue by name within a project.
func (s *Store) GetQueueByName(_ context.Context, projectID ids.ID, name string) (meta.Queue, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, ok := s.names[nameKey{projectID, name}]
	if !ok {
		return meta.Queue{}, meta.NameNotFound(meta.KindQueue, name)
	}
	return meta.CloneQueue(s.queues[id].q), nil
}

// GetQueueByID reads a queue by id alone.
func (s *Store) GetQueueByID(_ context.Context, queueID ids.ID) (meta.Queue, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.queues[queueID]
	if !ok {
		return meta.Queue{}, meta.NotFound(meta.KindQueue, queueID)
	}
	return meta.CloneQueue(r.q), nil
}

// ListQueues lists a project's queues whose names start with prefix, in name (byte) order.
func (s *Store) ListQueues(_ context.Context, projectID ids.ID, prefix string, pg meta.Page) ([]meta.Queue, string, error) {
	after := ""
	if pg.Cursor != "" {
		var err error
		after, err = pagecursor.Decode(pg.Cursor, "queues", projectID.String(), func(a string) bool {
			return a != "" && strings.HasPrefix(a, prefix)
		})
		if err != nil {
			return nil, "", err
		}
	}
	s.mu.Lock()
	var all []meta.Queue
	for k, id := range s.names {
		if k.project == projectID && strings.HasPrefix(k.name, prefix) {
			all = append(all, meta.CloneQueue(s.queues[id].q))
		}
	}
	s.mu.Unlock()
	key := func(q meta.Queue) string { return q.Name }
	slices.SortFunc(all, func(a, b meta.Queue) int { return cmp.Compare(a.Name, b.Name) })
	qs, last := page(all, key, after, pg.Size())
	next := ""
	if last != "" {
		next = pagecursor.Encode(pagecursor.Cursor{List: "queues", Project: projectID.String(), After: last})
	}
	return qs, next, nil
}

// UpdateQueue replaces the settings of q if the stored Version is q.Version.
func (s *Store) UpdateQueue(_ context.Context, q meta.Queue) (meta.Queue, error) {
	if err := q.CheckRedrive(); err != nil {
		return meta.Queue{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.queues[q.ID]
	if !ok || r.q.ProjectID != q.ProjectID {
		return meta.Queue{}, meta.NotFound(meta.KindQueue, q.ID)
	}
	if r.q.Version != q.Version {
		return meta.Queue{}, meta.ErrVersionConflict
	}
	cur := r.q
	var oldDLQ, newDLQ *queueRec
	if cur.Redrive != nil {
		oldDLQ = s.queues[cur.Redrive.DeadLetterQueue]
	}
	if q.Redrive != nil {
		var ok bool
		if newDLQ, ok = s.dlq(q.ProjectID, q.Redrive.DeadLetterQueue); !ok {
			return meta.Queue{}, meta.DeadLetterNotFound(q.Redrive.DeadLetterQueue)
		}
	}
	next := meta.ApplyUpdate(cur, q)
	if oldDLQ != newDLQ {
		if oldDLQ != nil {
			oldDLQ.refs--
		}
		if newDLQ != nil {
			newDLQ.refs++
		}
	}
	r.q = next
	return meta.CloneQueue(next), nil
}

// DeleteQueue deletes a queue that no queue names as its dead-letter queue.
func (s *Store) DeleteQueue(_ context.Context, projectID, queueID ids.ID) (meta.Queue, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.queues[queueID]
	if !ok || r.q.ProjectID != projectID {
		return meta.Queue{}, meta.NotFound(meta.KindQueue, queueID)
	}
	if r.refs > 0 {
		return meta.Queue{}, meta.QueueInUse(queueID)
	}
	if r.q.Redrive != nil {
		if d, ok := s.queues[r.q.Redrive.DeadLetterQueue]; ok {
			d.refs--
		}
	}
	delete(s.queues, queueID)
	delete(s.names, nameKey{projectID, r.q.Name})
	return meta.CloneQueue(r.q), nil
}

// Ping always succeeds.
func (s *Store) Ping(context.Context) error { return nil }
