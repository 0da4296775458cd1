package sweeper_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/engine/embeddedengine"
	"github.com/queueshq/queues/pkg/engine/enginetest"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/meta/memmeta"
	"github.com/queueshq/queues/pkg/sweeper"
)

// counting counts the metadata reads a sweep makes.
type counting struct {
	meta.Store
	lists, gets atomic.Int64
}

func (c *counting) ListQueues(ctx context.Context, p ids.ID, prefix string, page meta.Page) ([]meta.Queue, string, error) {
	c.lists.Add(1)
	return c.Store.ListQueues(ctx, p, prefix, page)
}

func (c *counting) ListProjects(ctx context.Context, page meta.Page) ([]meta.Project, string, error) {
	c.lists.Add(1)
	return c.Store.ListProjects(ctx, page)
}

func (c *counting) GetQueueByID(ctx context.Context, id ids.ID) (meta.Queue, error) {
	c.gets.Add(1)
	return c.Store.GetQueueByID(ctx, id)
}

// A round reads the metadata of the queues with work only, whatever the number of idle queues,
// and does their work; a queue deleted from the metadata has its leftovers deleted.
func TestOnceSweepsActiveQueuesOnly(t *testing.T) {
	ctx := context.Background()
	clk := enginetest.NewClock()
	eng, err := embeddedengine.Open(filepath.Join(t.TempDir(), "m.db"), clk, embeddedengine.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	store := &counting{Store: memmeta.New()}
	p := meta.Project{ID: ids.New(), Name: "p", CreatedAt: clk.Now()}
	if err := store.CreateProject(ctx, p); err != nil {
		t.Fatal(err)
	}
	var busy, gone meta.Queue
	for i := range 200 {
		q := meta.Queue{ID: ids.New(), ProjectID: p.ID, Name: fmt.Sprintf("q%03d", i), Type: "standard", CreatedAt: clk.Now(),
			VisibilityTimeoutSeconds: 30, RetentionSeconds: 60}
		if err := store.CreateQueue(ctx, q); err != nil {
			t.Fatal(err)
		}
		if err := eng.CreateQueue(ctx, q.Engine(nil)); err != nil {
			t.Fatal(err)
		}
		switch i {
		case 7:
			busy = q
		case 8:
			gone = q
		}
	}
	for _, q := range []meta.Queue{busy, gone} {
		if _, err := eng.Send(ctx, q.Engine(nil), []engine.Message{{Body: "expires"}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := store.DeleteQueue(ctx, p.ID, gone.ID); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Minute)
	if err := sweeper.Once(ctx, store, eng); err != nil {
		t.Fatal(err)
	}
	if l, g := store.lists.Load(), store.gets.Load(); l != 0 || g != 2 {
		t.Fatalf("a round listed %d times and read %d queues, want 0 and 2 (the queues with work of 200)", l, g)
	}
	st, err := eng.Stats(ctx, busy.Engine(nil))
	if err != nil || st.Visible+st.InFlight+st.Delayed != 0 {
		t.Fatalf("the expired message is still there: %+v, %v", st, err)
	}
	if n, err := eng.StoredBytes(ctx, p.ID); err != nil || n != 0 {
		t.Fatalf("StoredBytes after the round = %d, %v; want 0 (the deleted queue's message gone too)", n, err)
	}
	active, err := eng.ActiveQueues(ctx)
	if err != nil || len(active) != 0 {
		t.Fatalf("active queues after the round: %v, %v; want none", active, err)
	}
	store.gets.Store(0)
	if err := sweeper.Once(ctx, store, eng); err != nil || store.gets.Load() != 0 {
		t.Fatalf("an idle round read %d queues (%v), want none", store.gets.Load(), err)
	}
}
