package embeddedengine_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/engine/enginetest"
	"github.com/queueshq/queues/pkg/filter"
	"github.com/queueshq/queues/pkg/ids"
)

// scanCap is the byte bound the tests hold the engine to (filter.MaxScanBytes, written out so
// that raising the constant fails them).
const scanCap = 4 << 20

func bigQueue(t *testing.T, e engine.Engine, n, size int) engine.Queue {
	t.Helper()
	ctx := context.Background()
	q := engine.Queue{ID: ids.New(), Type: engine.Standard, VisibilityTimeout: 30 * time.Second, Retention: 24 * time.Hour}
	if err := e.CreateQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	body := strings.Repeat("x", size)
	for range n {
		if _, err := e.Send(ctx, q, []engine.Message{{Body: body, Attributes: map[string]string{"color": "red"}}}); err != nil {
			t.Fatal(err)
		}
	}
	return q
}

// TestFilteredReceiveScanBytes: a filtered receive over big messages that do not match looks
// at most filter.MaxScanBytes of them (and one more) per call; before the budget it looked at
// every candidate up to filter.MaxCandidates (60 messages of 200 KiB: 12 MiB).
func TestFilteredReceiveScanBytes(t *testing.T) {
	t.Parallel()
	e := open(t, filepath.Join(t.TempDir(), "q.db"), enginetest.NewClock())
	const n, size = 60, 200 << 10
	q := bigQueue(t, e, n, size)
	f := &filter.Filter{Attributes: map[string][]string{"color": {"blue"}}}
	before := e.ScanBytes()
	res, err := e.Receive(context.Background(), q, engine.ReceiveRequest{Max: 10, Visibility: time.Minute, Filter: f})
	if err != nil {
		t.Fatal(err)
	}
	read := e.ScanBytes() - before
	t.Logf("one filtered receive looked at %d bytes", read)
	if len(res.Messages) != 0 {
		t.Fatalf("received %d, want 0", len(res.Messages))
	}
	if read == 0 || read > scanCap+size+64 {
		t.Fatalf("one filtered receive looked at %d bytes, want 1..%d", read, scanCap+size+64)
	}
}

// TestBrowsePageByteCap: a browse page holds at most filter.MaxScanBytes of messages (and the
// one that crossed it), and paging on still lists every message once.
func TestBrowsePageByteCap(t *testing.T) {
	t.Parallel()
	e := open(t, filepath.Join(t.TempDir(), "q.db"), enginetest.NewClock())
	const n, size = 60, 200 << 10
	q := bigQueue(t, e, n, size)
	seen := map[ids.ID]bool{}
	cursor, pages := "", 0
	for {
		page, err := e.Browse(context.Background(), q, engine.BrowseRequest{State: engine.StateVisible, Limit: 1000, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		bytes := 0
		for _, m := range page.Messages {
			bytes += len(m.Body)
			if seen[m.MessageID] {
				t.Fatalf("%s listed twice", m.MessageID)
			}
			seen[m.MessageID] = true
		}
		if bytes > scanCap+size {
			t.Fatalf("a page of %d bytes, want at most %d", bytes, scanCap+size)
		}
		if cursor = page.NextCursor; cursor == "" || pages > n {
			break
		}
	}
	t.Logf("%d messages in %d pages", len(seen), pages)
	if len(seen) != n {
		t.Fatalf("paged through %d messages, want %d", len(seen), n)
	}
}
