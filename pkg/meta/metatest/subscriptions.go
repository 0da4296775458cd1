package metatest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
)

// SubscriptionStore is what RunSubscriptions tests: a Store that also keeps subscriptions.
type SubscriptionStore interface {
	meta.Store
	meta.SubscriptionStore
	meta.SigningKeyStore
}

// RunSubscriptions runs the conformance suite of meta.SubscriptionStore; newStore returns a
// fresh, empty store. It pins, beyond the interface's documentation: CreateSubscription stores
// Version 1 whatever s.Version says; UpdateSubscription keeps ProjectID and CreatedAt; the
// listing is in queue id order with "" as the last page's cursor; a zero PreviousExpiresAt
// reads back zero.
func RunSubscriptions(t *testing.T, newStore func(t *testing.T) SubscriptionStore) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s SubscriptionStore)
	}{
		{"CreateGet", testSubCreateGet},
		{"OnePerQueue", testSubOnePerQueue},
		{"ConcurrentCreate", testSubConcurrentCreate},
		{"QueueMustExist", testSubQueueMustExist},
		{"Update", testSubUpdate},
		{"UpdateConflict", testSubUpdateConflict},
		{"Delete", testSubDelete},
		{"List", testSubList},
		{"ListBadCursor", testSubListBadCursor},
		{"AuthFields", testSubAuthFields},
		{"SigningKeys", testSigningKeys},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newStore(t))
		})
	}
}

func subValue(q meta.Queue) meta.Subscription {
	return meta.Subscription{
		ID: ids.New(), QueueID: q.ID, ProjectID: q.ProjectID, Endpoint: "https://example.com/hook",
		BatchSize: 10, BatchWindowMs: 0, MaxInFlight: 10, TimeoutSeconds: 30,
		Secret: "whsec_c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0", CreatedAt: base, UpdatedAt: base,
	}
}

func sameSub(t *testing.T, what string, got, want meta.Subscription) {
	t.Helper()
	if !got.CreatedAt.Equal(want.CreatedAt) || !got.UpdatedAt.Equal(want.UpdatedAt) || !got.PreviousExpiresAt.Equal(want.PreviousExpiresAt) {
		t.Fatalf("%s: times %v/%v/%v, want %v/%v/%v", what, got.CreatedAt, got.UpdatedAt, got.PreviousExpiresAt, want.CreatedAt, want.UpdatedAt, want.PreviousExpiresAt)
	}
	if !got.DisabledAt.Equal(want.DisabledAt) {
		t.Fatalf("%s: disabledAt %v, want %v", what, got.DisabledAt, want.DisabledAt)
	}
	got.CreatedAt, got.UpdatedAt, got.PreviousExpiresAt, got.DisabledAt = want.CreatedAt, want.UpdatedAt, want.PreviousExpiresAt, want.DisabledAt
	if got != want {
		t.Fatalf("%s:\n got %+v\nwant %+v", what, got, want)
	}
}

func testSubCreateGet(t *testing.T, s SubscriptionStore) {
	p := newProject(t, s, "p")
	q := newQueue(t, s, p.ID, "q", nil)
	sub := subValue(q)
	sub.Version = 42
	must(t, s.CreateSubscription(ctxOf(t), sub), "CreateSubscription")
	sub.Version = 1
	got, err := s.GetSubscription(ctxOf(t), q.ID)
	must(t, err, "GetSubscription")
	sameSub(t, "read back", got, sub)
	_, err = s.GetSubscription(ctxOf(t), ids.New())
	wantIs(t, err, meta.ErrNotFound, "GetSubscription of a queue without one")
}

func testSubOnePerQueue(t *testing.T, s SubscriptionStore) {
	p := newProject(t, s, "p")
	q := newQueue(t, s, p.ID, "q", nil)
	must(t, s.CreateSubscription(ctxOf(t), subValue(q)), "first")
	wantIs(t, s.CreateSubscription(ctxOf(t), subValue(q)), meta.ErrSubscriptionExists, "second")
	// Another queue is free.
	q2 := newQueue(t, s, p.ID, "q2", nil)
	must(t, s.CreateSubscription(ctxOf(t), subValue(q2)), "other queue")
}

func testSubConcurrentCreate(t *testing.T, s SubscriptionStore) {
	p := newProject(t, s, "p")
	q := newQueue(t, s, p.ID, "q", nil)
	const n = 6
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = s.CreateSubscription(ctxOf(t), subValue(q)) })
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, meta.ErrSubscriptionExists):
			t.Fatalf("concurrent create: %v", err)
		}
	}
	if ok != 1 {
		t.Fatalf("%d concurrent creates succeeded, want exactly 1", ok)
	}
}

func testSubQueueMustExist(t *testing.T, s SubscriptionStore) {
	p := newProject(t, s, "p")
	other := newProject(t, s, "other")
	q := newQueue(t, s, p.ID, "q", nil)
	missing := subValue(q)
	missing.QueueID = ids.New()
	wantIs(t, s.CreateSubscription(ctxOf(t), missing), meta.ErrNotFound, "missing queue")
	wrong := subValue(q)
	wrong.ProjectID = other.ID
	wantIs(t, s.CreateSubscription(ctxOf(t), wrong), meta.ErrNotFound, "queue of another project")
	zero := subValue(q)
	zero.ID = ids.ID{}
	wantRefusal(t, s.CreateSubscription(ctxOf(t), zero), meta.ErrZeroID, apierr.InvalidArgument, "zero subscription id")
}

func testSubUpdate(t *testing.T, s SubscriptionStore) {
	p := newProject(t, s, "p")
	q := newQueue(t, s, p.ID, "q", nil)
	sub := subValue(q)
	must(t, s.CreateSubscription(ctxOf(t), sub), "create")
	sub.Version = 1
	next := sub
	next.Endpoint, next.BatchSize, next.BatchWindowMs, next.MaxInFlight, next.TimeoutSeconds, next.Paused = "https://example.org/x", 100, 250, 3, 7, true
	next.MaxMessagesPerSecond = 250
	next.FlowControl = meta.FlowControl{KeyAttribute: "customer", Parallelism: 2, MessagesPerSecond: 10}
	next.PreviousSecret, next.Secret = sub.Secret, "whsec_bmV3bmV3bmV3bmV3bmV3bmV3bmV3bmV3"
	next.PreviousExpiresAt = base.Add(24 * time.Hour)
	next.DisableAfterSeconds, next.Disabled, next.DisabledReason = 3600, true, "every push attempt failed for 1h0m0s"
	next.DisabledAt = base.Add(2 * time.Minute)
	next.UpdatedAt = base.Add(time.Minute)
	next.CreatedAt = base.Add(time.Hour) // ignored
	next.ProjectID = ids.New()           // ignored
	got, err := s.UpdateSubscription(ctxOf(t), next)
	must(t, err, "UpdateSubscription")
	want := next
	want.CreatedAt, want.ProjectID, want.Version = sub.CreatedAt, sub.ProjectID, 2
	sameSub(t, "returned", got, want)
	read, err := s.GetSubscription(ctxOf(t), q.ID)
	must(t, err, "GetSubscription")
	sameSub(t, "read back", read, want)
	if got := read.Secrets(base.Add(time.Hour)); !slices.Equal(got, []string{next.Secret, sub.Secret}) {
		t.Fatalf("Secrets during the overlap: %v", got)
	}
	if got := read.Secrets(base.Add(25 * time.Hour)); !slices.Equal(got, []string{next.Secret}) {
		t.Fatalf("Secrets after the overlap: %v", got)
	}
	// Clearing the previous secret clears its expiry too; resuming clears the disabled state.
	want.PreviousSecret, want.PreviousExpiresAt = "", time.Time{}
	want.Disabled, want.DisabledReason, want.DisabledAt = false, "", time.Time{}
	got, err = s.UpdateSubscription(ctxOf(t), want)
	must(t, err, "clear previous")
	want.Version = 3
	sameSub(t, "cleared", got, want)
	read, err = s.GetSubscription(ctxOf(t), q.ID)
	must(t, err, "GetSubscription")
	sameSub(t, "cleared, read back", read, want)
}

func testSubUpdateConflict(t *testing.T, s SubscriptionStore) {
	p := newProject(t, s, "p")
	q := newQueue(t, s, p.ID, "q", nil)
	sub := subValue(q)
	must(t, s.CreateSubscription(ctxOf(t), sub), "create")
	sub.Version = 1
	a, b := sub, sub
	a.BatchSize, b.BatchSize = 5, 6
	_, err := s.UpdateSubscription(ctxOf(t), a)
	must(t, err, "first update")
	if _, err := s.UpdateSubscription(ctxOf(t), b); err != meta.ErrSubscriptionConflict {
		t.Fatalf("stale update: %v, want ErrSubscriptionConflict", err)
	}
	got, err := s.GetSubscription(ctxOf(t), q.ID)
	must(t, err, "get")
	if got.BatchSize != 5 || got.Version != 2 {
		t.Fatalf("after the conflict: %+v", got)
	}
	missing := subValue(q)
	missing.QueueID = ids.New()
	_, err = s.UpdateSubscription(ctxOf(t), missing)
	wantIs(t, err, meta.ErrNotFound, "update of a missing subscription")
}

func testSubDelete(t *testing.T, s SubscriptionStore) {
	p := newProject(t, s, "p")
	q := newQueue(t, s, p.ID, "q", nil)
	must(t, s.CreateSubscription(ctxOf(t), subValue(q)), "create")
	must(t, s.DeleteSubscription(ctxOf(t), q.ID), "delete")
	_, err := s.GetSubscription(ctxOf(t), q.ID)
	wantIs(t, err, meta.ErrNotFound, "get after delete")
	wantIs(t, s.DeleteSubscription(ctxOf(t), q.ID), meta.ErrNotFound, "second delete")
	must(t, s.CreateSubscription(ctxOf(t), subValue(q)), "create again")
}

func testSubList(t *testing.T, s SubscriptionStore) {
	var want []string
	for i := range 2 {
		p := newProject(t, s, fmt.Sprint("p", i))
		for j := range 3 {
			q := newQueue(t, s, p.ID, fmt.Sprint("q", j), nil)
			must(t, s.CreateSubscription(ctxOf(t), subValue(q)), "create")
			want = append(want, q.ID.String())
		}
	}
	slices.Sort(want)
	var got []string
	cursor := ""
	pages := 0
	for {
		subs, next, err := s.ListSubscriptions(ctxOf(t), meta.Page{Limit: 2, Cursor: cursor})
		must(t, err, "ListSubscriptions")
		pages++
		for _, sub := range subs {
			got = append(got, sub.QueueID.String())
		}
		if next == "" {
			break
		}
		cursor = next
	}
	if !slices.Equal(got, want) || pages != 3 {
		t.Fatalf("listed %v in %d pages, want %v in 3", got, pages, want)
	}
	all, next, err := s.ListSubscriptions(ctxOf(t), meta.Page{})
	must(t, err, "ListSubscriptions default page")
	if len(all) != 6 || next != "" {
		t.Fatalf("default page: %d items, next %q", len(all), next)
	}
}

func testSubListBadCursor(t *testing.T, s SubscriptionStore) {
	p := newProject(t, s, "p")
	newQueue(t, s, p.ID, "a", nil)
	newQueue(t, s, p.ID, "b", nil)
	_, qc, err := s.ListQueues(ctxOf(t), p.ID, "", meta.Page{Limit: 1})
	must(t, err, "ListQueues")
	for _, c := range []string{"garbage!", "e30", qc} {
		if c == "" {
			continue
		}
		_, _, err := s.ListSubscriptions(ctxOf(t), meta.Page{Cursor: c})
		wantRefusal(t, err, meta.ErrBadCursor, apierr.InvalidArgument, "cursor "+c)
	}
}
