package embeddedengine

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/queueshq/queues/pkg/engine"
)

// trimChunk bounds the entries one trim transaction deletes, so a trim never holds the
// committer (and the publishes queued behind it) for long.
const trimChunk = 1000

// maxStatePage bounds a state page.
const maxStatePage = 1000

// firstHeld is the oldest sequence the topic's log holds, from memory (1 for a topic this
// engine does not know).
func (e *Engine) firstHeld(t engine.Topic) (first, last uint64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if ti := e.topics[t.ID]; ti != nil {
		return ti.first, ti.last
	}
	return 1, 0
}

// ReadLog reads entries from the disk, which holds a prefix of the log (publish order).
func (e *Engine) ReadLog(ctx context.Context, t engine.Topic, from uint64, limit int) ([]engine.LogEntry, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	if err := e.check(); err != nil {
		return nil, err
	}
	if limit <= 0 || limit > engine.MaxLogRead {
		limit = engine.MaxLogRead
	}
	first, _ := e.firstHeld(t)
	from = max(from, first) // an entry trimmed in memory may wait on disk for its commit
	var out []engine.LogEntry
	err := e.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(topicLogBucket(t.ID))
		if b == nil {
			return nil
		}
		c := b.Cursor()
		var size int64
		for k, v := c.Seek(seqKey(from)); k != nil && len(out) < limit; k, v = c.Next() {
			en, err := decodeEntry(k, v)
			if err != nil {
				return err
			}
			n := engine.PayloadBytes(en.Body, en.Attributes)
			if len(out) > 0 && size+n > engine.MaxLogReadBytes {
				break
			}
			size += n
			out = append(out, en)
		}
		return nil
	})
	if err != nil {
		return nil, engine.StoreFault("reading a topic's log", err)
	}
	return out, nil
}

// SequenceAt finds the first entry published at or after at by a binary search of the log
// (publish times rise with sequences: the engine clock assigns both under one lock).
func (e *Engine) SequenceAt(ctx context.Context, t engine.Topic, at time.Time) (uint64, error) {
	if err := ctxErr(ctx); err != nil {
		return 0, err
	}
	lo, hi := e.firstHeld(t)
	atMs := at.UnixMilli()
	found := hi + 1
	err := e.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(topicLogBucket(t.ID))
		if b == nil {
			return nil
		}
		for lo <= hi {
			mid := lo + (hi-lo)/2
			v := b.Get(seqKey(mid))
			pub := int64(1<<63 - 1) // not committed yet: published now, after at
			if v != nil {
				p, _, err := entryHead(v)
				if err != nil {
					return err
				}
				pub = p
			}
			if pub >= atMs {
				found, hi = mid, mid-1
			} else {
				lo = mid + 1
			}
		}
		return nil
	})
	if err != nil {
		return 0, engine.StoreFault("reading a topic's log", err)
	}
	return found, nil
}

// Trim drops the entries past the retention (at retention 0, those every binding passed),
// in chunks of trimChunk entries, each its own transaction, and the ended fifo dedup windows.
func (e *Engine) Trim(ctx context.Context, t engine.Topic) error {
	if err := e.check(); err != nil {
		return err
	}
	if err := e.trimDedups(t); err != nil {
		return err
	}
	for {
		if err := ctxErr(ctx); err != nil {
			return err
		}
		more, err := e.trimChunk(t)
		if err != nil || !more {
			return err
		}
	}
}

func (e *Engine) trimChunk(t engine.Topic) (more bool, err error) {
	now := e.nowMs()
	e.mu.Lock()
	ti := e.topics[t.ID]
	if ti == nil || ti.first > ti.last {
		e.mu.Unlock()
		return false, nil
	}
	upto := ti.last
	if t.Retention <= 0 {
		for _, b := range ti.bindings {
			upto = min(upto, b.Sequence)
		}
	}
	var doomed [][]byte
	var bytes int64
	err = e.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(topicLogBucket(t.ID))
		if b == nil {
			return nil
		}
		c := b.Cursor()
		for k, v := c.Seek(seqKey(ti.first)); k != nil && len(doomed) < trimChunk; k, v = c.Next() {
			if binary.BigEndian.Uint64(k) > upto {
				break
			}
			pub, size, err := entryHead(v)
			if err != nil {
				return err
			}
			if t.Retention > 0 && pub+t.Retention.Milliseconds() > now {
				break
			}
			doomed = append(doomed, append([]byte(nil), k...))
			bytes += size
		}
		return nil
	})
	if err != nil || len(doomed) == 0 {
		e.mu.Unlock()
		if err != nil {
			err = engine.StoreFault("reading a topic's log", err)
		}
		return false, err
	}
	ti.first = binary.BigEndian.Uint64(doomed[len(doomed)-1]) + 1
	ti.logBytes -= bytes
	*ti.pb -= bytes
	id, rec := append([]byte(nil), t.ID[:]...), encodeTopic(ti)
	done := e.submit(func(tx *bolt.Tx) error {
		b := tx.Bucket(topicLogBucket(t.ID))
		for _, k := range doomed {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		return tx.Bucket(bucketTopic).Put(id, rec)
	})
	e.mu.Unlock()
	return len(doomed) == trimChunk, wait(done)
}

// State reads one key's state from the disk.
func (e *Engine) State(ctx context.Context, t engine.Topic, key string) (engine.StateEntry, error) {
	if err := ctxErr(ctx); err != nil {
		return engine.StateEntry{}, err
	}
	var st engine.StateEntry
	found := false
	err := e.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(topicStateBucket(t.ID))
		if b == nil {
			return nil
		}
		v := b.Get([]byte(key))
		if v == nil {
			return nil
		}
		var err error
		st, err = decodeStateEntry([]byte(key), v)
		found = err == nil
		return err
	})
	switch {
	case err != nil:
		return engine.StateEntry{}, engine.StoreFault("reading a topic's keyed state", err)
	case !found:
		return engine.StateEntry{}, engine.NoState(key)
	}
	return st, nil
}

// StatePage pages through the states in key order; the cursor is the last key of the page
// before (base64url).
func (e *Engine) StatePage(ctx context.Context, t engine.Topic, limit int, cursor string) ([]engine.StateEntry, string, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, "", err
	}
	after, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil || (cursor != "" && len(after) == 0) {
		return nil, "", engine.ErrBadCursor
	}
	limit = min(max(limit, 1), maxStatePage)
	var out []engine.StateEntry
	more := false
	err = e.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(topicStateBucket(t.ID))
		if b == nil {
			return nil
		}
		c := b.Cursor()
		k, v := c.First()
		if cursor != "" {
			k, v = c.Seek(after)
			if k != nil && string(k) == string(after) {
				k, v = c.Next()
			}
		}
		for ; k != nil; k, v = c.Next() {
			if len(out) == limit {
				more = true
				break
			}
			st, err := decodeStateEntry(k, v)
			if err != nil {
				return err
			}
			out = append(out, st)
		}
		return nil
	})
	if err != nil {
		return nil, "", engine.StoreFault("reading a topic's keyed state", err)
	}
	next := ""
	if more {
		next = base64.RawURLEncoding.EncodeToString([]byte(out[len(out)-1].Key))
	}
	return out, next, nil
}
