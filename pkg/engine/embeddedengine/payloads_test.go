package embeddedengine

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/queueshq/queues/pkg/boltformat"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/engine/enginetest"
	"github.com/queueshq/queues/pkg/ids"
)

func openAt(t *testing.T, path string) *Engine {
	t.Helper()
	e, err := Open(path, enginetest.NewClock(), Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return e
}

func testQueue(t *testing.T, e *Engine) engine.Queue {
	t.Helper()
	q := engine.Queue{ID: ids.New(), Type: engine.Standard, VisibilityTimeout: time.Minute, Retention: time.Hour}
	if err := e.CreateQueue(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	return q
}

func sendBodies(t *testing.T, e *Engine, q engine.Queue, bodies []string) {
	t.Helper()
	for c := range slices.Chunk(bodies, 10) {
		ms := make([]engine.Message, len(c))
		for i, b := range c {
			ms[i] = engine.Message{Body: b}
		}
		if _, err := e.Send(context.Background(), q, ms); err != nil {
			t.Fatal(err)
		}
	}
}

// toFlatLayout rewrites the file into the layout before payload buckets per queue: one bucket
// "p" keyed queue id ‖ message id.
func toFlatLayout(t *testing.T, path string) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		// A file of that layout predates the format stamp (pkg/boltformat).
		if err := tx.DeleteBucket([]byte("format")); err != nil && !errors.Is(err, bolterrors.ErrBucketNotFound) {
			return err
		}
		flat, err := tx.CreateBucket(bucketPayloadV0)
		if err != nil {
			return err
		}
		var names [][]byte
		if err := tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			if !isPayloadBucket(name) {
				return nil
			}
			names = append(names, slices.Clone(name))
			return b.ForEach(func(m, v []byte) error {
				return flat.Put(slices.Concat(name[len(bucketPayloads):], m), slices.Clone(v))
			})
		}); err != nil {
			return err
		}
		for _, n := range names {
			if err := tx.DeleteBucket(n); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestPayloadMigration: a file in the flat layout opens with every payload in its queue's
// bucket, in more than one migration transaction, and the flat bucket gone.
func TestPayloadMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "messages.db")
	e := openAt(t, path)
	qs := []engine.Queue{testQueue(t, e), testQueue(t, e)}
	want := map[ids.ID][]string{}
	for i, q := range qs {
		for j := range migrateChunkRecords + 300 {
			want[q.ID] = append(want[q.ID], fmt.Sprintf("q%d-%d", i, j))
		}
		sendBodies(t, e, q, want[q.ID])
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	toFlatLayout(t, path)

	e = openAt(t, path)
	defer e.Close()
	if err := e.db.View(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketPayloadV0) != nil {
			return fmt.Errorf("the flat payload bucket is still there after Open")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if v, err := boltformat.Version(e.db); err != nil || v != FormatVersion {
		t.Fatalf("after the migration the file is stamped %d (%v), want %d", v, err, FormatVersion)
	}
	for _, q := range qs {
		var got []string
		for {
			r, err := e.Receive(ctx, q, engine.ReceiveRequest{Max: 10, Visibility: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Messages) == 0 {
				break
			}
			for _, m := range r.Messages {
				got = append(got, m.Body)
			}
		}
		slices.Sort(got)
		w := slices.Sorted(slices.Values(want[q.ID]))
		if !slices.Equal(got, w) {
			t.Fatalf("queue %s: received %d bodies after the migration, want %d (first %q)", q.ID, len(got), len(w), got[:min(3, len(got))])
		}
	}
}

// TestNeighbourPagesPerCommit: a queue of small messages beside a queue holding large payloads
// writes pages for its own messages only. With one payload bucket for all queues, the leaf
// holding the small queue's keys also held the neighbour's first large payload, so every
// small commit rewrote it.
func TestNeighbourPagesPerCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := openAt(t, filepath.Join(t.TempDir(), "messages.db"))
	defer e.Close()
	small := testQueue(t, e) // created first: its ids sort before the large queue's
	large := testQueue(t, e)
	big := strings.Repeat("x", 256<<10)
	sendBodies(t, e, large, []string{big, big, big, big})

	st := e.db.Stats()
	before := st.TxStats.GetPageAlloc()
	const cycles = 20
	for range cycles {
		sendBodies(t, e, small, []string{"sixty-four bytes or so"})
		r, err := e.Receive(ctx, small, engine.ReceiveRequest{Max: 1, Visibility: time.Minute})
		if err != nil || len(r.Messages) != 1 {
			t.Fatalf("receive: %v, %d messages", err, len(r.Messages))
		}
		if _, err := e.Ack(ctx, small, []engine.Delivery{r.Messages[0].Delivery}); err != nil {
			t.Fatal(err)
		}
	}
	// A cycle is three commits of a few small pages each; rewriting one 256 KiB payload per
	// commit would be 60 × 256 KiB.
	const bound = cycles * 3 * 64 << 10
	st = e.db.Stats()
	got := st.TxStats.GetPageAlloc() - before
	t.Logf("pages allocated: %d bytes", got)
	if got > bound {
		t.Fatalf("%d cycles of a small queue allocated %d bytes of pages beside a large neighbour, want at most %d", cycles, got, bound)
	}
}

// TestDeletedQueueDropsPayloadBucket: once a deleted queue's records are cleaned, its payload
// bucket is gone too.
func TestDeletedQueueDropsPayloadBucket(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := openAt(t, filepath.Join(t.TempDir(), "messages.db"))
	defer e.Close()
	q := testQueue(t, e)
	bodies := make([]string, cleanChunk+5) // more than one clean-up chunk
	for i := range bodies {
		bodies[i] = fmt.Sprint(i)
	}
	sendBodies(t, e, q, bodies)
	if err := e.DeleteQueue(ctx, q.ID); err != nil {
		t.Fatal(err)
	}
	for {
		more, err := e.cleanChunk(q.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !more {
			break
		}
	}
	if err := e.db.View(func(tx *bolt.Tx) error {
		if tx.Bucket(payloadBucketName(q.ID[:])) != nil {
			return fmt.Errorf("the deleted queue's payload bucket is still there")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
