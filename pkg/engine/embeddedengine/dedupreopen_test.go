package embeddedengine_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"testing"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/engine/embeddedengine"
	"github.com/queueshq/queues/pkg/engine/enginetest"
	"github.com/queueshq/queues/pkg/ids"
)

// TestDedupAcrossReopen: the dedup windows read back at Open keep what sends answer: a
// duplicate sent after a restart answers the original's id and sequence number, and an
// explicit dedup id spelling a content-based send's hash is still that send's.
func TestDedupAcrossReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "messages.db")
	clk := enginetest.NewClock()
	ctx := context.Background()
	q := engine.Queue{ID: ids.New(), Project: ids.New(), Type: engine.FIFO, ContentBasedDedup: true}
	e, err := embeddedengine.Open(path, clk, embeddedengine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.CreateQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	first, err := e.Send(ctx, q, []engine.Message{{Body: "pad", GroupID: "g", DedupID: "pad"}, {Body: "alpha", GroupID: "g", DedupID: "d1"}, {Body: "beta", GroupID: "g"}})
	if err != nil || first[1].SequenceNumber == 0 || first[2].SequenceNumber == 0 {
		t.Fatalf("first sends %+v, %v", first, err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = open(t, path, clk)
	sum := sha256.Sum256([]byte("beta"))
	again, err := e.Send(ctx, q, []engine.Message{{Body: "other", GroupID: "h", DedupID: "d1"}, {Body: "x", GroupID: "h", DedupID: hex.EncodeToString(sum[:])}})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range again {
		orig := first[i+1]
		if !r.Duplicate || r.MessageID != orig.MessageID || r.SequenceNumber != orig.SequenceNumber {
			t.Fatalf("send %d after reopen %+v, want a duplicate of %+v", i, r, orig)
		}
	}
}
