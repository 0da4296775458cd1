package metatest

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
)

// TenancyStore is what RunTenancy tests: a store that keeps subscriptions and tenancy data.
type TenancyStore interface {
	SubscriptionStore
	meta.TenancyStore
}

// RunTenancy runs the conformance suite of meta.TenancyStore; newStore returns a fresh, empty
// store. It pins, beyond the interface's documentation: a project without limits of its own
// reads back an empty (non-nil) Limits; plain CreateQueue and CreateSubscription count toward
// the quotas too; Usage lists only hours with some use, and an hour is in [from, to) when it
// starts at or after from's hour and before to.
func RunTenancy(t *testing.T, newStore func(t *testing.T) TenancyStore) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s TenancyStore)
	}{
		{"Limits", testLimits},
		{"LimitsMissingProject", testLimitsMissingProject},
		{"QueueQuota", testQueueQuota},
		{"QueueQuotaConcurrent", testQueueQuotaConcurrent},
		{"SubscriptionQuota", testSubscriptionQuota},
		{"UsageOnce", testUsageOnce},
		{"UsageRange", testUsageRange},
		{"StoredSampleOnce", testStoredSampleOnce},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newStore(t))
		})
	}
}

func i64(v int64) *int64 { return &v }

func wantLimits(t *testing.T, what string, got meta.Limits, want map[string]int64) {
	t.Helper()
	if got == nil || len(got) != len(want) {
		t.Fatalf("%s: limits %v, want %v", what, got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("%s: limits %v, want %v", what, got, want)
		}
	}
}

func testLimits(t *testing.T, s TenancyStore) {
	ctx := ctxOf(t)
	p := newProject(t, s, "p")
	l, err := s.GetLimits(ctx, p.ID)
	must(t, err, "GetLimits")
	wantLimits(t, "new project", l, nil)
	l, err = s.UpdateLimits(ctx, p.ID, meta.LimitsPatch{meta.LimitMaxQueues: i64(5), meta.LimitMaxStoredBytes: i64(1 << 40)})
	must(t, err, "UpdateLimits")
	wantLimits(t, "after set", l, map[string]int64{meta.LimitMaxQueues: 5, meta.LimitMaxStoredBytes: 1 << 40})
	l, err = s.UpdateLimits(ctx, p.ID, meta.LimitsPatch{meta.LimitMaxQueues: nil, meta.LimitRequestsPerSecond: i64(7)})
	must(t, err, "UpdateLimits")
	want := map[string]int64{meta.LimitMaxStoredBytes: 1 << 40, meta.LimitRequestsPerSecond: 7}
	wantLimits(t, "after reset", l, want)
	l, err = s.GetLimits(ctx, p.ID)
	must(t, err, "GetLimits")
	wantLimits(t, "read back", l, want)
	other := newProject(t, s, "other")
	l, err = s.GetLimits(ctx, other.ID)
	must(t, err, "GetLimits other")
	wantLimits(t, "other project", l, nil)
}

func testLimitsMissingProject(t *testing.T, s TenancyStore) {
	ctx := ctxOf(t)
	_, err := s.GetLimits(ctx, ids.New())
	wantIs(t, err, meta.ErrNotFound, "GetLimits")
	_, err = s.UpdateLimits(ctx, ids.New(), meta.LimitsPatch{meta.LimitMaxQueues: i64(1)})
	wantIs(t, err, meta.ErrNotFound, "UpdateLimits")
}

// quotaOf is err's meta.ErrQuota refusal (naming the limit), nil when err is none.
func quotaOf(err error) *meta.Refusal {
	var r *meta.Refusal
	if !errors.As(err, &r) || !errors.Is(err, meta.ErrQuota) {
		return nil
	}
	return r
}

func wantQuota(t *testing.T, err error, limit, what string) {
	t.Helper()
	if r := quotaOf(err); r == nil || r.Name != limit {
		t.Fatalf("%s: %v, want meta.ErrQuota of %q", what, err, limit)
	}
	wantCode(t, err, apierr.QuotaExceeded, what)
}

func wantCounts(t *testing.T, s TenancyStore, p ids.ID, queues, subs int64) {
	t.Helper()
	c, err := s.Counts(ctxOf(t), p)
	must(t, err, "Counts")
	if c.Queues != queues || c.Subscriptions != subs {
		t.Fatalf("Counts = %+v, want %d queues and %d subscriptions", c, queues, subs)
	}
}

func testQueueQuota(t *testing.T, s TenancyStore) {
	ctx := ctxOf(t)
	p := newProject(t, s, "p")
	other := newProject(t, s, "other")
	newQueue(t, s, other.ID, "elsewhere", nil)
	a := newQueue(t, s, p.ID, "a", nil)
	must(t, s.CreateQueueWithin(ctx, queueValue(p.ID, "b"), 3), "CreateQueueWithin b")
	must(t, s.CreateQueueWithin(ctx, queueValue(p.ID, "c"), 3), "CreateQueueWithin c")
	wantCounts(t, s, p.ID, 3, 0)
	wantQuota(t, s.CreateQueueWithin(ctx, queueValue(p.ID, "d"), 3), meta.LimitMaxQueues, "fourth queue")
	if _, err := s.GetQueueByName(ctx, p.ID, "d"); !errors.Is(err, meta.ErrNotFound) {
		t.Fatalf("the refused queue was stored (GetQueueByName: %v)", err)
	}
	_, err := s.DeleteQueue(ctx, p.ID, a.ID)
	must(t, err, "DeleteQueue")
	wantCounts(t, s, p.ID, 2, 0)
	must(t, s.CreateQueueWithin(ctx, queueValue(p.ID, "d"), 3), "CreateQueueWithin after a delete")
	// A lowered limit deletes nothing; it only refuses what would go over.
	wantQuota(t, s.CreateQueueWithin(ctx, queueValue(p.ID, "e"), 1), meta.LimitMaxQueues, "under a lowered limit")
	wantCounts(t, s, p.ID, 3, 0)
	wantCounts(t, s, other.ID, 1, 0)
	wantIs(t, s.CreateQueueWithin(ctx, queueValue(ids.New(), "x"), 3), meta.ErrNotFound, "missing project")
}

func testQueueQuotaConcurrent(t *testing.T, s TenancyStore) {
	ctx := ctxOf(t)
	p := newProject(t, s, "p")
	const limit, tries = 4, 12
	var ok, refused atomic.Int64
	var wg sync.WaitGroup
	for i := range tries {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := s.CreateQueueWithin(ctx, queueValue(p.ID, fmt.Sprintf("q%d", i)), limit)
			switch {
			case err == nil:
				ok.Add(1)
			case errors.Is(err, meta.ErrQuota):
				refused.Add(1)
			default:
				t.Errorf("CreateQueueWithin: %v", err)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != limit || refused.Load() != tries-limit {
		t.Fatalf("%d created and %d refused, want %d and %d", ok.Load(), refused.Load(), limit, tries-limit)
	}
	wantCounts(t, s, p.ID, limit, 0)
}

func testSubscriptionQuota(t *testing.T, s TenancyStore) {
	ctx := ctxOf(t)
	p := newProject(t, s, "p")
	var qs []meta.Queue
	for i := range 4 {
		qs = append(qs, newQueue(t, s, p.ID, fmt.Sprintf("q%d", i), nil))
	}
	must(t, s.CreateSubscription(ctx, subValue(qs[0])), "CreateSubscription")
	must(t, s.CreateSubscriptionWithin(ctx, subValue(qs[1]), 2), "CreateSubscriptionWithin")
	wantCounts(t, s, p.ID, 4, 2)
	wantQuota(t, s.CreateSubscriptionWithin(ctx, subValue(qs[2]), 2), meta.LimitMaxSubscriptions, "third subscription")
	if _, err := s.GetSubscription(ctx, qs[2].ID); !errors.Is(err, meta.ErrNotFound) {
		t.Fatalf("the refused subscription was stored (GetSubscription: %v)", err)
	}
	wantIs(t, s.CreateSubscriptionWithin(ctx, subValue(qs[1]), 2), meta.ErrSubscriptionExists, "second on one queue")
	must(t, s.DeleteSubscription(ctx, qs[0].ID), "DeleteSubscription")
	wantCounts(t, s, p.ID, 4, 1)
	must(t, s.CreateSubscriptionWithin(ctx, subValue(qs[2]), 2), "CreateSubscriptionWithin after a delete")
	wantCounts(t, s, p.ID, 4, 2)
}

var hour0 = time.Date(2026, 3, 14, 15, 0, 0, 0, time.UTC)

func usageOf(t *testing.T, s TenancyStore, p ids.ID, from, to time.Time) []meta.UsageHour {
	t.Helper()
	u, err := s.Usage(ctxOf(t), p, from, to)
	must(t, err, "Usage")
	return u
}

func testUsageOnce(t *testing.T, s TenancyStore) {
	ctx := ctxOf(t)
	p := newProject(t, s, "p")
	c := meta.Counters{Requests: 3, MessagesSent: 2, MessagesDelivered: 1, MessagesAcked: 1, BytesIn: 100, BytesOut: 50, PushAttempts: 4, MessagesPublished: 5}
	f := meta.UsageFlush{Replica: "r1", Seq: 1, Hours: []meta.UsageHour{{Project: p.ID, Hour: hour0, Counters: c}}}
	must(t, s.AddUsage(ctx, f), "AddUsage")
	must(t, s.AddUsage(ctx, f), "AddUsage retried") // a retry after an unknown outcome
	f.Seq = 2
	must(t, s.AddUsage(ctx, f), "AddUsage seq 2")
	must(t, s.AddUsage(ctx, meta.UsageFlush{Replica: "r2", Seq: 1, Hours: f.Hours}), "AddUsage other replica")
	u := usageOf(t, s, p.ID, hour0, hour0.Add(time.Hour))
	want := meta.Counters{}
	for range 3 {
		want.Add(c)
	}
	if len(u) != 1 || !u[0].Hour.Equal(hour0) || u[0].Counters != want {
		t.Fatalf("Usage = %+v, want one hour %v with %+v", u, hour0, want)
	}
}

func testUsageRange(t *testing.T, s TenancyStore) {
	ctx := ctxOf(t)
	p := newProject(t, s, "p")
	other := newProject(t, s, "other")
	var hours []meta.UsageHour
	for i := range 5 {
		hours = append(hours, meta.UsageHour{Project: p.ID, Hour: hour0.Add(time.Duration(4-i) * time.Hour), Counters: meta.Counters{Requests: int64(4 - i + 1)}})
	}
	hours = append(hours, meta.UsageHour{Project: other.ID, Hour: hour0.Add(time.Hour), Counters: meta.Counters{Requests: 99}})
	must(t, s.AddUsage(ctx, meta.UsageFlush{Replica: "r", Seq: 1, Hours: hours}), "AddUsage")
	// From the middle of hour 1 to the start of hour 4: hours 1, 2 and 3.
	u := usageOf(t, s, p.ID, hour0.Add(90*time.Minute), hour0.Add(4*time.Hour))
	if len(u) != 3 {
		t.Fatalf("Usage = %+v, want 3 hours", u)
	}
	for i, h := range u {
		if !h.Hour.Equal(hour0.Add(time.Duration(i+1)*time.Hour)) || h.Requests != int64(i+2) || h.Project != p.ID {
			t.Fatalf("Usage[%d] = %+v, want hour %d with %d requests", i, h, i+1, i+2)
		}
	}
	if u := usageOf(t, s, p.ID, hour0.Add(-48*time.Hour), hour0.Add(-time.Hour)); len(u) != 0 {
		t.Fatalf("Usage before any use = %+v, want none", u)
	}
}

func testStoredSampleOnce(t *testing.T, s TenancyStore) {
	ctx := ctxOf(t)
	p := newProject(t, s, "p")
	must(t, s.AddStoredSample(ctx, p.ID, hour0, 3, 10), "AddStoredSample 3")
	must(t, s.AddStoredSample(ctx, p.ID, hour0, 3, 10), "AddStoredSample 3 again (another replica)")
	must(t, s.AddStoredSample(ctx, p.ID, hour0, 2, 10), "AddStoredSample 2 (late)")
	must(t, s.AddStoredSample(ctx, p.ID, hour0, 4, 5), "AddStoredSample 4")
	must(t, s.AddStoredSample(ctx, p.ID, hour0.Add(time.Hour), 0, 7), "AddStoredSample next hour")
	must(t, s.AddUsage(ctx, meta.UsageFlush{Replica: "r", Seq: 1, Hours: []meta.UsageHour{{Project: p.ID, Hour: hour0, Counters: meta.Counters{Requests: 1}}}}), "AddUsage")
	u := usageOf(t, s, p.ID, hour0, hour0.Add(2*time.Hour))
	if len(u) != 2 || u[0].StoredByteHours != 15 || u[0].Requests != 1 || u[1].StoredByteHours != 7 {
		t.Fatalf("Usage = %+v, want 15 then 7 storedByteHours", u)
	}
}
