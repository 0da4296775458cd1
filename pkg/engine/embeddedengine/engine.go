// Package embeddedengine is the queue engine of embedded mode (`queues serve`): one process, no
// Redis, every message in a bbolt file under the data directory.
//
// Design: an in-memory index over a durable store, the way AMPS queues keep a small per-message
// state in memory over their transaction log. Every queue's messages are indexed in memory
// (index.go: heaps by visibility time, by expiry, fifo groups, dedup windows; about 150 bytes
// per message) and every change is written to bbolt and fsynced before the operation answers.
// Bodies and attributes stay on disk and are read when a message is handed out. Start-up
// rebuilds the index from the state records.
//
// Durability and order: an operation changes the index under the engine's lock and, still
// under it, queues its writes to the one committer goroutine, which applies everything queued
// in one bbolt transaction (group commit: concurrent requests share an fsync). The operation
// answers once its transaction committed. Writes reach the disk in the order the index saw
// them, so a receive's commit can never precede the commit of the send it received. A failed
// commit leaves the index ahead of the disk: the engine then refuses every operation
// (Unavailable) until it is reopened, which rebuilds the index from what the disk holds.
//
// Semantics follow the Redis engine (package redisengine) and the conformance suite: stale
// handles, dead-letter moves keeping messageId, body, attributes and groupId with receiveCount
// restarting and retention counted from the move, one purge per 60 s by the engine clock.
// A dead-letter move is one transaction here (no outbox). Queues have one partition
// (Stats.Partitions = 1): a single process gains nothing from more, and fifo order is simplest
// to keep in one. Time is the injected clock's everywhere.
package embeddedengine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queueshq/queues/pkg/engine/internal/watch"

	bolt "go.etcd.io/bbolt"

	"github.com/queueshq/queues/pkg/boltformat"
	"github.com/queueshq/queues/pkg/clock"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/filter"
	"github.com/queueshq/queues/pkg/ids"
)

var (
	bucketState = []byte("s")
	bucketQueue = []byte("q")
	bucketDedup = []byte("d")
	// bucketBarrier marks barrier messages (barrier.go): key queue id ‖ message id.
	bucketBarrier = []byte("b")
	bucketMoved   = []byte("mv") // move-task counters (move.go)
)

const (
	// exactCountLimit is the range in which counts are promised exact.
	exactCountLimit = 100_000
	// defaultRetention applies when a Queue carries no retention (the API's default).
	defaultRetention = 345_600 * time.Second
	// maxCommitOps bounds the operations one transaction groups.
	maxCommitOps = 512
	// cleanChunk is how many purged records one cleaning transaction deletes.
	cleanChunk = 2000
	// sweepChunk is how many expired messages one sweep transaction deletes.
	sweepChunk = 2000
)

// Options tune an Engine. The zero value is usable.
type Options struct {
	// Logger receives failures of background work (default slog.Default()).
	Logger *slog.Logger
	// NoSync skips fsync (tests and benchmarks of the index only; never in serve).
	NoSync bool
}

// Engine implements engine.Engine on a bbolt file. It is safe for concurrent use.
type Engine struct {
	db   *bolt.DB
	clk  clock.Clock
	log  *slog.Logger
	path string

	mu     sync.Mutex
	queues map[ids.ID]*queue
	// projects holds each project's stored bytes (the zero id: queues whose project no
	// operation has named yet). Derived from the records at start-up, then moved by the index
	// (queue.add, remove, clear) under mu, so it is exact at every moment.
	projects map[ids.ID]*int64

	cmu      sync.Mutex
	pending  []*commitOp
	wake     chan struct{}
	broken   error // set once a commit failed; guarded by cmu
	closing  bool
	stopped  chan struct{}
	cleaning chan ids.ID

	watch watch.Hub // waiting receives of this process

	// scanBytes counts the bytes of stored messages filtered receives looked at (filter.go),
	// for tests that bound it.
	scanBytes atomic.Int64

	// cons holds each queue's consumers (consumers.go); guarded by mu.
	cons map[ids.ID]map[string]*consumerRec

	// Topics (topics.go), guarded by mu: each topic's in-memory part, the copies'
	// high-water marks by queue and binding, and the fan-out leases (in this process only).
	topics map[ids.ID]*topic
	marks  map[ids.ID]map[ids.ID]uint64
	leases map[ids.ID]topicLease
	twatch watch.Hub // watchers of topics' publishes

	closeOnce sync.Once
	bg        sync.WaitGroup
	bgStop    chan struct{}
}

var _ engine.Engine = (*Engine)(nil)

// commitOp is one operation's writes, applied in the committer's transaction.
type commitOp struct {
	apply func(tx *bolt.Tx) error
	done  chan error
}

// Open opens (creating if needed) the engine's file at path and rebuilds the index from it.
func Open(path string, clk clock.Clock, opts Options) (*Engine, error) {
	if clk == nil {
		return nil, errors.New("embeddedengine: a clock is required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{
		Timeout:      2 * time.Second, // another process holds the file
		FreelistType: bolt.FreelistMapType,
		// The free list is not written with each commit (etcd's setting): every commit of
		// the group committer wrote its page and grew it, for a list that Open rebuilds
		// from the pages themselves after a crash anyway. Data and meta pages are still
		// fdatasynced before a commit answers.
		NoFreelistSync: true,
		NoSync:         opts.NoSync,
	})
	if err != nil {
		return nil, fmt.Errorf("embeddedengine: opening %s: %w", path, err)
	}
	e := &Engine{
		db: db, clk: clk, log: opts.Logger, path: path,
		queues:   map[ids.ID]*queue{},
		projects: map[ids.ID]*int64{},
		topics:   map[ids.ID]*topic{},
		marks:    map[ids.ID]map[ids.ID]uint64{},
		leases:   map[ids.ID]topicLease{},
		wake:     make(chan struct{}, 1),
		stopped:  make(chan struct{}),
		cleaning: make(chan ids.ID, 1024),
		bgStop:   make(chan struct{}),
	}
	// Refuse a newer format before writing anything, migrate, then stamp (pkg/boltformat).
	if err := boltformat.CheckAndStamp(db, FormatVersion, func() error { return prepare(db) }); err != nil {
		db.Close()
		return nil, fmt.Errorf("embeddedengine: %w", err)
	}
	dirty, err := e.load()
	if err == nil {
		err = e.loadTopics()
	}
	if err != nil {
		db.Close()
		return nil, err
	}
	go e.committer()
	e.bg.Add(1)
	go e.cleaner()
	for _, q := range dirty {
		e.cleaning <- q
	}
	return e, nil
}

// FormatVersion is the layout of the engine's file that this binary writes (pkg/boltformat):
// 1 is buckets s, q, d, b, mv and a payload bucket per queue (pq‖queue id), and the topics'
// buckets t, tb, td, hw and a log and a state bucket per topic (tl‖, ts‖topic id;
// topiccodec.go). The topics' buckets were added within version 1: a binary that predates
// them ignores them, and Open creates them in a file that lacks them. Open migrates older
// files to it and refuses newer ones.
const FormatVersion = 1

// prepare creates the buckets and migrates an older layout's payloads (migratePayloads).
func prepare(db *bolt.DB) error {
	if err := db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketState, bucketQueue, bucketDedup, bucketBarrier, bucketMoved, bucketParks,
			bucketTopic, bucketBindings, bucketTopicDedup, bucketMarks} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return err
	}
	return migratePayloads(db)
}

// Close finishes queued commits and closes the file. The engine is unusable afterwards.
func (e *Engine) Close() error {
	var err error
	e.closeOnce.Do(func() {
		close(e.bgStop)
		e.bg.Wait()
		e.cmu.Lock()
		e.closing = true
		e.cmu.Unlock()
		e.signal()
		<-e.stopped
		err = e.db.Close()
	})
	return err
}

// Err is nil while the engine is usable (readiness).
func (e *Engine) Err() error {
	e.cmu.Lock()
	defer e.cmu.Unlock()
	if e.broken != nil {
		return e.broken
	}
	if e.closing {
		return errClosed
	}
	return nil
}

var errClosed = &engine.Failure{Err: engine.ErrUnavailable, Op: "the embedded store is closed"}

func (e *Engine) signal() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// submit queues writes; call it under e.mu so the disk sees writes in index order. The
// caller waits on the returned channel after releasing e.mu.
func (e *Engine) submit(apply func(tx *bolt.Tx) error) <-chan error {
	op := &commitOp{apply: apply, done: make(chan error, 1)}
	e.cmu.Lock()
	switch {
	case e.broken != nil:
		op.done <- e.broken
	case e.closing:
		op.done <- errClosed
	default:
		e.pending = append(e.pending, op)
	}
	e.cmu.Unlock()
	e.signal()
	return op.done
}

// wait waits for a submitted commit. The caller's cancellation does not abandon it: the index
// already changed, so the answer must wait for the disk.
func wait(done <-chan error) error { return <-done }

func (e *Engine) committer() {
	defer close(e.stopped)
	for {
		e.cmu.Lock()
		for len(e.pending) == 0 {
			if e.closing {
				e.cmu.Unlock()
				return
			}
			e.cmu.Unlock()
			<-e.wake
			e.cmu.Lock()
		}
		n := min(len(e.pending), maxCommitOps)
		ops := slices.Clone(e.pending[:n])
		e.pending = e.pending[n:]
		if len(e.pending) == 0 {
			e.pending = nil
		}
		e.cmu.Unlock()
		err := e.db.Update(func(tx *bolt.Tx) error {
			tx.Bucket(bucketState).FillPercent = 0.9 // keys are mostly appended (time-ordered ids)
			for _, op := range ops {
				if err := op.apply(tx); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			e.log.Error("embeddedengine: commit failed; the engine refuses work until reopened", "error", err)
			err = engine.StoreUnavailable("embedded store write", err)
			e.cmu.Lock()
			e.broken = err
			rest := e.pending
			e.pending = nil
			e.cmu.Unlock()
			for _, op := range rest {
				op.done <- err
			}
		}
		for _, op := range ops {
			op.done <- err
		}
	}
}

// check refuses work once a commit failed.
func (e *Engine) check() error {
	e.cmu.Lock()
	defer e.cmu.Unlock()
	if e.broken != nil {
		return e.broken
	}
	if e.closing {
		return errClosed
	}
	return nil
}

// load rebuilds the index. It returns queues with purged records still on disk.
func (e *Engine) load() ([]ids.ID, error) {
	now := e.nowMs()
	var dirty []ids.ID
	err := e.db.View(func(tx *bolt.Tx) error {
		if err := tx.Bucket(bucketQueue).ForEach(func(k, v []byte) error {
			qid, ok := ids.FromBytes(k)
			rec, err := decodeQueue(v)
			if !ok || err != nil {
				e.log.Error("embeddedengine: skipping a malformed queue record", "key", fmt.Sprintf("%x", k))
				return nil //nolint:nilerr // one bad record must not stop the others from loading
			}
			q := newQueue(qid, rec.fifo, e.projectBytes(rec.project))
			q.project = rec.project
			q.nextSeq, q.purgeSeq, q.lastPurge = max(rec.nextSeq, 1), rec.purgeSeq, rec.lastPurge
			e.queues[qid] = q
			return nil
		}); err != nil {
			return err
		}
		loadParks(tx, e.queues)
		groups := map[*queue]map[string][]*msg{}
		isDirty := map[ids.ID]bool{}
		ps := payloadsIn(tx)
		c := tx.Bucket(bucketState).Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			qid, ok1 := ids.FromBytes(k[:min(16, len(k))])
			mid, ok2 := ids.FromBytes(k[min(16, len(k)):])
			m := &msg{id: mid, hidx: -1, xidx: -1}
			g, ckey, err := decodeState(v, m)
			if !ok1 || !ok2 || err != nil {
				e.log.Error("embeddedengine: skipping a malformed message record", "key", fmt.Sprintf("%x", k))
				continue
			}
			q := e.queues[qid]
			if q == nil {
				q = newQueue(qid, g != "", e.projectBytes(ids.ID{}))
				e.queues[qid] = q
			}
			if m.seq < q.purgeSeq {
				isDirty[qid] = true
				continue
			}
			if m.size == sizeUnknown {
				m.size = sizeOfRecord(ps.get(k))
			}
			q.nextSeq = max(q.nextSeq, m.seq+1)
			if q.fifo {
				if groups[q] == nil {
					groups[q] = map[string][]*msg{}
				}
				groups[q][g] = append(groups[q][g], m)
				continue
			}
			q.add(m, "", now)
			if ckey != "" && m.attempt == 0 {
				if pl, err := decodePayload(ps.get(k)); err == nil {
					q.index(m, ckey, pl.Body, pl.Attributes)
				}
			}
		}
		for q, gs := range groups {
			for g, ms := range gs {
				slices.SortFunc(ms, func(a, b *msg) int { return cmpU64(a.seq, b.seq) })
				for _, m := range ms {
					q.add(m, g, now)
				}
			}
		}
		for qid := range isDirty {
			dirty = append(dirty, qid)
		}
		loadBarriers(tx, e.queues, now)
		dc := tx.Bucket(bucketDedup).Cursor()
		for k, v := dc.First(); k != nil; k, v = dc.Next() {
			qid, ok := ids.FromBytes(k[:min(16, len(k))])
			d, err := decodeDedup(v)
			q := e.queues[qid]
			if !ok || err != nil || q == nil || d.expiresAt <= now {
				continue // Sweep deletes expired ones
			}
			dk := string(k[16:])
			q.dedup[dk] = d
			q.dedupQ = append(q.dedupQ, dedupItem{key: dk, expiresAt: d.expiresAt})
		}
		for _, q := range e.queues {
			slices.SortFunc(q.dedupQ, func(a, b dedupItem) int { return cmpI64(a.expiresAt, b.expiresAt) })
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("embeddedengine: loading %s: %w", e.path, err)
	}
	return dirty, nil
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpI64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// cleaner deletes the records of purged and deleted queues in the background, in chunks.
func (e *Engine) cleaner() {
	defer e.bg.Done()
	for {
		select {
		case <-e.bgStop:
			return
		case qid := <-e.cleaning:
			for {
				more, err := e.cleanChunk(qid)
				if err != nil {
					e.log.Warn("embeddedengine: cleaning purged messages", "queue", qid.String(), "error", err)
					break
				}
				if !more {
					break
				}
				select {
				case <-e.bgStop:
					return
				default:
				}
			}
		}
	}
}

// cleanChunk deletes up to cleanChunk purged records of a queue; more reports whether some
// may remain.
func (e *Engine) cleanChunk(qid ids.ID) (more bool, err error) {
	e.mu.Lock()
	q := e.queues[qid]
	var purgeSeq uint64
	if q != nil {
		purgeSeq = q.purgeSeq
	}
	var doomed [][]byte
	if purgeSeq > 0 {
		err = e.db.View(func(tx *bolt.Tx) error {
			c := tx.Bucket(bucketState).Cursor()
			for k, v := c.Seek(qid[:]); k != nil && len(doomed) < cleanChunk; k, v = c.Next() {
				if len(k) < 16 || ids.ID(k[:16]) != qid {
					break
				}
				var m msg
				if _, _, derr := decodeState(v, &m); derr != nil || m.seq < purgeSeq {
					doomed = append(doomed, slices.Clone(k))
				}
			}
			return nil
		})
	}
	if err != nil || purgeSeq == 0 {
		e.mu.Unlock()
		return false, err
	}
	// Even with nothing doomed the commit runs: the chunk before may have been the last full one.
	done := e.submit(func(tx *bolt.Tx) error {
		s, p := tx.Bucket(bucketState), payloadsIn(tx)
		for _, k := range doomed {
			if err := s.Delete(k); err != nil {
				return err
			}
			if err := p.del(k); err != nil {
				return err
			}
			if err := tx.Bucket(bucketBarrier).Delete(k); err != nil {
				return err
			}
		}
		if len(doomed) < cleanChunk {
			return p.dropIfEmpty(qid[:]) // a deleted queue leaves no bucket behind
		}
		return nil
	})
	e.mu.Unlock()
	return len(doomed) == cleanChunk, wait(done)
}

// nowMs is the engine clock in unix milliseconds.
func (e *Engine) nowMs() int64 { return e.clk.Now().UnixMilli() }

func fromMs(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

func timeOrZero(ms int64) (t time.Time) {
	if ms > 0 {
		t = fromMs(ms)
	}
	return t
}

func retention(q engine.Queue) time.Duration {
	if q.Retention <= 0 {
		return defaultRetention
	}
	return q.Retention
}

// queueOf returns the index of q, creating it (a queue's state appears with its first use,
// as in the Redis engine). Call with e.mu held.
func (e *Engine) queueOf(id ids.ID, t engine.Type) *queue {
	q := e.queues[id]
	if q == nil {
		q = newQueue(id, t == engine.FIFO, e.projectBytes(ids.ID{}))
		e.queues[id] = q
	}
	return q
}

// queueFor is queueOf bound to q's project: a queue first seen without one (records written
// before queues knew their project) moves its bytes to the project's total. Call with e.mu
// held; the caller persists the queue record (putQueue) when it changed.
func (e *Engine) queueFor(q engine.Queue) (qi *queue, changed bool) {
	qi = e.queueOf(q.ID, q.Type)
	if q.Project.IsZero() || qi.project == q.Project {
		return qi, false
	}
	*qi.pb -= qi.bytes
	qi.project, qi.pb = q.Project, e.projectBytes(q.Project)
	*qi.pb += qi.bytes
	return qi, true
}

// projectBytes returns the project's stored-bytes total. Call with e.mu held.
func (e *Engine) projectBytes(p ids.ID) *int64 {
	n := e.projects[p]
	if n == nil {
		n = new(int64)
		e.projects[p] = n
	}
	return n
}

// sizeOfRecord is the stored bytes of a payload record (0 when it is missing or malformed).
func sizeOfRecord(raw []byte) uint32 {
	pl, err := decodePayload(raw)
	if err != nil {
		return 0
	}
	return uint32(engine.PayloadBytes(pl.Body, pl.Attributes))
}

// StoredBytes returns the project's stored bytes, exact at the moment of the call.
func (e *Engine) StoredBytes(ctx context.Context, project ids.ID) (int64, error) {
	if err := ctxErr(ctx); err != nil {
		return 0, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if n := e.projects[project]; n != nil {
		return *n, nil
	}
	return 0, nil
}

// Watch registers a watcher of the queue's wake-ups (sends, releases, settles that unblock a
// fifo group, purge, delete, dead-letter arrivals).
func (e *Engine) Watch(q ids.ID) (<-chan struct{}, func()) { return e.watch.Watch(q) }

// WatchFilter is Watch for a receive with filter f: a send signals it only when it may hold a
// message f selects (filter.WakeDigests).
func (e *Engine) WatchFilter(q ids.ID, f *filter.Filter) (<-chan struct{}, func()) {
	return e.watch.WatchFilter(q, f)
}

func (e *Engine) notify(q ids.ID) { e.watch.Notify(q) }

// ctxErr passes the caller's cancellation through before any change.
func ctxErr(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return nil
}
