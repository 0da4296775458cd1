// Package embeddedmeta is the meta.Store and meta.SubscriptionStore of embedded mode:
// projects, tokens, queues, push subscriptions and the pusher's attempts log in a bbolt file
// in the data directory. Every change is one bbolt transaction, fsynced before it
// returns, so the checks a change depends on (name taken, dead-letter queue exists and is
// not in use, version unchanged) and the change itself are atomic. It passes metatest (Run
// and RunSubscriptions) and keeps the choices memmeta pins (errors, paging, cursors).
package embeddedmeta

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/boltformat"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/meta/internal/pagecursor"
)

// Page sizes: those of meta.Page.Size.
const (
	DefaultLimit = meta.DefaultLimit
	MaxLimit     = meta.MaxLimit
)

// Buckets: projects (project id -> JSON), tokens (project id ‖ token id -> JSON), queues
// (queue id -> JSON with the dead-letter reference count), names (project id ‖ name -> queue
// id); subs and attempts are described in subscriptions.go. Ids are raw 16 bytes, so key order
// is id order.
var (
	bProjects = []byte("projects")
	bTokens   = []byte("tokens")
	bQueues   = []byte("queues")
	bNames    = []byte("names")
)

// Store is a durable meta.Store in one bbolt file. It is safe for concurrent use.
type Store struct {
	db *bolt.DB
}

var _ meta.Store = (*Store)(nil)

// Open opens (creating if needed) the store's file at path.
func Open(path string) (*Store, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 2 * time.Second, FreelistType: bolt.FreelistMapType})
	if err != nil {
		return nil, fmt.Errorf("embeddedmeta: opening %s: %w", path, err)
	}
	// Refuse a newer format before writing anything, then create the buckets and stamp.
	if err := boltformat.CheckAndStamp(db, FormatVersion, func() error { return createBuckets(db) }); err != nil {
		db.Close()
		return nil, fmt.Errorf("embeddedmeta: %w", err)
	}
	return &Store{db: db}, nil
}

// FormatVersion is the layout of the store's file that this binary writes (pkg/boltformat):
// 1 is the buckets below and in subscriptions.go, tenancy.go and topics.go, records as JSON.
// Open refuses newer files. The topic buckets were added within version 1: Open creates them
// in a file that lacks them, and an older binary leaves them alone; so is the signing-key
// bucket (signingkeys.go).
const FormatVersion = 1

func createBuckets(db *bolt.DB) error {
	return db.Update(func(tx *bolt.Tx) error {
		all := append([][]byte{bProjects, bTokens, bQueues, bNames, bSubs, bAttempts, bHealth, bMoves, bMoveRun, bMoveProj}, tenancyBuckets...)
		for _, b := range append(append(all, topicBuckets...), bSigKeys) {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
}

// Close closes the file.
func (s *Store) Close() error { return s.db.Close() }

// storageErr turns a bbolt failure into Unavailable; API errors pass through.
func storageErr(err error) error {
	if err == nil {
		return nil
	}
	var ae *apierr.Error
	if errors.As(err, &ae) || errors.Is(err, meta.ErrVersionConflict) || errors.Is(err, meta.ErrSubscriptionConflict) ||
		errors.Is(err, meta.ErrMoveTaskConflict) || errors.Is(err, meta.ErrTopicConflict) || errors.Is(err, meta.ErrBindingConflict) {
		return err
	}
	return meta.Unavailable("metadata store", err)
}

func (s *Store) view(fn func(tx *bolt.Tx) error) error   { return storageErr(s.db.View(fn)) }
func (s *Store) update(fn func(tx *bolt.Tx) error) error { return storageErr(s.db.Update(fn)) }

func cat(a ids.ID, b []byte) []byte {
	k := make([]byte, 0, 16+len(b))
	k = append(k, a[:]...)
	return append(k, b...)
}

// queueRec is a queue as stored: its settings and how many queues name it as their
// dead-letter queue.
type queueRec struct {
	Q    meta.Queue `json:"q"`
	Refs int        `json:"refs"`
}

func getJSON(b *bolt.Bucket, k []byte, v any) (bool, error) {
	raw := b.Get(k)
	if raw == nil {
		return false, nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return false, fmt.Errorf("corrupt record %x: %w", k, err)
	}
	return true, nil
}

func putJSON(b *bolt.Bucket, k []byte, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return b.Put(k, raw)
}

// ---- projects ----

// CreateProject stores a new project.
func (s *Store) CreateProject(_ context.Context, p meta.Project) error {
	if p.ID.IsZero() {
		return meta.ZeroID("project")
	}
	p.CreatedAt = p.CreatedAt.UTC()
	return s.update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bProjects)
		if b.Get(p.ID[:]) != nil {
			return meta.IDTaken(meta.KindProject, p.ID)
		}
		return putJSON(b, p.ID[:], p)
	})
}

// GetProject reads a project.
func (s *Store) GetProject(_ context.Context, id ids.ID) (meta.Project, error) {
	var p meta.Project
	err := s.view(func(tx *bolt.Tx) error {
		ok, err := getJSON(tx.Bucket(bProjects), id[:], &p)
		if err == nil && !ok {
			err = meta.NotFound(meta.KindProject, id)
		}
		return err
	})
	return p, err
}

// ListProjects lists projects in id (creation) order.
func (s *Store) ListProjects(_ context.Context, pg meta.Page) ([]meta.Project, string, error) {
	return listByID(s, pg, "projects", bProjects, func(p meta.Project) (meta.Project, ids.ID) { return p, p.ID })
}

// listByID lists a bucket keyed by raw id bytes (which sort as the UUID strings do) as
// listing list; each JSON value is unmarshalled and passed through conv, which also returns
// the id the value is stored under.
func listByID[T any](s *Store, pg meta.Page, list string, bucket []byte, conv func(T) (T, ids.ID)) ([]T, string, error) {
	var after ids.ID
	hasAfter := false
	if pg.Cursor != "" {
		a, err := pagecursor.Decode(pg.Cursor, list, "", func(a string) bool {
			_, err := ids.ParseUUID(a)
			return err == nil
		})
		if err != nil {
			return nil, "", err
		}
		after, _ = ids.ParseUUID(a)
		hasAfter = true
	}
	limit := pg.Size()
	var out []T
	var last ids.ID
	more := false
	err := s.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucket).Cursor()
		k, v := c.First()
		if hasAfter {
			k, v = c.Seek(after[:])
			if k != nil && bytes.Equal(k, after[:]) {
				k, v = c.Next()
			}
		}
		for ; k != nil; k, v = c.Next() {
			if len(out) == limit {
				more = true
				return nil
			}
			var x T
			if err := json.Unmarshal(v, &x); err != nil {
				return err
			}
			x, last = conv(x)
			out = append(out, x)
		}
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	next := ""
	if more {
		next = pagecursor.Encode(pagecursor.Cursor{List: list, After: last.String()})
	}
	return out, next, nil
}

// ---- tokens ----

// CreateToken stores a token of an existing project.
func (s *Store) CreateToken(_ context.Context, t meta.Token) error {
	if t.ID.IsZero() {
		return meta.ZeroID("token")
	}
	t = meta.CloneToken(t)
	return s.update(func(tx *bolt.Tx) error {
		if tx.Bucket(bProjects).Get(t.ProjectID[:]) == nil {
			return meta.NotFound(meta.KindProject, t.ProjectID)
		}
		b, k := tx.Bucket(bTokens), cat(t.ProjectID, t.ID[:])
		if b.Get(k) != nil {
			return meta.IDTaken(meta.KindToken, t.ID)
		}
		return putJSON(b, k, t)
	})
}

// GetToken reads a token.
func (s *Store) GetToken(_ context.Context, projectID, tokenID ids.ID) (meta.Token, error) {
	var t meta.Token
	err := s.view(func(tx *bolt.Tx) error {
		ok, err := getJSON(tx.Bucket(bTokens), cat(projectID, tokenID[:]), &t)
		if err == nil && !ok {
			err = meta.NotFound(meta.KindToken, tokenID)
		}
		return err
	})
	if err != nil {
		return meta.Token{}, err
	}
	return meta.CloneToken(t), nil
}

// TokenProject finds a token's project. Token keys start with the project, so this looks at
// every token; the API's metadata cache keeps the answer.
func (s *Store) TokenProject(_ context.Context, tokenID ids.ID) (ids.ID, error) {
	var pid ids.ID
	found := false
	err := s.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bTokens).ForEach(func(k, _ []byte) error {
			if len(k) == 32 && string(k[16:]) == string(tokenID[:]) {
				copy(pid[:], k[:16])
				found = true
			}
			return nil
		})
	})
	if err != nil {
		return ids.ID{}, err
	}
	if !found {
		return ids.ID{}, meta.NotFound(meta.KindToken, tokenID)
	}
	return pid, nil
}

// RevokeToken sets RevokedAt unless it is already set.
func (s *Store) RevokeToken(_ context.Context, projectID, tokenID ids.ID, at time.Time) error {
	return s.update(func(tx *bolt.Tx) error {
		b, k := tx.Bucket(bTokens), cat(projectID, tokenID[:])
		var t meta.Token
		ok, err := getJSON(b, k, &t)
		if err != nil {
			return err
		}
		if !ok {
			return meta.NotFound(meta.KindToken, tokenID)
		}
		if t.RevokedAt != nil {
			return nil
		}
		t.RevokedAt = new(at.UTC())
		return putJSON(b, k, t)
	})
}

// ---- queues ----

func getQueue(tx *bolt.Tx, id ids.ID) (*queueRec, error) {
	var r queueRec
	ok, err := getJSON(tx.Bucket(bQueues), id[:], &r)
	if err != nil || !ok {
		return nil, err
	}
	return &r, nil
}

func putQueue(tx *bolt.Tx, r *queueRec) error { return putJSON(tx.Bucket(bQueues), r.Q.ID[:], r) }

// CreateQueue stores a new queue with Version 1.
func (s *Store) CreateQueue(ctx context.Context, q meta.Queue) error {
	return s.CreateQueueWithin(ctx, q, 0)
}

// CreateQueueWithin is CreateQueue with the project's maxQueues quota (<= 0: none), counted in
// the same transaction.
func (s *Store) CreateQueueWithin(_ context.Context, q meta.Queue, maxQueues int64) error {
	if err := q.CheckNew(); err != nil {
		return err
	}
	q = meta.CloneQueue(q)
	q.Version = 1
	return s.update(func(tx *bolt.Tx) error {
		if tx.Bucket(bProjects).Get(q.ProjectID[:]) == nil {
			return meta.NotFound(meta.KindProject, q.ProjectID)
		}
		nk := cat(q.ProjectID, []byte(q.Name))
		if tx.Bucket(bNames).Get(nk) != nil {
			return meta.QueueNameTaken(q.Name)
		}
		if q.Redrive != nil {
			d, err := getQueue(tx, q.Redrive.DeadLetterQueue)
			if err != nil {
				return err
			}
			if d == nil || d.Q.ProjectID != q.ProjectID {
				return meta.DeadLetterNotFound(q.Redrive.DeadLetterQueue)
			}
			d.Refs++
			if err := putQueue(tx, d); err != nil {
				return err
			}
		}
		if tx.Bucket(bQueues).Get(q.ID[:]) != nil {
			return meta.IDTaken(meta.KindQueue, q.ID)
		}
		if maxQueues > 0 && countQueues(tx, q.ProjectID) >= maxQueues {
			return meta.QuotaReached(meta.LimitMaxQueues, maxQueues)
		}
		if err := putQueue(tx, &queueRec{Q: q}); err != nil {
			return err
		}
		return tx.Bucket(bNames).Put(nk, q.ID[:])
	})
}

// GetQueue reads a queue by id within a project.
func (s *Store) GetQueue(_ context.Context, projectID, queueID ids.ID) (meta.Queue, error) {
	q, err := s.GetQueueByID(context.Background(), queueID)
	if err == nil && q.ProjectID != projectID {
		err = meta.NotFound(meta.KindQueue, queueID)
	}
	if err != nil {
		return meta.Queue{}, err
	}
	return q, nil
}

// GetQueueByName reads a queue by name within a project.
func (s *Store) GetQueueByName(_ context.Context, projectID ids.ID, name string) (meta.Queue, error) {
	var q meta.Queue
	err := s.view(func(tx *bolt.Tx) error {
		id := tx.Bucket(bNames).Get(cat(projectID, []byte(name)))
		var r *queueRec
		var err error
		if len(id) == 16 {
			r, err = getQueue(tx, ids.ID(id))
		}
		if err != nil {
			return err
		}
		if r == nil || name == "" {
			return meta.NameNotFound(meta.KindQueue, name)
		}
		q = r.Q
		return nil
	})
	if err != nil {
		return meta.Queue{}, err
	}
	return meta.CloneQueue(q), nil
}

// GetQueueByID reads a queue by id alone.
func (s *Store) GetQueueByID(_ context.Context, queueID ids.ID) (meta.Queue, error) {
	var q meta.Queue
	err := s.view(func(tx *bolt.Tx) error {
		r, err := getQueue(tx, queueID)
		if err != nil {
			return err
		}
		if r == nil {
			return meta.NotFound(meta.KindQueue, queueID)
		}
		q = r.Q
		return nil
	})
	if err != nil {
		return meta.Queue{}, err
	}
	return meta.CloneQueue(q), nil
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
	limit := pg.Size()
	var out []meta.Queue
	more := false
	err := s.view(func(tx *bolt.Tx) error {
		pre := cat(projectID, []byte(prefix))
		c := tx.Bucket(bNames).Cursor()
		k, v := c.Seek(pre)
		if after != "" {
			ak := cat(projectID, []byte(after))
			k, v = c.Seek(ak)
			if k != nil && bytes.Equal(k, ak) {
				k, v = c.Next()
			}
		}
		for ; k != nil && bytes.HasPrefix(k, pre); k, v = c.Next() {
			if len(out) == limit {
				more = true
				return nil
			}
			r, err := getQueue(tx, ids.ID(v))
			if err != nil {
				return err
			}
			if r != nil {
				out = append(out, meta.CloneQueue(r.Q))
			}
		}
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	next := ""
	if more {
		next = pagecursor.Encode(pagecursor.Cursor{List: "queues", Project: projectID.String(), After: out[len(out)-1].Name})
	}
	return out, next, nil
}

// UpdateQueue replaces the settings of q if the stored Version is q.Version.
func (s *Store) UpdateQueue(_ context.Context, q meta.Queue) (meta.Queue, error) {
	if err := q.CheckRedrive(); err != nil {
		return meta.Queue{}, err
	}
	var out meta.Queue
	err := s.update(func(tx *bolt.Tx) error {
		r, err := getQueue(tx, q.ID)
		if err != nil {
			return err
		}
		if r == nil || r.Q.ProjectID != q.ProjectID {
			return meta.NotFound(meta.KindQueue, q.ID)
		}
		if r.Q.Version != q.Version {
			return meta.ErrVersionConflict
		}
		var oldDLQ, newDLQ ids.ID
		if r.Q.Redrive != nil {
			oldDLQ = r.Q.Redrive.DeadLetterQueue
		}
		if q.Redrive != nil {
			newDLQ = q.Redrive.DeadLetterQueue
			d, err := getQueue(tx, newDLQ)
			if err != nil {
				return err
			}
			if d == nil || d.Q.ProjectID != q.ProjectID {
				return meta.DeadLetterNotFound(newDLQ)
			}
		}
		if oldDLQ != newDLQ {
			if err := adjustRefs(tx, oldDLQ, -1); err != nil {
				return err
			}
			if err := adjustRefs(tx, newDLQ, +1); err != nil {
				return err
			}
		}
		next := meta.ApplyUpdate(r.Q, q)
		// Re-read: adjustRefs may have rewritten this very record (it cannot name itself, but
		// keep the refs it has).
		cur, err := getQueue(tx, q.ID)
		if err != nil {
			return err
		}
		cur.Q = next
		out = next
		return putQueue(tx, cur)
	})
	if err != nil {
		return meta.Queue{}, err
	}
	return meta.CloneQueue(out), nil
}

// adjustRefs changes a queue's dead-letter reference count (a zero id or a missing queue is
// nothing to adjust).
func adjustRefs(tx *bolt.Tx, id ids.ID, by int) error {
	if id.IsZero() {
		return nil
	}
	r, err := getQueue(tx, id)
	if err != nil || r == nil {
		return err
	}
	r.Refs = max(r.Refs+by, 0)
	return putQueue(tx, r)
}

// DeleteQueue deletes a queue that no queue names as its dead-letter queue.
func (s *Store) DeleteQueue(_ context.Context, projectID, queueID ids.ID) (meta.Queue, error) {
	var out meta.Queue
	err := s.update(func(tx *bolt.Tx) error {
		r, err := getQueue(tx, queueID)
		if err != nil {
			return err
		}
		if r == nil || r.Q.ProjectID != projectID {
			return meta.NotFound(meta.KindQueue, queueID)
		}
		if r.Refs > 0 {
			return meta.QueueInUse(queueID)
		}
		if r.Q.Redrive != nil {
			if err := adjustRefs(tx, r.Q.Redrive.DeadLetterQueue, -1); err != nil {
				return err
			}
		}
		if err := tx.Bucket(bQueues).Delete(queueID[:]); err != nil {
			return err
		}
		out = r.Q
		return tx.Bucket(bNames).Delete(cat(projectID, []byte(r.Q.Name)))
	})
	if err != nil {
		return meta.Queue{}, err
	}
	return meta.CloneQueue(out), nil
}

// Ping checks that the file is open and readable.
func (s *Store) Ping(context.Context) error {
	return s.view(func(tx *bolt.Tx) error {
		if tx.Bucket(bProjects) == nil {
			return errors.New("buckets missing")
		}
		return nil
	})
}
