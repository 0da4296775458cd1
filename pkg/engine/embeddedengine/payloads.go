package embeddedengine

import (
	"bytes"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"
)

// Payloads live in a bucket of their own per queue: a top-level bucket named "pq" ‖ queue id,
// keyed by message id. Everywhere else in the engine a payload is still addressed by
// key(queue id, message id); payloadStore splits that key.
//
// Why not one bucket keyed queue id ‖ message id, as before: bbolt keeps at least two keys in a
// leaf and rewrites a changed leaf whole, overflow pages included. The leaf holding one queue's
// newest key could also hold the next queue's first payload, so every commit for a queue of
// 64-byte messages rewrote a neighbour's 256 KiB body with it (measured beside a noisy
// neighbour: about 420 KB of pages per commit, against 18 KB alone). A bucket per queue keeps
// each queue's leaves its own. The buckets are top-level rather than nested in one parent:
// the file's root page is rewritten by every commit anyway (the state bucket changes in each),
// while a parent bucket would add a page to every commit that writes a payload.

var (
	// bucketPayloads prefixes each queue's payload bucket name; in writes it stands for the
	// payload of a key(queue id, message id) (bucketOp).
	bucketPayloads = []byte("pq")
	// bucketPayloadV0 is the single payload bucket of the earlier layout; Open moves its
	// records into the per-queue buckets and drops it (migratePayloads).
	bucketPayloadV0 = []byte("p")
)

// payloadBucketName is the name of queue q's payload bucket.
func payloadBucketName(q []byte) []byte { return slices.Concat(bucketPayloads, q) }

// isPayloadBucket reports whether a top-level bucket name is a queue's payload bucket.
func isPayloadBucket(name []byte) bool {
	return len(name) == len(bucketPayloads)+16 && bytes.HasPrefix(name, bucketPayloads)
}

// payloadFill is the fill percent of a queue's payload bucket: its keys are mostly appended
// (time-ordered message ids), so its leaves can be split nearly full.
const payloadFill = 0.9

// payloadStore reads and writes payloads within one transaction.
type payloadStore struct {
	tx *bolt.Tx
	// the queue bucket looked up last: a transaction mostly touches one queue's messages
	lastQ []byte
	last  *bolt.Bucket
}

func payloadsIn(tx *bolt.Tx) *payloadStore {
	return &payloadStore{tx: tx}
}

// queue returns q's bucket, creating it when create is set (write transactions only); nil when
// q has none.
func (p *payloadStore) queue(q []byte, create bool) (*bolt.Bucket, error) {
	if p.last != nil && bytes.Equal(p.lastQ, q) {
		return p.last, nil
	}
	name := payloadBucketName(q)
	b := p.tx.Bucket(name)
	if b == nil && create {
		var err error
		if b, err = p.tx.CreateBucket(name); err != nil {
			return nil, fmt.Errorf("creating the payload bucket of queue %x: %w", q, err)
		}
	}
	if b != nil {
		b.FillPercent = payloadFill
		p.lastQ, p.last = q, b
	}
	return b, nil
}

// get returns the payload at k (queue id ‖ message id), or nil. The bytes are bolt's: valid
// only inside the transaction.
func (p *payloadStore) get(k []byte) []byte {
	if len(k) != 32 {
		return nil
	}
	b, _ := p.queue(k[:16], false)
	if b == nil {
		return nil
	}
	return b.Get(k[16:])
}

// put stores v at k; bolt keeps both slices until the commit, so neither may be reused.
func (p *payloadStore) put(k, v []byte) error {
	if len(k) != 32 {
		return fmt.Errorf("payload key of %d bytes", len(k))
	}
	b, err := p.queue(k[:16], true)
	if err != nil {
		return err
	}
	return b.Put(k[16:], v)
}

func (p *payloadStore) del(k []byte) error {
	if len(k) != 32 {
		return nil
	}
	b, _ := p.queue(k[:16], false)
	if b == nil {
		return nil
	}
	return b.Delete(k[16:])
}

// dropIfEmpty deletes q's bucket when it holds no payload, so deleted queues leave nothing.
func (p *payloadStore) dropIfEmpty(q []byte) error {
	b, _ := p.queue(q, false)
	if b == nil {
		return nil
	}
	if k, _ := b.Cursor().First(); k != nil {
		return nil
	}
	p.lastQ, p.last = nil, nil
	return p.tx.DeleteBucket(payloadBucketName(q))
}

const (
	// A migration transaction moves at most this many records or bytes, so a large store
	// migrates in bounded transactions and an interrupted migration resumes at the next Open.
	migrateChunkRecords = 2000
	migrateChunkBytes   = 32 << 20
)

// migratePayloads moves the earlier layout's payloads into per-queue buckets. Each chunk
// moves and deletes its records in one transaction, so a crash leaves every payload in
// exactly one of the two layouts, and the next Open goes on where it stopped.
func migratePayloads(db *bolt.DB) error {
	for {
		more := false
		err := db.Update(func(tx *bolt.Tx) error {
			old := tx.Bucket(bucketPayloadV0)
			if old == nil {
				return nil
			}
			ps := payloadsIn(tx)
			c := old.Cursor()
			n, size := 0, 0
			// Always from First: bolt's cursor may skip a key when the one before was deleted.
			for k, v := c.First(); k != nil; k, v = c.First() {
				if n == migrateChunkRecords || size >= migrateChunkBytes {
					more = true
					return nil
				}
				if len(k) == 32 {
					// copies: the old pages may be unmapped when the commit grows the file
					if err := ps.put(slices.Clone(k), slices.Clone(v)); err != nil {
						return err
					}
				}
				if err := c.Delete(); err != nil {
					return err
				}
				n, size = n+1, size+len(v)
			}
			return tx.DeleteBucket(bucketPayloadV0)
		})
		if err != nil {
			return fmt.Errorf("moving payloads into per-queue buckets: %w", err)
		}
		if !more {
			return nil
		}
	}
}
