// Package metatest is the conformance suite of meta.Store: every implementation (DynamoDB,
// in-memory, embedded) runs it and so behaves the same.
//
// Usage, in the implementation's tests:
//
//	func TestConformance(t *testing.T) {
//		metatest.Run(t, func(t *testing.T) meta.Store { return newEmptyStore(t) })
//	}
//
// newStore must return an empty store (no projects) that no other test uses, and clean it up
// with t.Cleanup. Subtests run in parallel.
//
// Beyond meta.Store's documentation the suite pins these choices:
//   - CreateQueue stores Version 1 whatever q.Version says; UpdateQueue returns and stores
//     Version+1 and takes UpdatedAt and the settings from its argument.
//   - Tokens and queues need an existing project (else NotFound).
//   - ListProjects lists in id order (ids are time-ordered: creation order); ListQueues in byte
//     order of the names. The last page has NextCursor "" even when it is full.
//   - A cursor is valid only for the listing it came from (same project and prefix):
//     anything else is meta.ErrBadCursor (code InvalidArgument).
//   - Times read back are Equal to the times stored (millisecond precision is enough).
package metatest

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
)

// Run runs the conformance suite; newStore returns a fresh, empty store.
func Run(t *testing.T, newStore func(t *testing.T) meta.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s meta.Store)
	}{
		{"Ping", testPing},
		{"ProjectCreateGet", testProjectCreateGet},
		{"ProjectDuplicateID", testProjectDuplicateID},
		{"ProjectList", testProjectList},
		{"ProjectListBadCursor", testProjectListBadCursor},
		{"TokenCreateGet", testTokenCreateGet},
		{"TokenNotFound", testTokenNotFound},
		{"TokenRevoke", testTokenRevoke},
		{"TokenProject", testTokenProject},
		{"QueueTagsAndSQSAttributes", testQueueTagsAndSQSAttributes},
		{"QueueCreateGet", testQueueCreateGet},
		{"QueueNotFound", testQueueNotFound},
		{"QueueNameUnique", testQueueNameUnique},
		{"QueueConcurrentCreate", testQueueConcurrentCreate},
		{"QueueNameReuse", testQueueNameReuse},
		{"QueueProjectIsolation", testQueueProjectIsolation},
		{"QueueList", testQueueList},
		{"QueueListPaging", testQueueListPaging},
		{"QueueListBadCursor", testQueueListBadCursor},
		{"QueueUpdate", testQueueUpdate},
		{"QueueUpdateVersionConflict", testQueueUpdateVersionConflict},
		{"QueueUpdateConcurrent", testQueueUpdateConcurrent},
		{"QueueUpdateNotFound", testQueueUpdateNotFound},
		{"QueueDelete", testQueueDelete},
		{"RedriveCreateAndDelete", testRedriveCreateAndDelete},
		{"RedriveCountsReferences", testRedriveCountsReferences},
		{"RedriveMove", testRedriveMove},
		{"RedriveSameQueueNewCount", testRedriveSameQueueNewCount},
		{"RedriveMissingDLQ", testRedriveMissingDLQ},
		{"RedriveOtherProject", testRedriveOtherProject},
		{"RedriveDeleteReferrer", testRedriveDeleteReferrer},
		{"RedriveConcurrentChanges", testRedriveConcurrentChanges},
		{"Refusals", testRefusals},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newStore(t))
		})
	}
}

// ---- helpers ----

// base is a time with milliseconds in a non-UTC zone: stores must keep the instant.
var base = time.Date(2026, 3, 14, 15, 9, 26, 535_000_000, time.FixedZone("X", 2*3600))

func ctxOf(t *testing.T) context.Context { return t.Context() }

func wantCode(t *testing.T, err error, code apierr.Code, what string) *apierr.Error {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error, want %s", what, code)
	}
	var e *apierr.Error
	if !errors.As(err, &e) {
		t.Fatalf("%s: error %v (%T) is not an *apierr.Error, want %s", what, err, err, code)
	}
	if e.Code != code {
		t.Fatalf("%s: error %v, want code %s", what, err, code)
	}
	return e
}

// wantIs checks that err is the store's sentinel (errors.Is), which pkg/api words for the
// client, and still reads as its code for callers that switch on codes.
func wantIs(t *testing.T, err, sentinel error, what string) {
	t.Helper()
	if !errors.Is(err, sentinel) {
		t.Fatalf("%s: error %v, want %v", what, err, sentinel)
	}
	wantCode(t, err, apierr.CodeOf(sentinel), what)
}

// wantRefusal checks that err is the store refusal sentinel (package meta's, which pkg/api
// answers naming the field) and still reads as code for callers that switch on codes.
func wantRefusal(t *testing.T, err, sentinel error, code apierr.Code, what string) {
	t.Helper()
	if !errors.Is(err, sentinel) {
		t.Fatalf("%s: error %v, want %v", what, err, sentinel)
	}
	wantCode(t, err, code, what)
}

func must(t *testing.T, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func newProject(t *testing.T, s meta.Store, name string) meta.Project {
	t.Helper()
	p := meta.Project{ID: ids.New(), Name: name, CreatedAt: base}
	must(t, s.CreateProject(ctxOf(t), p), "CreateProject "+name)
	return p
}

func queueValue(pid ids.ID, name string) meta.Queue {
	return meta.Queue{
		ID: ids.New(), ProjectID: pid, Name: name, Type: "standard",
		CreatedAt: base, UpdatedAt: base,
		VisibilityTimeoutSeconds: 30, RetentionSeconds: 345600, DelaySeconds: 0, ReceiveWaitSeconds: 0,
	}
}

func newQueue(t *testing.T, s meta.Store, pid ids.ID, name string, redrive *meta.Redrive) meta.Queue {
	t.Helper()
	q := queueValue(pid, name)
	q.Redrive = redrive
	must(t, s.CreateQueue(ctxOf(t), q), "CreateQueue "+name)
	q.Version = 1
	return q
}

func sameQueue(t *testing.T, what string, got, want meta.Queue) {
	t.Helper()
	if err := diffQueue(got, want); err != nil {
		t.Fatalf("%s: %v\ngot  %+v\nwant %+v", what, err, got, want)
	}
}

func diffQueue(got, want meta.Queue) error {
	switch {
	case got.ID != want.ID:
		return fmt.Errorf("ID %s, want %s", got.ID, want.ID)
	case got.ProjectID != want.ProjectID:
		return fmt.Errorf("ProjectID %s, want %s", got.ProjectID, want.ProjectID)
	case got.Name != want.Name, got.Type != want.Type:
		return fmt.Errorf("name/type %q/%q, want %q/%q", got.Name, got.Type, want.Name, want.Type)
	case !got.CreatedAt.Equal(want.CreatedAt), !got.UpdatedAt.Equal(want.UpdatedAt):
		return fmt.Errorf("times %s/%s, want %s/%s", got.CreatedAt, got.UpdatedAt, want.CreatedAt, want.UpdatedAt)
	case got.VisibilityTimeoutSeconds != want.VisibilityTimeoutSeconds, got.RetentionSeconds != want.RetentionSeconds,
		got.DelaySeconds != want.DelaySeconds, got.ReceiveWaitSeconds != want.ReceiveWaitSeconds,
		got.ContentBasedDedup != want.ContentBasedDedup, got.Delivery != want.Delivery:
		return errors.New("settings differ")
	case (got.MaxCancels == nil) != (want.MaxCancels == nil), got.MaxCancels != nil && *got.MaxCancels != *want.MaxCancels:
		return fmt.Errorf("maxCancels %v, want %v", got.MaxCancels, want.MaxCancels)
	case got.MaxMessageBytes != want.MaxMessageBytes:
		return fmt.Errorf("maxMessageBytes %d, want %d", got.MaxMessageBytes, want.MaxMessageBytes)
	case got.GroupPolicy != want.GroupPolicy, got.GroupAffinitySeconds != want.GroupAffinitySeconds,
		got.MaxGroupsPerConsumer != want.MaxGroupsPerConsumer:
		return fmt.Errorf("group policy %q/%d/%d, want %q/%d/%d", got.GroupPolicy, got.GroupAffinitySeconds,
			got.MaxGroupsPerConsumer, want.GroupPolicy, want.GroupAffinitySeconds, want.MaxGroupsPerConsumer)
	case got.OnDeadLetter != want.OnDeadLetter:
		return fmt.Errorf("onDeadLetter %q, want %q", got.OnDeadLetter, want.OnDeadLetter)
	case (got.Redrive == nil) != (want.Redrive == nil):
		return errors.New("redrive presence differs")
	case got.Redrive != nil && *got.Redrive != *want.Redrive:
		return fmt.Errorf("redrive %+v, want %+v", *got.Redrive, *want.Redrive)
	case !maps.Equal(got.Tags, want.Tags), !maps.Equal(got.SQSAttributes, want.SQSAttributes):
		return fmt.Errorf("tags/SQS attributes %v/%v, want %v/%v", got.Tags, got.SQSAttributes, want.Tags, want.SQSAttributes)
	case got.Version != want.Version:
		return fmt.Errorf("version %d, want %d", got.Version, want.Version)
	}
	return nil
}

func queueNames(qs []meta.Queue) []string {
	out := make([]string, len(qs))
	for i, q := range qs {
		out[i] = q.Name
	}
	return out
}

// listAllQueues pages through a listing with limit and returns the names and page sizes.
func listAllQueues(t *testing.T, s meta.Store, pid ids.ID, prefix string, limit int) (names []string, pages []int) {
	t.Helper()
	cursor := ""
	for i := 0; ; i++ {
		if i > 100 {
			t.Fatal("ListQueues does not end")
		}
		qs, next, err := s.ListQueues(ctxOf(t), pid, prefix, meta.Page{Limit: limit, Cursor: cursor})
		must(t, err, "ListQueues")
		if len(qs) > limit {
			t.Fatalf("ListQueues returned %d queues with limit %d", len(qs), limit)
		}
		names = append(names, queueNames(qs)...)
		pages = append(pages, len(qs))
		if next == "" {
			return names, pages
		}
		cursor = next
	}
}

func wantDeletable(t *testing.T, s meta.Store, q meta.Queue) {
	t.Helper()
	_, err := s.DeleteQueue(ctxOf(t), q.ProjectID, q.ID)
	must(t, err, "DeleteQueue "+q.Name+" (no longer a dead-letter queue)")
}

func wantInUse(t *testing.T, s meta.Store, q meta.Queue) {
	t.Helper()
	_, err := s.DeleteQueue(ctxOf(t), q.ProjectID, q.ID)
	wantIs(t, err, meta.ErrQueueInUse, "DeleteQueue "+q.Name+" (a dead-letter queue in use)")
	got, err := s.GetQueue(ctxOf(t), q.ProjectID, q.ID)
	must(t, err, "GetQueue after refused delete")
	if got.ID != q.ID {
		t.Fatalf("GetQueue after refused delete returned %s", got.ID)
	}
}

// ---- ping and projects ----

func testPing(t *testing.T, s meta.Store) {
	must(t, s.Ping(ctxOf(t)), "Ping")
}

func testProjectCreateGet(t *testing.T, s meta.Store) {
	p := newProject(t, s, "acme")
	got, err := s.GetProject(ctxOf(t), p.ID)
	must(t, err, "GetProject")
	if got.ID != p.ID || got.Name != "acme" || !got.CreatedAt.Equal(base) {
		t.Fatalf("GetProject = %+v, want %+v", got, p)
	}
	_, err = s.GetProject(ctxOf(t), ids.New())
	wantIs(t, err, meta.ErrNotFound, "GetProject of a missing project")
}

func testProjectDuplicateID(t *testing.T, s meta.Store) {
	p := newProject(t, s, "first")
	dup := meta.Project{ID: p.ID, Name: "second", CreatedAt: base.Add(time.Hour)}
	if err := s.CreateProject(ctxOf(t), dup); err == nil {
		t.Fatal("CreateProject with a stored id succeeded")
	}
	got, err := s.GetProject(ctxOf(t), p.ID)
	must(t, err, "GetProject")
	if got.Name != "first" {
		t.Fatalf("a failed CreateProject overwrote the project: %+v", got)
	}
	ps, _, err := s.ListProjects(ctxOf(t), meta.Page{Limit: 10})
	must(t, err, "ListProjects")
	if len(ps) != 1 || ps[0].Name != "first" {
		t.Fatalf("ListProjects after a failed duplicate = %+v", ps)
	}
}

func testProjectList(t *testing.T, s meta.Store) {
	ps, next, err := s.ListProjects(ctxOf(t), meta.Page{})
	must(t, err, "ListProjects on an empty store")
	if len(ps) != 0 || next != "" {
		t.Fatalf("ListProjects on an empty store = %v, %q", ps, next)
	}
	var want []ids.ID
	for i := range 6 {
		want = append(want, newProject(t, s, fmt.Sprintf("p%d", i)).ID)
	}
	// Limit 4: a page of 4, then the last page of 2 without a cursor.
	// Limit 3: two full pages, and the second (last) one has no cursor.
	for _, tc := range []struct {
		limit int
		pages []int
	}{{4, []int{4, 2}}, {3, []int{3, 3}}, {6, []int{6}}, {0, []int{6}}, {100, []int{6}}} {
		var got []ids.ID
		var pages []int
		cursor := ""
		for {
			ps, next, err := s.ListProjects(ctxOf(t), meta.Page{Limit: tc.limit, Cursor: cursor})
			must(t, err, "ListProjects")
			pages = append(pages, len(ps))
			for _, p := range ps {
				got = append(got, p.ID)
				if p.Name == "" || !p.CreatedAt.Equal(base) {
					t.Fatalf("ListProjects returned an incomplete project %+v", p)
				}
			}
			if next == "" || len(pages) > 10 {
				break
			}
			cursor = next
		}
		if !slices.Equal(got, want) {
			t.Fatalf("limit %d: ListProjects listed %v, want %v (creation order)", tc.limit, got, want)
		}
		if !slices.Equal(pages, tc.pages) {
			t.Fatalf("limit %d: page sizes %v, want %v", tc.limit, pages, tc.pages)
		}
	}
}

func testProjectListBadCursor(t *testing.T, s meta.Store) {
	p := newProject(t, s, "a")
	newProject(t, s, "b")
	for i := range 3 {
		newQueue(t, s, p.ID, fmt.Sprintf("q%d", i), nil)
	}
	_, qcur, err := s.ListQueues(ctxOf(t), p.ID, "", meta.Page{Limit: 1})
	must(t, err, "ListQueues")
	if qcur == "" {
		t.Fatal("ListQueues with more queues than the limit gave no cursor")
	}
	for _, c := range []string{"!!!", "bm90IGEgY3Vyc29y", base64.RawURLEncoding.EncodeToString([]byte(`{"pk":"x","sk":"y"}`)), qcur} {
		_, _, err := s.ListProjects(ctxOf(t), meta.Page{Limit: 1, Cursor: c})
		wantRefusal(t, err, meta.ErrBadCursor, apierr.InvalidArgument, "ListProjects with cursor "+c)
	}
}

// ---- tokens ----

func testTokenCreateGet(t *testing.T, s meta.Store) {
	p := newProject(t, s, "acme")
	exp := base.Add(24 * time.Hour)
	tokens := []meta.Token{
		{ID: ids.New(), ProjectID: p.ID, Name: "ci", Scopes: []string{"queues:read", "messages:send"}, CreatedAt: base, ExpiresAt: &exp},
		{ID: ids.New(), ProjectID: p.ID, Name: "all", Scopes: []string{"*"}, CreatedAt: base},
	}
	for _, tok := range tokens {
		must(t, s.CreateToken(ctxOf(t), tok), "CreateToken")
	}
	for _, tok := range tokens {
		got, err := s.GetToken(ctxOf(t), p.ID, tok.ID)
		must(t, err, "GetToken")
		if got.ID != tok.ID || got.ProjectID != p.ID || got.Name != tok.Name || !slices.Equal(got.Scopes, tok.Scopes) ||
			!got.CreatedAt.Equal(base) || got.RevokedAt != nil {
			t.Fatalf("GetToken = %+v, want %+v", got, tok)
		}
		if (got.ExpiresAt == nil) != (tok.ExpiresAt == nil) || (got.ExpiresAt != nil && !got.ExpiresAt.Equal(*tok.ExpiresAt)) {
			t.Fatalf("GetToken ExpiresAt = %v, want %v", got.ExpiresAt, tok.ExpiresAt)
		}
	}
	if err := s.CreateToken(ctxOf(t), meta.Token{ID: tokens[0].ID, ProjectID: p.ID, Name: "again", CreatedAt: base}); err == nil {
		t.Fatal("CreateToken with a stored id succeeded")
	}
	got, err := s.GetToken(ctxOf(t), p.ID, tokens[0].ID)
	must(t, err, "GetToken")
	if got.Name != "ci" {
		t.Fatalf("a failed CreateToken overwrote the token: %+v", got)
	}
}

func testTokenProject(t *testing.T, s meta.Store) {
	p1, p2 := newProject(t, s, "one"), newProject(t, s, "two")
	t1 := meta.Token{ID: ids.New(), ProjectID: p1.ID, Name: "a", Scopes: []string{"*"}, CreatedAt: base}
	t2 := meta.Token{ID: ids.New(), ProjectID: p2.ID, Name: "b", Scopes: []string{"*"}, CreatedAt: base}
	must(t, s.CreateToken(ctxOf(t), t1), "CreateToken")
	must(t, s.CreateToken(ctxOf(t), t2), "CreateToken")
	for _, tok := range []meta.Token{t1, t2} {
		got, err := s.TokenProject(ctxOf(t), tok.ID)
		must(t, err, "TokenProject")
		if got != tok.ProjectID {
			t.Fatalf("TokenProject(%s) = %s, want %s", tok.ID, got, tok.ProjectID)
		}
	}
	_, err := s.TokenProject(ctxOf(t), ids.New())
	wantIs(t, err, meta.ErrNotFound, "TokenProject of an unknown token")
}

func testQueueTagsAndSQSAttributes(t *testing.T, s meta.Store) {
	p := newProject(t, s, "a")
	q := queueValue(p.ID, "tagged")
	q.Tags = map[string]string{"team": "payments", "env": ""}
	q.SQSAttributes = map[string]string{"MaximumMessageSize": "1024"}
	must(t, s.CreateQueue(ctxOf(t), q), "CreateQueue")
	got, err := s.GetQueue(ctxOf(t), p.ID, q.ID)
	must(t, err, "GetQueue")
	q.Version = got.Version
	sameQueue(t, "stored with tags", got, q)
	got.Tags = map[string]string{"team": "billing"}
	got.SQSAttributes = nil
	got.UpdatedAt = base.Add(time.Minute)
	want := got
	want.Version++
	got, err = s.UpdateQueue(ctxOf(t), got)
	must(t, err, "UpdateQueue")
	sameQueue(t, "UpdateQueue's answer", got, want)
	byName, err := s.GetQueueByName(ctxOf(t), p.ID, "tagged")
	must(t, err, "GetQueueByName")
	sameQueue(t, "stored after UpdateQueue", byName, want)
}

func testTokenNotFound(t *testing.T, s meta.Store) {
	p := newProject(t, s, "a")
	other := newProject(t, s, "b")
	tok := meta.Token{ID: ids.New(), ProjectID: p.ID, Name: "t", Scopes: []string{"*"}, CreatedAt: base}
	must(t, s.CreateToken(ctxOf(t), tok), "CreateToken")
	_, err := s.GetToken(ctxOf(t), p.ID, ids.New())
	wantIs(t, err, meta.ErrNotFound, "GetToken of a missing token")
	_, err = s.GetToken(ctxOf(t), other.ID, tok.ID)
	wantIs(t, err, meta.ErrNotFound, "GetToken through another project")
	err = s.CreateToken(ctxOf(t), meta.Token{ID: ids.New(), ProjectID: ids.New(), Name: "x", CreatedAt: base})
	wantIs(t, err, meta.ErrNotFound, "CreateToken in a missing project")
}

func testTokenRevoke(t *testing.T, s meta.Store) {
	p := newProject(t, s, "a")
	other := newProject(t, s, "b")
	tok := meta.Token{ID: ids.New(), ProjectID: p.ID, Name: "t", Scopes: []string{"*"}, CreatedAt: base}
	must(t, s.CreateToken(ctxOf(t), tok), "CreateToken")

	err := s.RevokeToken(ctxOf(t), other.ID, tok.ID, base.Add(time.Minute))
	wantIs(t, err, meta.ErrNotFound, "RevokeToken through another project")
	got, err := s.GetToken(ctxOf(t), p.ID, tok.ID)
	must(t, err, "GetToken")
	if got.RevokedAt != nil {
		t.Fatal("RevokeToken through another project revoked the token")
	}

	first := base.Add(time.Hour)
	must(t, s.RevokeToken(ctxOf(t), p.ID, tok.ID, first), "RevokeToken")
	got, err = s.GetToken(ctxOf(t), p.ID, tok.ID)
	must(t, err, "GetToken")
	if got.RevokedAt == nil || !got.RevokedAt.Equal(first) {
		t.Fatalf("RevokedAt = %v, want %v", got.RevokedAt, first)
	}
	must(t, s.RevokeToken(ctxOf(t), p.ID, tok.ID, first.Add(time.Hour)), "second RevokeToken")
	got, err = s.GetToken(ctxOf(t), p.ID, tok.ID)
	must(t, err, "GetToken")
	if got.RevokedAt == nil || !got.RevokedAt.Equal(first) {
		t.Fatalf("after a second revoke RevokedAt = %v, want the first time %v", got.RevokedAt, first)
	}
	if got.Name != "t" || !slices.Equal(got.Scopes, []string{"*"}) {
		t.Fatalf("RevokeToken changed other fields: %+v", got)
	}
	err = s.RevokeToken(ctxOf(t), p.ID, ids.New(), first)
	wantIs(t, err, meta.ErrNotFound, "RevokeToken of a missing token")
	_, err = s.GetToken(ctxOf(t), p.ID, ids.New())
	wantIs(t, err, meta.ErrNotFound, "GetToken after revoking a missing token (must not create it)")
}

// ---- queues ----

func testQueueCreateGet(t *testing.T, s meta.Store) {
	p := newProject(t, s, "a")
	dlq := newQueue(t, s, p.ID, "dlq", nil)
	q := meta.Queue{
		ID: ids.New(), ProjectID: p.ID, Name: "orders.fifo-1_X", Type: "fifo",
		CreatedAt: base, UpdatedAt: base.Add(time.Second),
		VisibilityTimeoutSeconds: 43200, RetentionSeconds: 60, DelaySeconds: 900, ReceiveWaitSeconds: 20,
		Redrive:           &meta.Redrive{DeadLetterQueue: dlq.ID, MaxReceiveCount: 5},
		ContentBasedDedup: true,
		MaxCancels:        new(int), // 0 kept apart from unset
		MaxMessageBytes:   1 << 20,
		GroupPolicy:       "exclusive", GroupAffinitySeconds: 90, MaxGroupsPerConsumer: 7,
		OnDeadLetter: "parkGroup",
		// The store keeps what it is given; the API decides which combinations are valid.
		Delivery: meta.DeliveryAtMostOnce,
		Version:  42, // ignored: a new queue has Version 1
	}
	must(t, s.CreateQueue(ctxOf(t), q), "CreateQueue")
	want := q
	want.Version = 1
	got, err := s.GetQueue(ctxOf(t), p.ID, q.ID)
	must(t, err, "GetQueue")
	sameQueue(t, "GetQueue", got, want)
	got, err = s.GetQueueByName(ctxOf(t), p.ID, q.Name)
	must(t, err, "GetQueueByName")
	sameQueue(t, "GetQueueByName", got, want)
	got, err = s.GetQueueByID(ctxOf(t), q.ID)
	must(t, err, "GetQueueByID")
	sameQueue(t, "GetQueueByID", got, want)

	// The caller's value is not aliased: changing it after the call changes nothing stored.
	q.Redrive.MaxReceiveCount = 999
	got, err = s.GetQueue(ctxOf(t), p.ID, q.ID)
	must(t, err, "GetQueue")
	if got.Redrive == nil || got.Redrive.MaxReceiveCount != 5 {
		t.Fatalf("stored redrive changed with the caller's value: %+v", got.Redrive)
	}
	got.Redrive.MaxReceiveCount = 7
	again, err := s.GetQueue(ctxOf(t), p.ID, q.ID)
	must(t, err, "GetQueue")
	if again.Redrive.MaxReceiveCount != 5 {
		t.Fatal("a returned queue aliases the stored one")
	}
}

func testQueueNotFound(t *testing.T, s meta.Store) {
	p := newProject(t, s, "a")
	q := newQueue(t, s, p.ID, "q", nil)
	missing := ids.New()
	_, err := s.GetQueue(ctxOf(t), p.ID, missing)
	wantIs(t, err, meta.ErrNotFound, "GetQueue of a missing id")
	_, err = s.GetQueueByID(ctxOf(t), missing)
	wantIs(t, err, meta.ErrNotFound, "GetQueueByID of a missing id")
	_, err = s.GetQueueByName(ctxOf(t), p.ID, "nope")
	wantIs(t, err, meta.ErrNotFound, "GetQueueByName of a missing name")
	_, err = s.GetQueueByName(ctxOf(t), p.ID, "Q")
	wantIs(t, err, meta.ErrNotFound, "GetQueueByName is case-sensitive")
	_, err = s.GetQueueByName(ctxOf(t), p.ID, "")
	wantIs(t, err, meta.ErrNotFound, "GetQueueByName of the empty name")
	_, err = s.DeleteQueue(ctxOf(t), p.ID, missing)
	wantIs(t, err, meta.ErrNotFound, "DeleteQueue of a missing id")
	err = s.CreateQueue(ctxOf(t), queueValue(ids.New(), "q"))
	wantIs(t, err, meta.ErrNotFound, "CreateQueue in a missing project")
	if _, err := s.GetQueueByID(ctxOf(t), q.ID); err != nil {
		t.Fatalf("GetQueueByID of an existing queue: %v", err)
	}
}

func testQueueNameUnique(t *testing.T, s meta.Store) {
	p := newProject(t, s, "a")
	p2 := newProject(t, s, "b")
	first := newQueue(t, s, p.ID, "orders", nil)

	dup := queueValue(p.ID, "orders")
	dup.Type = "fifo"
	wantRefusal(t, s.CreateQueue(ctxOf(t), dup), meta.ErrQueueNameTaken, apierr.QueueExists, "CreateQueue with a taken name")
	_, err := s.GetQueueByID(ctxOf(t), dup.ID)
	wantIs(t, err, meta.ErrNotFound, "GetQueueByID of the refused duplicate")
	got, err := s.GetQueueByName(ctxOf(t), p.ID, "orders")
	must(t, err, "GetQueueByName")
	sameQueue(t, "the first queue after a refused duplicate", got, first)

	// Names are case-sensitive, and unique per project only.
	newQueue(t, s, p.ID, "Orders", nil)
	newQueue(t, s, p2.ID, "orders", nil)
	got, err = s.GetQueueByName(ctxOf(t), p.ID, "orders")
	must(t, err, "GetQueueByName")
	if got.ID != first.ID {
		t.Fatal("another project's queue of the same name replaced the first")
	}

	// A queue id is unique too.
	sameID := queueValue(p.ID, "other-name")
	sameID.ID = first.ID
	if err := s.CreateQueue(ctxOf(t), sameID); err == nil {
		t.Fatal("CreateQueue with a stored queue id succeeded")
	}
	_, err = s.GetQueueByName(ctxOf(t), p.ID, "other-name")
	wantIs(t, err, meta.ErrNotFound, "the queue of a refused duplicate id")
}

func testQueueConcurrentCreate(t *testing.T, s meta.Store) {
	p := newProject(t, s, "a")
	const n = 8
	qs := make([]meta.Queue, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		qs[i] = queueValue(p.ID, "race")
		wg.Go(func() {
			<-start
			errs[i] = s.CreateQueue(ctxOf(t), qs[i])
		})
	}
	close(start)
	wg.Wait()
	winner := -1
	for i, err := range errs {
		if err == nil {
			if winner >= 0 {
				t.Fatalf("two concurrent creates of one name succeeded (%d and %d)", winner, i)
			}
			winner = i
			continue
		}
		wantIs(t, err, meta.ErrQueueNameTaken, fmt.Sprintf("concurrent create %d", i))
	}
	if winner < 0 {
		t.Fatalf("no concurrent create succeeded: %v", errs)
	}
	got, err := s.GetQueueByName(ctxOf(t), p.ID, "race")
	must(t, err, "GetQueueByName")
	if got.ID != qs[winner].ID {
		t.Fatalf("stored queue %s, want the winner %s", got.ID, qs[winner].ID)
	}
	for i, q := range qs {
		if i == winner {
			continue
		}
		_, err := s.GetQueueByID(ctxOf(t), q.ID)
		wantIs(t, err, meta.ErrNotFound, "GetQueueByID of a losing create")
	}
	names, _ := listAllQueues(t, s, p.ID, "", 10)
	if !slices.Equal(names, []string{"race"}) {
		t.Fatalf("ListQueues after the race = %v", names)
	}
}

func testQueueNameReuse(t *testing.T, s meta.Store) {
	p := newProject(t, s, "a")
	a := newQueue(t, s, p.ID, "jobs", nil)
	deleted, err := s.DeleteQueue(ctxOf(t), p.ID, a.ID)
	must(t, err, "DeleteQueue")
	sameQueue(t, "DeleteQueue's answer", deleted, a)

	b := queueValue(p.ID, "jobs")
	b.Type = "fifo"
	must(t, s.CreateQueue(ctxOf(t), b), "CreateQueue with the name of a deleted queue")
	got, err := s.GetQueueByName(ctxOf(t), p.ID, "jobs")
	must(t, err, "GetQueueByName")
	if got.ID != b.ID || got.Type != "fifo" || got.Version != 1 {
		t.Fatalf("GetQueueByName after reuse = %+v, want the new queue", got)
	}
	_, err = s.GetQueueByID(ctxOf(t), a.ID)
	wantIs(t, err, meta.ErrNotFound, "GetQueueByID of the deleted queue after its name was reused")
	_, err = s.GetQueue(ctxOf(t), p.ID, a.ID)
	wantIs(t, err, meta.ErrNotFound, "GetQueue of the deleted queue after its name was reused")
	_, err = s.DeleteQueue(ctxOf(t), p.ID, a.ID)
	wantIs(t, err, meta.ErrNotFound, "DeleteQueue of the deleted queue after its name was reused")
	stale := a
	stale.VisibilityTimeoutSeconds = 1
	_, err = s.UpdateQueue(ctxOf(t), stale)
	wantIs(t, err, meta.ErrNotFound, "UpdateQueue of the deleted queue after its name was reused")
	got, err = s.GetQueue(ctxOf(t), p.ID, b.ID)
	must(t, err, "GetQueue of the new queue")
	if got.VisibilityTimeoutSeconds != b.VisibilityTimeoutSeconds {
		t.Fatal("an update of the deleted queue changed the new queue of the same name")
	}
}

func testQueueProjectIsolation(t *testing.T, s meta.Store) {
	a := newProject(t, s, "a")
	b := newProject(t, s, "b")
	q := newQueue(t, s, a.ID, "secret", nil)
	_, err := s.GetQueue(ctxOf(t), b.ID, q.ID)
	wantIs(t, err, meta.ErrNotFound, "GetQueue through another project")
	_, err = s.GetQueueByName(ctxOf(t), b.ID, "secret")
	wantIs(t, err, meta.ErrNotFound, "GetQueueByName through another project")
	qs, next, err := s.ListQueues(ctxOf(t), b.ID, "", meta.Page{})
	must(t, err, "ListQueues")
	if len(qs) != 0 || next != "" {
		t.Fatalf("ListQueues of another project = %v", queueNames(qs))
	}
	upd := q
	upd.ProjectID = b.ID
	upd.DelaySeconds = 5
	_, err = s.UpdateQueue(ctxOf(t), upd)
	wantIs(t, err, meta.ErrNotFound, "UpdateQueue through another project")
	_, err = s.DeleteQueue(ctxOf(t), b.ID, q.ID)
	wantIs(t, err, meta.ErrNotFound, "DeleteQueue through another project")
	got, err := s.GetQueue(ctxOf(t), a.ID, q.ID)
	must(t, err, "GetQueue after attempts through another project")
	sameQueue(t, "queue after attempts through another project", got, q)
}

func testQueueList(t *testing.T, s meta.Store) {
	p := newProject(t, s, "a")
	other := newProject(t, s, "b")
	for _, n := range []string{"b", "a", "ab", "B", "a-1", "abc", "a_2", "zz", "A"} {
		newQueue(t, s, p.ID, n, nil)
	}
	newQueue(t, s, other.ID, "a-other", nil)
	gone := newQueue(t, s, p.ID, "a-gone", nil)
	_, err := s.DeleteQueue(ctxOf(t), p.ID, gone.ID)
	must(t, err, "DeleteQueue")

	for _, tc := range []struct {
		prefix string
		want   []string
	}{
		{"", []string{"A", "B", "a", "a-1", "a_2", "ab", "abc", "b", "zz"}},
		{"a", []string{"a", "a-1", "a_2", "ab", "abc"}},
		{"ab", []string{"ab", "abc"}},
		{"abc", []string{"abc"}},
		{"A", []string{"A"}},
		{"abcd", nil},
		{"q", nil},
	} {
		qs, next, err := s.ListQueues(ctxOf(t), p.ID, tc.prefix, meta.Page{Limit: 100})
		must(t, err, "ListQueues")
		if got := queueNames(qs); !slices.Equal(got, tc.want) {
			t.Fatalf("ListQueues(prefix %q) = %v, want %v", tc.prefix, got, tc.want)
		}
		if next != "" {
			t.Fatalf("ListQueues(prefix %q) of one page gave cursor %q", tc.prefix, next)
		}
	}
	qs, _, err := s.ListQueues(ctxOf(t), p.ID, "abc", meta.Page{})
	must(t, err, "ListQueues")
	if len(qs) != 1 || qs[0].ProjectID != p.ID || qs[0].Version != 1 || qs[0].RetentionSeconds != 345600 {
		t.Fatalf("ListQueues returned incomplete queues: %+v", qs)
	}
}

func testQueueListPaging(t *testing.T, s meta.Store) {
	p := newProject(t, s, "a")
	var want []string
	for i := range 7 {
		n := fmt.Sprintf("q%02d", i)
		newQueue(t, s, p.ID, n, nil)
		want = append(want, n)
	}
	newQueue(t, s, p.ID, "other", nil)
	for _, tc := range []struct {
		limit int
		pages []int
	}{{1, []int{1, 1, 1, 1, 1, 1, 1}}, {2, []int{2, 2, 2, 1}}, {7, []int{7}}, {3, []int{3, 3, 1}}, {100, []int{7}}} {
		names, pages := listAllQueues(t, s, p.ID, "q", tc.limit)
		if !slices.Equal(names, want) || !slices.Equal(pages, tc.pages) {
			t.Fatalf("limit %d: listed %v in pages %v, want %v in pages %v", tc.limit, names, pages, want, tc.pages)
		}
	}
	// A cursor stays usable when the queue it points after is deleted.
	qs, next, err := s.ListQueues(ctxOf(t), p.ID, "q", meta.Page{Limit: 3})
	must(t, err, "ListQueues")
	if next == "" || len(qs) != 3 {
		t.Fatalf("first page: %v, %q", queueNames(qs), next)
	}
	_, err = s.DeleteQueue(ctxOf(t), p.ID, qs[2].ID)
	must(t, err, "DeleteQueue")
	qs, _, err = s.ListQueues(ctxOf(t), p.ID, "q", meta.Page{Limit: 3, Cursor: next})
	must(t, err, "ListQueues after the cursor's queue was deleted")
	if got := queueNames(qs); !slices.Equal(got, []string{"q03", "q04", "q05"}) {
		t.Fatalf("second page after deleting the cursor's queue = %v", got)
	}
}

func testQueueListBadCursor(t *testing.T, s meta.Store) {
	p := newProject(t, s, "a")
	other := newProject(t, s, "b")
	newProject(t, s, "c")
	for _, n := range []string{"a1", "a2", "a3", "b1", "b2"} {
		newQueue(t, s, p.ID, n, nil)
		newQueue(t, s, other.ID, n, nil)
	}
	_, aCursor, err := s.ListQueues(ctxOf(t), p.ID, "a", meta.Page{Limit: 1})
	must(t, err, "ListQueues")
	_, otherCursor, err := s.ListQueues(ctxOf(t), other.ID, "", meta.Page{Limit: 1})
	must(t, err, "ListQueues")
	_, projectCursor, err := s.ListProjects(ctxOf(t), meta.Page{Limit: 1})
	must(t, err, "ListProjects")
	if aCursor == "" || otherCursor == "" || projectCursor == "" {
		t.Fatal("listings longer than the limit gave no cursor")
	}
	// The cursor works where it came from.
	qs, _, err := s.ListQueues(ctxOf(t), p.ID, "a", meta.Page{Limit: 1, Cursor: aCursor})
	must(t, err, "ListQueues with its own cursor")
	if got := queueNames(qs); !slices.Equal(got, []string{"a2"}) {
		t.Fatalf("second page = %v, want [a2]", got)
	}
	for _, tc := range []struct{ what, prefix, cursor string }{
		{"garbage", "", "%%%not base64%%%"},
		{"base64 garbage", "", base64.RawURLEncoding.EncodeToString([]byte("hello"))},
		{"empty object", "", base64.RawURLEncoding.EncodeToString([]byte("{}"))},
		{"truncated", "a", aCursor[:len(aCursor)/2]},
		{"another project's cursor", "", otherCursor},
		{"a cursor of another prefix", "b", aCursor},
		{"a project listing cursor", "", projectCursor},
	} {
		_, _, err := s.ListQueues(ctxOf(t), p.ID, tc.prefix, meta.Page{Limit: 1, Cursor: tc.cursor})
		wantRefusal(t, err, meta.ErrBadCursor, apierr.InvalidArgument, "ListQueues with "+tc.what)
	}
}

func testQueueUpdate(t *testing.T, s meta.Store) {
	p := newProject(t, s, "a")
	q := newQueue(t, s, p.ID, "q", nil)
	upd := q
	upd.VisibilityTimeoutSeconds = 60
	upd.RetentionSeconds = 120
	upd.DelaySeconds = 5
	upd.ReceiveWaitSeconds = 10
	upd.ContentBasedDedup = true
	upd.MaxCancels = &[]int{7}[0]
	upd.MaxMessageBytes = 4096
	upd.GroupPolicy, upd.GroupAffinitySeconds, upd.MaxGroupsPerConsumer = "sequenced", 30, 3
	upd.OnDeadLetter = "park"
	upd.UpdatedAt = base.Add(time.Minute)
	// Fields that never change: the store keeps the stored ones.
	upd.Name = "renamed"
	upd.Type = "fifo"
	upd.Delivery = meta.DeliveryAtMostOnce
	upd.CreatedAt = base.Add(time.Hour)

	got, err := s.UpdateQueue(ctxOf(t), upd)
	must(t, err, "UpdateQueue")
	want := q
	want.VisibilityTimeoutSeconds, want.RetentionSeconds, want.DelaySeconds, want.ReceiveWaitSeconds = 60, 120, 5, 10
	want.ContentBasedDedup = true
	want.MaxCancels = &[]int{7}[0]
	want.MaxMessageBytes = 4096
	want.GroupPolicy, want.GroupAffinitySeconds, want.MaxGroupsPerConsumer = "sequenced", 30, 3
	want.OnDeadLetter = "park"
	want.UpdatedAt = base.Add(time.Minute)
	want.Version = 2
	sameQueue(t, "UpdateQueue's answer", got, want)
	stored, err := s.GetQueue(ctxOf(t), p.ID, q.ID)
	must(t, err, "GetQueue")
	sameQueue(t, "stored after UpdateQueue", stored, want)
	_, err = s.GetQueueByName(ctxOf(t), p.ID, "renamed")
	wantIs(t, err, meta.ErrNotFound, "UpdateQueue must not rename")

	// Versions keep increasing.
	stored.DelaySeconds = 0
	stored.UpdatedAt = base.Add(2 * time.Minute)
	got, err = s.UpdateQueue(ctxOf(t), stored)
	must(t, err, "second UpdateQueue")
	if got.Version != 3 || got.DelaySeconds != 0 {
		t.Fatalf("second UpdateQueue = %+v, want Version 3", got)
	}
	byID, err := s.GetQueueByID(ctxOf(t), q.ID)
	must(t, err, "GetQueueByID")
	sameQueue(t, "GetQueueByID after updates", byID, got)
}

func testQueueUpdateVersionConflict(t *testing.T, s meta.Store) {
	p := newProject(t, s, "a")
	q := newQueue(t, s, p.ID, "q", nil)
	first := q
	first.DelaySeconds = 1
	cur, err := s.UpdateQueue(ctxOf(t), first)
	must(t, err, "UpdateQueue")

	stale := q // still Version 1
	stale.DelaySeconds = 2
	_, err = s.UpdateQueue(ctxOf(t), stale)
	if !errors.Is(err, meta.ErrVersionConflict) {
		t.Fatalf("UpdateQueue with a stale version: %v, want ErrVersionConflict", err)
	}
	future := cur
	future.Version = cur.Version + 5
	_, err = s.UpdateQueue(ctxOf(t), future)
	if !errors.Is(err, meta.ErrVersionConflict) {
		t.Fatalf("UpdateQueue with a future version: %v, want ErrVersionConflict", err)
	}
	got, err := s.GetQueue(ctxOf(t), p.ID, q.ID)
	must(t, err, "GetQueue")
	sameQueue(t, "after refused updates", got, cur)
}

func testQueueUpdateConcurrent(t *testing.T, s meta.Store) {
	p := newProject(t, s, "a")
	q := newQueue(t, s, p.ID, "q", nil)
	const n = 6
	errs := make([]error, n)
	results := make([]meta.Queue, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			u := q
			u.DelaySeconds = 100 + i
			results[i], errs[i] = s.UpdateQueue(ctxOf(t), u)
		})
	}
	close(start)
	wg.Wait()
	winner := -1
	for i, err := range errs {
		if err == nil {
			if winner >= 0 {
				t.Fatalf("two updates of Version 1 both succeeded (%d and %d)", winner, i)
			}
			winner = i
		} else if !errors.Is(err, meta.ErrVersionConflict) {
			t.Fatalf("concurrent update %d: %v, want ErrVersionConflict", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("no concurrent update succeeded")
	}
	got, err := s.GetQueue(ctxOf(t), p.ID, q.ID)
	must(t, err, "GetQueue")
	if got.Version != 2 || got.DelaySeconds != 100+winner {
		t.Fatalf("stored %+v, want the winner's update (delay %d, Version 2)", got, 100+winner)
	}
	sameQueue(t, "the winner's answer", results[winner], got)
}

func testQueueUpdateNotFound(t *testing.T, s meta.Store) {
	p := newProject(t, s, "a")
	q := queueValue(p.ID, "never-created")
	q.Version = 1
	_, err := s.UpdateQueue(ctxOf(t), q)
	wantIs(t, err, meta.ErrNotFound, "UpdateQueue of a missing queue")
	_, err = s.GetQueueByName(ctxOf(t), p.ID, "never-created")
	wantIs(t, err, meta.ErrNotFound, "UpdateQueue must not create a queue")
}

func testQueueDelete(t *testing.T, s meta.Store) {
	p := newProject(t, s, "a")
	keep := newQueue(t, s, p.ID, "keep", nil)
	q := newQueue(t, s, p.ID, "q", nil)
	upd := q
	upd.DelaySeconds = 9
	q, err := s.UpdateQueue(ctxOf(t), upd)
	must(t, err, "UpdateQueue")
	deleted, err := s.DeleteQueue(ctxOf(t), p.ID, q.ID)
	must(t, err, "DeleteQueue")
	sameQueue(t, "DeleteQueue's answer", deleted, q)
	_, err = s.GetQueue(ctxOf(t), p.ID, q.ID)
	wantIs(t, err, meta.ErrNotFound, "GetQueue after delete")
	_, err = s.GetQueueByID(ctxOf(t), q.ID)
	wantIs(t, err, meta.ErrNotFound, "GetQueueByID after delete")
	_, err = s.GetQueueByName(ctxOf(t), p.ID, "q")
	wantIs(t, err, meta.ErrNotFound, "GetQueueByName after delete")
	_, err = s.DeleteQueue(ctxOf(t), p.ID, q.ID)
	wantIs(t, err, meta.ErrNotFound, "second DeleteQueue")
	names, _ := listAllQueues(t, s, p.ID, "", 10)
	if !slices.Equal(names, []string{"keep"}) {
		t.Fatalf("ListQueues after delete = %v", names)
	}
	got, err := s.GetQueue(ctxOf(t), p.ID, keep.ID)
	must(t, err, "GetQueue of the other queue")
	sameQueue(t, "the other queue", got, keep)
}

// ---- redrive references ----

func withRedrive(t *testing.T, s meta.Store, q meta.Queue, r *meta.Redrive) (meta.Queue, error) {
	t.Helper()
	u := q
	u.Redrive = r
	u.UpdatedAt = q.UpdatedAt.Add(time.Second)
	return s.UpdateQueue(ctxOf(t), u)
}

func testRedriveCreateAndDelete(t *testing.T, s meta.Store) {
	p := newProject(t, s, "a")
	dlq := newQueue(t, s, p.ID, "dlq", nil)
	q := newQueue(t, s, p.ID, "work", &meta.Redrive{DeadLetterQueue: dlq.ID, MaxReceiveCount: 3})
	got, err := s.GetQueue(ctxOf(t), p.ID, q.ID)
	must(t, err, "GetQueue")
	if got.Redrive == nil || got.Redrive.DeadLetterQueue != dlq.ID || got.Redrive.MaxReceiveCount != 3 {
		t.Fatalf("stored redrive %+v", got.Redrive)
	}
	wantInUse(t, s, dlq)
	// A dead-letter queue in use can still be updated.
	d2 := dlq
	d2.RetentionSeconds = 1209600
	_, err = s.UpdateQueue(ctxOf(t), d2)
	must(t, err, "UpdateQueue of a dead-letter queue in use")
	wantInUse(t, s, dlq)

	q, err = withRedrive(t, s, got, nil)
	must(t, err, "UpdateQueue removing the redrive")
	if q.Redrive != nil {
		t.Fatalf("redrive after removal: %+v", q.Redrive)
	}
	got, err = s.GetQueue(ctxOf(t), p.ID, q.ID)
	must(t, err, "GetQueue")
	if got.Redrive != nil {
		t.Fatalf("stored redrive after removal: %+v", got.Redrive)
	}
	wantDeletable(t, s, dlq)
}

func testRedriveCountsReferences(t *testing.T, s meta.Store) {
	p := newProject(t, s, "a")
	dlq := newQueue(t, s, p.ID, "dlq", nil)
	r := &meta.Redrive{DeadLetterQueue: dlq.ID, MaxReceiveCount: 1}
	q1 := newQueue(t, s, p.ID, "q1", r)
	q2 := newQueue(t, s, p.ID, "q2", nil)
	q2, err := withRedrive(t, s, q2, r)
	must(t, err, "UpdateQueue adding a redrive")
	wantInUse(t, s, dlq)
	_, err = withRedrive(t, s, q1, nil)
	must(t, err, "UpdateQueue removing q1's redrive")
	wantInUse(t, s, dlq) // q2 still names it
	// Re-adding a redrive and removing it again must balance.
	q1, err = s.GetQueue(ctxOf(t), p.ID, q1.ID)
	must(t, err, "GetQueue")
	q1, err = withRedrive(t, s, q1, r)
	must(t, err, "UpdateQueue re-adding q1's redrive")
	_, err = withRedrive(t, s, q1, nil)
	must(t, err, "UpdateQueue removing q1's redrive again")
	wantInUse(t, s, dlq)
	_, err = withRedrive(t, s, q2, nil)
	must(t, err, "UpdateQueue removing q2's redrive")
	wantDeletable(t, s, dlq)
}

func testRedriveMove(t *testing.T, s meta.Store) {
	p := newProject(t, s, "a")
	a := newQueue(t, s, p.ID, "dlq-a", nil)
	b := newQueue(t, s, p.ID, "dlq-b", nil)
	q := newQueue(t, s, p.ID, "work", &meta.Redrive{DeadLetterQueue: a.ID, MaxReceiveCount: 2})
	q, err := withRedrive(t, s, q, &meta.Redrive{DeadLetterQueue: b.ID, MaxReceiveCount: 4})
	must(t, err, "UpdateQueue moving the redrive from A to B")
	if q.Redrive == nil || q.Redrive.DeadLetterQueue != b.ID || q.Redrive.MaxReceiveCount != 4 || q.Version != 2 {
		t.Fatalf("UpdateQueue answer %+v", q)
	}
	wantInUse(t, s, b)
	wantDeletable(t, s, a)
	// Moving to a queue that no longer exists fails and leaves the reference on B.
	_, err = withRedrive(t, s, q, &meta.Redrive{DeadLetterQueue: a.ID, MaxReceiveCount: 4})
	wantRefusal(t, err, meta.ErrDeadLetterNotFound, apierr.NotFound, "UpdateQueue naming a deleted dead-letter queue")
	got, err := s.GetQueue(ctxOf(t), p.ID, q.ID)
	must(t, err, "GetQueue")
	sameQueue(t, "after a refused redrive change", got, q)
	wantInUse(t, s, b)
}

func testRedriveSameQueueNewCount(t *testing.T, s meta.Store) {
	p := newProject(t, s, "a")
	dlq := newQueue(t, s, p.ID, "dlq", nil)
	q := newQueue(t, s, p.ID, "work", &meta.Redrive{DeadLetterQueue: dlq.ID, MaxReceiveCount: 2})
	for i := range 3 {
		var err error
		q, err = withRedrive(t, s, q, &meta.Redrive{DeadLetterQueue: dlq.ID, MaxReceiveCount: 10 + i})
		must(t, err, "UpdateQueue changing maxReceiveCount")
		u := q
		u.DelaySeconds = i
		q, err = s.UpdateQueue(ctxOf(t), u) // a change that keeps the redrive as it is
		must(t, err, "UpdateQueue keeping the redrive")
	}
	if q.Redrive == nil || q.Redrive.MaxReceiveCount != 12 {
		t.Fatalf("redrive %+v", q.Redrive)
	}
	wantInUse(t, s, dlq)
	_, err := withRedrive(t, s, q, nil)
	must(t, err, "UpdateQueue removing the redrive")
	wantDeletable(t, s, dlq) // one reference was counted, however often it was restated
}

func testRedriveMissingDLQ(t *testing.T, s meta.Store) {
	p := newProject(t, s, "a")
	q := queueValue(p.ID, "work")
	q.Redrive = &meta.Redrive{DeadLetterQueue: ids.New(), MaxReceiveCount: 1}
	wantRefusal(t, s.CreateQueue(ctxOf(t), q), meta.ErrDeadLetterNotFound, apierr.NotFound, "CreateQueue naming a missing dead-letter queue")
	_, err := s.GetQueueByName(ctxOf(t), p.ID, "work")
	wantIs(t, err, meta.ErrNotFound, "a refused CreateQueue must store nothing")
	_, err = s.GetQueueByID(ctxOf(t), q.ID)
	wantIs(t, err, meta.ErrNotFound, "a refused CreateQueue must store nothing")

	// A deleted queue is missing too.
	gone := newQueue(t, s, p.ID, "gone", nil)
	_, err = s.DeleteQueue(ctxOf(t), p.ID, gone.ID)
	must(t, err, "DeleteQueue")
	q.Redrive.DeadLetterQueue = gone.ID
	wantRefusal(t, s.CreateQueue(ctxOf(t), q), meta.ErrDeadLetterNotFound, apierr.NotFound, "CreateQueue naming a deleted dead-letter queue")

	// The name stays free: the same queue without redrive is created.
	q.Redrive = nil
	must(t, s.CreateQueue(ctxOf(t), q), "CreateQueue after refused ones")
	_, err = withRedrive(t, s, meta.Queue{ID: q.ID, ProjectID: p.ID, Version: 1, UpdatedAt: base}, &meta.Redrive{DeadLetterQueue: ids.New(), MaxReceiveCount: 1})
	wantRefusal(t, err, meta.ErrDeadLetterNotFound, apierr.NotFound, "UpdateQueue naming a missing dead-letter queue")
	got, err := s.GetQueue(ctxOf(t), p.ID, q.ID)
	must(t, err, "GetQueue")
	if got.Version != 1 || got.Redrive != nil {
		t.Fatalf("a refused UpdateQueue changed the queue: %+v", got)
	}
}

func testRedriveOtherProject(t *testing.T, s meta.Store) {
	a := newProject(t, s, "a")
	b := newProject(t, s, "b")
	foreign := newQueue(t, s, b.ID, "dlq", nil)
	q := queueValue(a.ID, "work")
	q.Redrive = &meta.Redrive{DeadLetterQueue: foreign.ID, MaxReceiveCount: 1}
	wantRefusal(t, s.CreateQueue(ctxOf(t), q), meta.ErrDeadLetterNotFound, apierr.NotFound, "CreateQueue naming another project's queue")
	_, err := s.GetQueueByName(ctxOf(t), a.ID, "work")
	wantIs(t, err, meta.ErrNotFound, "a refused CreateQueue must store nothing")

	own := newQueue(t, s, a.ID, "work", nil)
	_, err = withRedrive(t, s, own, &meta.Redrive{DeadLetterQueue: foreign.ID, MaxReceiveCount: 1})
	wantRefusal(t, err, meta.ErrDeadLetterNotFound, apierr.NotFound, "UpdateQueue naming another project's queue")
	got, err := s.GetQueue(ctxOf(t), a.ID, own.ID)
	must(t, err, "GetQueue")
	sameQueue(t, "after a refused update", got, own)
	wantDeletable(t, s, foreign) // no reference was left behind
}

func testRedriveDeleteReferrer(t *testing.T, s meta.Store) {
	p := newProject(t, s, "a")
	dlq := newQueue(t, s, p.ID, "dlq", nil)
	q := newQueue(t, s, p.ID, "work", &meta.Redrive{DeadLetterQueue: dlq.ID, MaxReceiveCount: 1})
	// A dead-letter queue can itself name a dead-letter queue (a chain).
	dlq2 := newQueue(t, s, p.ID, "dlq2", nil)
	dlq, err := withRedrive(t, s, dlq, &meta.Redrive{DeadLetterQueue: dlq2.ID, MaxReceiveCount: 1})
	must(t, err, "UpdateQueue chaining dead-letter queues")
	wantInUse(t, s, dlq)
	wantInUse(t, s, dlq2)
	deleted, err := s.DeleteQueue(ctxOf(t), p.ID, q.ID)
	must(t, err, "DeleteQueue of the referring queue")
	if deleted.Redrive == nil || deleted.Redrive.DeadLetterQueue != dlq.ID {
		t.Fatalf("DeleteQueue answer %+v lacks its redrive", deleted)
	}
	wantInUse(t, s, dlq2)
	wantDeletable(t, s, dlq) // deleting dlq drops its reference on dlq2
	wantDeletable(t, s, dlq2)
}

// testRedriveConcurrentChanges moves a redrive between two dead-letter queues from several
// goroutines, then deletes the queue while they go on: the references must balance whatever
// interleaving happened.
func testRedriveConcurrentChanges(t *testing.T, s meta.Store) {
	p := newProject(t, s, "a")
	dlqs := []meta.Queue{newQueue(t, s, p.ID, "dlq-a", nil), newQueue(t, s, p.ID, "dlq-b", nil)}
	q := newQueue(t, s, p.ID, "work", nil)
	redriveFor := func(i int) *meta.Redrive {
		switch i % 3 {
		case 0:
			return &meta.Redrive{DeadLetterQueue: dlqs[0].ID, MaxReceiveCount: 1 + i}
		case 1:
			return &meta.Redrive{DeadLetterQueue: dlqs[1].ID, MaxReceiveCount: 1 + i}
		}
		return nil
	}
	// update moves the redrive until the queue is gone or n updates were tried.
	update := func(g, n int) error {
		for i := range n {
			cur, err := s.GetQueue(ctxOf(t), p.ID, q.ID)
			if errors.Is(err, meta.ErrNotFound) {
				return nil
			}
			if err != nil {
				return err
			}
			_, err = withRedrive(t, s, cur, redriveFor(g+i))
			if err != nil && !errors.Is(err, meta.ErrVersionConflict) && !errors.Is(err, meta.ErrNotFound) {
				return err
			}
		}
		return nil
	}
	run := func(fns ...func() error) {
		t.Helper()
		errs := make([]error, len(fns))
		var wg sync.WaitGroup
		for i, fn := range fns {
			wg.Go(func() { errs[i] = fn() })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
	}

	run(func() error { return update(0, 6) }, func() error { return update(1, 6) }, func() error { return update(2, 6) })
	cur, err := s.GetQueue(ctxOf(t), p.ID, q.ID)
	must(t, err, "GetQueue")
	for _, d := range dlqs {
		_, err := s.DeleteQueue(ctxOf(t), p.ID, d.ID)
		if cur.Redrive != nil && cur.Redrive.DeadLetterQueue == d.ID {
			wantIs(t, err, meta.ErrQueueInUse, "DeleteQueue of the named dead-letter queue")
		} else {
			must(t, err, "DeleteQueue of a dead-letter queue no longer named")
			must(t, s.CreateQueue(ctxOf(t), d), "CreateQueue again") // same id and name
		}
	}

	// Delete while the updates go on. A store may ask to retry (Unavailable) under contention.
	del := func() error {
		for range 50 {
			_, err := s.DeleteQueue(ctxOf(t), p.ID, q.ID)
			if err == nil || errors.Is(err, meta.ErrNotFound) {
				return nil
			}
			if !errors.Is(err, meta.ErrUnavailable) {
				return err
			}
		}
		return errors.New("DeleteQueue kept failing")
	}
	run(func() error { return update(0, 20) }, func() error { return update(1, 20) }, del)
	_, err = s.GetQueue(ctxOf(t), p.ID, q.ID)
	wantIs(t, err, meta.ErrNotFound, "GetQueue after the delete")
	for _, d := range dlqs {
		wantDeletable(t, s, d)
	}
}

// testRefusals: requests no caller should make are refused with package meta's sentinels (the
// API answers them, naming the field), and store nothing.
func testRefusals(t *testing.T, s meta.Store) {
	wantRefusal(t, s.CreateProject(ctxOf(t), meta.Project{Name: "zero", CreatedAt: base}), meta.ErrZeroID, apierr.InvalidArgument, "CreateProject with a zero id")
	p := newProject(t, s, "a")
	wantRefusal(t, s.CreateToken(ctxOf(t), meta.Token{ProjectID: p.ID, CreatedAt: base}), meta.ErrZeroID, apierr.InvalidArgument, "CreateToken with a zero id")
	zero := queueValue(p.ID, "zero")
	zero.ID = ids.ID{}
	wantRefusal(t, s.CreateQueue(ctxOf(t), zero), meta.ErrZeroID, apierr.InvalidArgument, "CreateQueue with a zero id")
	wantRefusal(t, s.CreateQueue(ctxOf(t), queueValue(p.ID, "")), meta.ErrEmptyName, apierr.InvalidArgument, "CreateQueue without a name")
	self := queueValue(p.ID, "self")
	self.Redrive = &meta.Redrive{DeadLetterQueue: self.ID, MaxReceiveCount: 1}
	wantRefusal(t, s.CreateQueue(ctxOf(t), self), meta.ErrSelfDeadLetter, apierr.InvalidArgument, "CreateQueue naming itself as dead-letter queue")
	q := newQueue(t, s, p.ID, "work", nil)
	_, err := withRedrive(t, s, q, &meta.Redrive{DeadLetterQueue: q.ID, MaxReceiveCount: 1})
	wantRefusal(t, err, meta.ErrSelfDeadLetter, apierr.InvalidArgument, "UpdateQueue naming itself as dead-letter queue")
	if qs, _, err := s.ListQueues(ctxOf(t), p.ID, "", meta.Page{}); err != nil || len(qs) != 1 {
		t.Fatalf("after refused creates: %d queues, %v; want only %q", len(qs), err, q.Name)
	}
}
