package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/clock"
	"github.com/queueshq/queues/services/queues/stack"
)

// TestSkewedReplicaRefuses: an API replica whose clock is 60 s ahead is not ready and answers
// 503 rather than redeliver an in-flight message early; once its clock is right it serves.
func TestSkewedReplicaRefuses(t *testing.T) {
	requireStack(t, "a replica with its own clock")
	ahead := clock.NewSkewed(clock.Real{}, time.Minute)
	srv, closeSrv, err := w.replica(context.Background(), stack.Options{Clock: ahead})
	if err != nil {
		t.Fatal(err)
	}
	defer closeSrv()
	tn := newTenant(t)
	skewed := newClient(t, srv, tn.token)
	tn.queue(t, "skew", map[string]any{"visibilityTimeoutSeconds": 30})
	tn.a.send(t, "skew", "held")
	if got := tn.a.receive(t, "skew", nil); len(got) != 1 {
		t.Fatalf("received %d, want 1", len(got))
	}
	skewed.do("GET", "/readyz", nil).must(t, 503)
	skewed.do("POST", "/v1/queues/skew/receive", map[string]any{}).fails(t, 503, "unavailable", "")
	skewed.do("POST", "/v1/queues/skew/messages", map[string]any{"messages": []map[string]any{{"body": "x"}}}).fails(t, 503, "unavailable", "")
	ahead.Set(0)
	for deadline := time.Now().Add(20 * time.Second); skewed.do("GET", "/readyz", nil).status != 200; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the corrected replica never became ready")
		}
	}
	if got := skewed.receive(t, "skew", nil); len(got) != 0 {
		t.Fatalf("the corrected replica delivered %d in-flight messages early", len(got))
	}
}
