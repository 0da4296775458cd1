package api

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/auth"
	"github.com/queueshq/queues/pkg/clock"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/engine/embeddedengine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/meta/memmeta"
	"github.com/queueshq/queues/pkg/metacache"
	"github.com/queueshq/queues/pkg/openapicheck"
	"github.com/queueshq/queues/pkg/receipt"
	"github.com/queueshq/queues/pkg/signingkeys"
	"github.com/queueshq/queues/pkg/tenancy"
)

// topicWorld is one API server with topics over the embedded engine and the in-memory
// metadata store, every exchange checked against openapi.yaml.
type topicWorld struct {
	t       *testing.T
	url     string
	client  *http.Client
	jwt     string
	store   *memmeta.Store
	eng     *embeddedengine.Engine
	auth    *auth.Authority
	project ids.ID
	// reads counts the topic reads that reach the metadata store.
	reads *countingTopics
}

// countingTopics counts the topic reads that reach the store.
type countingTopics struct {
	meta.TopicStore
	n atomic.Int64
}

func (c *countingTopics) GetTopic(ctx context.Context, p, id ids.ID) (meta.Topic, error) {
	c.n.Add(1)
	return c.TopicStore.GetTopic(ctx, p, id)
}

func (c *countingTopics) GetTopicByName(ctx context.Context, p ids.ID, name string) (meta.Topic, error) {
	c.n.Add(1)
	return c.TopicStore.GetTopicByName(ctx, p, name)
}

func (c *countingTopics) GetTopicByID(ctx context.Context, id ids.ID) (meta.Topic, error) {
	c.n.Add(1)
	return c.TopicStore.GetTopicByID(ctx, id)
}

// newTopicWorld starts the server; topics false leaves Config.Topics unset.
func newTopicWorld(t *testing.T, topics bool, limits tenancy.Limits) *topicWorld {
	clk := clock.Real{}
	eng, err := embeddedengine.Open(filepath.Join(t.TempDir(), "m.db"), clk, embeddedengine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	ring, err := signingkeys.Generate("k")
	if err != nil {
		t.Fatal(err)
	}
	store := memmeta.New()
	cache := metacache.New(store, &metacache.LocalBus{}, clk, 0)
	t.Cleanup(cache.Close)
	authority := auth.New(ring, "op", clk.Now)
	cfg := Config{Engine: eng, Meta: cache, Auth: authority, Receipts: receipt.NewSigner(ring), Tenancy: store, DefaultLimits: limits}
	reads := &countingTopics{TopicStore: store}
	if topics {
		cfg.Topics, cfg.TopicEngine = cache.Topics(reads), eng
	}
	srv := httptest.NewServer(New(cfg).Handler())
	t.Cleanup(srv.Close)
	chk := openapicheck.NewChecker(t, srv.URL)
	w := &topicWorld{t: t, url: srv.URL, client: chk.Client(), store: store, eng: eng, auth: authority, reads: reads}
	w.project = ids.New()
	w.jwt = w.token(w.project, "*")
	return w
}

// token issues a token of project p (made when new) with scopes.
func (w *topicWorld) token(p ids.ID, scopes ...string) string {
	w.t.Helper()
	ctx := w.t.Context()
	if _, err := w.store.GetProject(ctx, p); err != nil {
		if err := w.store.CreateProject(ctx, meta.Project{ID: p, Name: "p " + p.String(), CreatedAt: time.Now()}); err != nil {
			w.t.Fatal(err)
		}
	}
	tok := meta.Token{ID: ids.New(), ProjectID: p, Scopes: scopes, CreatedAt: time.Now()}
	if err := w.store.CreateToken(ctx, tok); err != nil {
		w.t.Fatal(err)
	}
	jwt, err := w.auth.Issue(p, tok.ID, tok.Scopes, time.Now(), nil)
	if err != nil {
		w.t.Fatal(err)
	}
	return jwt
}

// as is the world calling with another token.
func (w *topicWorld) as(jwt string) *topicWorld {
	c := *w
	c.jwt = jwt
	return &c
}

// call makes a request and decodes the answer's JSON into out (when not nil).
func (w *topicWorld) call(method, path, body string, out any) int {
	w.t.Helper()
	req, _ := http.NewRequest(method, w.url+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+w.jwt)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := w.client.Do(req)
	if err != nil {
		w.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			w.t.Fatalf("%s %s: %v: %s", method, path, err, data)
		}
	}
	return resp.StatusCode
}

// must is call that fails the test unless the status is want.
func (w *topicWorld) must(want int, method, path, body string, out any) {
	w.t.Helper()
	var raw json.RawMessage
	if st := w.call(method, path, body, &raw); st != want {
		w.t.Fatalf("%s %s: %d %s, want %d", method, path, st, raw, want)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			w.t.Fatal(err)
		}
	}
}

// TestTopicScopesAndTenants: each route needs its scope (decided before any lookup), and
// another project's topics and bindings are not found.
func TestTopicScopesAndTenants(t *testing.T) {
	w := newTopicWorld(t, true, tenancy.Defaults)
	var tp topicJSON
	w.must(201, "POST", "/v1/topics", `{"name":"t"}`, &tp)
	w.must(201, "POST", "/v1/queues", `{"name":"q"}`, nil)
	var b bindingJSON
	w.must(201, "POST", "/v1/queues/q/sources", `{"topic":"t"}`, &b)
	read := w.as(w.token(w.project, auth.ScopeQueuesRead))
	read.must(200, "GET", "/v1/topics/t/messages", "", nil)
	read.refused(403, "permission_denied", "", "POST", "/v1/topics/t/messages", `{"messages":[{"body":"x"}]}`)
	read.refused(403, "permission_denied", "", "POST", "/v1/topics", `{"name":"u"}`)
	read.refused(403, "permission_denied", "", "DELETE", "/v1/queues/q/sources/"+b.ID, "")
	send := w.as(w.token(w.project, auth.ScopeMessagesSend))
	send.must(200, "POST", "/v1/topics/t/messages", `{"messages":[{"body":"x"}]}`, nil)
	send.refused(403, "permission_denied", "", "GET", "/v1/topics/t", "")

	other := w.as(w.token(ids.New(), "*"))
	for _, path := range []string{"/v1/topics/t", "/v1/topics/" + tp.ID, "/v1/topics/" + tp.Slug, "/v1/topics/t/messages", "/v1/topics/t/bindings"} {
		other.refused(404, "not_found", "", "GET", path, "")
	}
	other.refused(404, "not_found", "", "POST", "/v1/topics/t/messages", `{"messages":[{"body":"x"}]}`)
	other.must(201, "POST", "/v1/queues", `{"name":"q"}`, nil)
	other.refused(404, "not_found", "topic", "POST", "/v1/queues/q/sources", `{"topic":"`+tp.ID+`"}`)
	other.refused(404, "not_found", "", "GET", "/v1/queues/q/sources/"+b.ID, "")
	other.must(201, "POST", "/v1/topics", `{"name":"t"}`, nil) // names are per project
}

type topicErr struct {
	Error struct {
		Code    string         `json:"code"`
		Details map[string]any `json:"details"`
	} `json:"error"`
}

// refused checks a request fails with status and code, naming field (when not "").
func (w *topicWorld) refused(status int, code, field, method, path, body string) {
	w.t.Helper()
	var e topicErr
	st := w.call(method, path, body, &e)
	if st != status || e.Error.Code != code || (field != "" && e.Error.Details["field"] != field) {
		w.t.Fatalf("%s %s %s: %d %+v, want %d %s naming %q", method, path, body, st, e.Error, status, code, field)
	}
}

func TestTopicRoutesNotServedWithoutTopics(t *testing.T) {
	w := newTopicWorld(t, false, tenancy.Defaults)
	w.client = http.DefaultClient // openapi.yaml documents the routes this server lacks
	w.refused(404, "not_found", "", "GET", "/v1/topics", "")
	w.must(201, "POST", "/v1/queues", `{"name":"q"}`, nil)
	w.refused(404, "not_found", "", "GET", "/v1/queues/q/sources", "")
}

func TestTopicLifecycle(t *testing.T) {
	w := newTopicWorld(t, true, tenancy.Defaults)
	var tp topicJSON
	w.must(201, "POST", "/v1/topics", `{"name":"orders"}`, &tp)
	if tp.Type != "standard" || tp.RetentionSeconds != 86400 || tp.LastSequence != 0 || tp.FirstSequence != 1 || !strings.HasPrefix(tp.Slug, "top_") {
		t.Fatalf("created %+v", tp)
	}
	w.refused(409, "topic_exists", "name", "POST", "/v1/topics", `{"name":"orders"}`)
	w.refused(400, "invalid_argument", "name", "POST", "/v1/topics", `{"name":"top_orders"}`)
	for _, ref := range []string{"orders", tp.Slug, tp.ID, strings.ToUpper(tp.ID)} {
		var got topicJSON
		w.must(200, "GET", "/v1/topics/"+ref, "", &got)
		if got.ID != tp.ID {
			t.Fatalf("%s: %+v", ref, got)
		}
	}
	// A UUID-shaped name: tried as an id first, then as a name.
	uuidName := ids.New().String()
	w.must(201, "POST", "/v1/topics", `{"name":"`+uuidName+`"}`, nil)
	var byName topicJSON
	w.must(200, "GET", "/v1/topics/"+uuidName, "", &byName)
	if byName.Name != uuidName {
		t.Fatalf("by its UUID-shaped name: %+v", byName)
	}
	w.refused(404, "not_found", "", "GET", "/v1/topics/nope", "")
	w.refused(400, "invalid_argument", "topic", "GET", "/v1/topics/top_0", "")
	var list struct {
		Topics     []topicJSON `json:"topics"`
		NextCursor *string     `json:"nextCursor"`
	}
	w.must(200, "GET", "/v1/topics?prefix=or&limit=10", "", &list)
	if len(list.Topics) != 1 || list.Topics[0].Name != "orders" || list.NextCursor != nil {
		t.Fatalf("list %+v", list)
	}
	w.must(200, "PATCH", "/v1/topics/orders", `{"retentionSeconds":0}`, &tp)
	if tp.RetentionSeconds != 0 {
		t.Fatalf("patched %+v", tp)
	}
	w.refused(400, "invalid_argument", "type", "PATCH", "/v1/topics/orders", `{"type":"fifo"}`)
	w.refused(400, "invalid_argument", "retentionSeconds", "PATCH", "/v1/topics/orders", `{"retentionSeconds":1209601}`)
	w.must(204, "DELETE", "/v1/topics/orders", "", nil)
	w.refused(404, "not_found", "", "GET", "/v1/topics/orders", "")
	w.must(201, "POST", "/v1/topics", `{"name":"orders"}`, nil) // the name is free again
}

func TestTopicQuota(t *testing.T) {
	lim := tenancy.Defaults
	lim.MaxTopics, lim.MaxStoredBytes = 1, 20
	w := newTopicWorld(t, true, lim)
	w.must(201, "POST", "/v1/topics", `{"name":"a"}`, nil)
	var e topicErr
	if st := w.call("POST", "/v1/topics", `{"name":"b"}`, &e); st != 403 || e.Error.Code != "quota_exceeded" || e.Error.Details["limit"] != "maxTopics" {
		t.Fatalf("past maxTopics: %d %+v", st, e)
	}
	// A publish past maxStoredBytes fails whole: nothing is appended.
	w.must(200, "POST", "/v1/topics/a/messages", `{"messages":[{"body":"0123456789"}]}`, nil)
	e = topicErr{}
	if st := w.call("POST", "/v1/topics/a/messages", `{"messages":[{"body":"x"},{"body":"0123456789"}]}`, &e); st != 403 ||
		e.Error.Code != "quota_exceeded" || e.Error.Details["limit"] != "maxStoredBytes" {
		t.Fatalf("past maxStoredBytes: %d %+v", st, e)
	}
	var tp topicJSON
	w.must(200, "GET", "/v1/topics/a", "", &tp)
	if tp.LastSequence != 1 {
		t.Fatalf("a refused publish appended: %+v", tp)
	}
}

type publishAnswer struct {
	Messages []publishOK `json:"messages"`
	Failed   []struct {
		Index int `json:"index"`
		Error struct {
			Code    string         `json:"code"`
			Details map[string]any `json:"details"`
		} `json:"error"`
	} `json:"failed"`
}

func TestPublishAndReadTheLog(t *testing.T) {
	w := newTopicWorld(t, true, tenancy.Defaults)
	w.must(201, "POST", "/v1/topics", `{"name":"t"}`, nil)
	var p publishAnswer
	w.must(200, "POST", "/v1/topics/t/messages", `{"messages":[
		{"body":"a","attributes":{"c":"red"}},
		{"body":"b","delaySeconds":3},
		{"body":"{\"x\":1}","key":"k","attributes":{"c":"blue"}},
		{"body":"{\"y\":2}","key":"k","merge":"patch"}]}`, &p)
	if len(p.Messages) != 3 || len(p.Failed) != 1 || p.Failed[0].Index != 1 || p.Failed[0].Error.Details["field"] != "messages[1].delaySeconds" {
		t.Fatalf("publish %+v", p)
	}
	for i, m := range p.Messages {
		if m.Sequence != uint64(i+1) || m.Duplicate {
			t.Fatalf("message %d: %+v", i, m)
		}
	}
	var st stateJSON
	w.must(200, "GET", "/v1/topics/t/state?key=k", "", &st)
	if st.Body != `{"x":1,"y":2}` || st.Sequence != 3 {
		t.Fatalf("state %+v", st)
	}
	w.refused(404, "not_found", "", "GET", "/v1/topics/t/state?key=none", "")
	w.refused(400, "invalid_argument", "key", "GET", "/v1/topics/t/state?key=a%20b", "")
	// A patch of a state that is no JSON object fails that message only.
	w.must(200, "POST", "/v1/topics/t/messages", `{"messages":[{"body":"plain","key":"s"}]}`, nil)
	w.must(200, "POST", "/v1/topics/t/messages", `{"messages":[{"body":"{}","key":"s","merge":"patch"},{"body":"c"}]}`, &p)
	if len(p.Messages) != 1 || p.Messages[0].Index != 1 || len(p.Failed) != 1 || p.Failed[0].Error.Details["field"] != "messages[0].body" {
		t.Fatalf("a refused patch: %+v", p)
	}
	w.must(200, "POST", "/v1/topics/t/messages", `{"messages":[{"body":null,"key":"k"}]}`, nil)
	w.refused(404, "not_found", "", "GET", "/v1/topics/t/state?key=k", "")
	var states struct {
		State []stateJSON `json:"state"`
	}
	w.must(200, "GET", "/v1/topics/t/state", "", &states)
	if len(states.State) != 1 || states.State[0].Key != "s" {
		t.Fatalf("state page %+v", states)
	}

	type logPage struct {
		Messages   []logEntryJSON `json:"messages"`
		NextCursor *string        `json:"nextCursor"`
	}
	var page logPage
	w.must(200, "GET", "/v1/topics/t/messages", "", &page)
	if len(page.Messages) != 6 || page.NextCursor != nil || !page.Messages[5].Deleted || page.Messages[5].Body != nil {
		t.Fatalf("the whole log: %+v", page)
	}
	// Pages of two, from 2 to 5.
	var seqs []uint64
	cursor := ""
	for range 5 {
		w.must(200, "GET", "/v1/topics/t/messages?from=2&to=5&limit=2"+cursor, "", &page)
		for _, m := range page.Messages {
			seqs = append(seqs, m.Sequence)
		}
		if page.NextCursor == nil {
			break
		}
		cursor = "&cursor=" + *page.NextCursor
	}
	if len(seqs) != 4 || seqs[0] != 2 || seqs[3] != 5 {
		t.Fatalf("paged %v", seqs)
	}
	w.must(200, "GET", "/v1/topics/t/messages?attribute.c=blue", "", &page)
	// The patch's entry (3) holds the merged message, the state's attributes included.
	if len(page.Messages) != 2 || page.Messages[0].Sequence != 2 || page.Messages[1].Sequence != 3 {
		t.Fatalf("filtered %+v", page)
	}
	w.must(200, "GET", "/v1/topics/t/messages?from="+time.Now().Add(time.Hour).UTC().Format(time.RFC3339), "", &page)
	if len(page.Messages) != 0 {
		t.Fatalf("from the future: %+v", page)
	}
	w.refused(400, "invalid_argument", "from", "GET", "/v1/topics/t/messages?from=yesterday", "")
	w.refused(400, "invalid_argument", "cursor", "GET", "/v1/topics/t/messages?cursor=abc", "")
	var tp topicJSON
	w.must(200, "GET", "/v1/topics/t", "", &tp)
	if tp.LastSequence != 6 || tp.StoredBytes <= 0 {
		t.Fatalf("topic after publishes %+v", tp)
	}
}

// TestPublishReadsTopicsFromTheCache: publishes resolve their topic through the metadata
// cache, not the store.
func TestPublishReadsTopicsFromTheCache(t *testing.T) {
	w := newTopicWorld(t, true, tenancy.Defaults)
	var tp topicJSON
	w.must(201, "POST", "/v1/topics", `{"name":"t"}`, &tp)
	before := w.reads.n.Load()
	for _, ref := range []string{"t", tp.ID, tp.Slug} {
		for range 5 {
			w.must(200, "POST", "/v1/topics/"+ref+"/messages", `{"messages":[{"body":"x"}]}`, nil)
		}
	}
	if n := w.reads.n.Load() - before; n > 1 {
		t.Fatalf("15 publishes read the store's topics %d times, want at most one", n)
	}
}

func TestPublishFIFO(t *testing.T) {
	w := newTopicWorld(t, true, tenancy.Defaults)
	w.must(201, "POST", "/v1/topics", `{"name":"t.fifo","type":"fifo"}`, nil)
	var a, b publishAnswer
	w.must(200, "POST", "/v1/topics/t.fifo/messages", `{"messages":[{"body":"x","groupId":"g","dedupId":"d"},{"body":"y"}]}`, &a)
	if len(a.Messages) != 1 || len(a.Failed) != 1 || a.Failed[0].Error.Details["field"] != "messages[1].groupId" {
		t.Fatalf("%+v", a)
	}
	w.must(200, "POST", "/v1/topics/t.fifo/messages", `{"messages":[{"body":"x","groupId":"g","dedupId":"d"}]}`, &b)
	if len(b.Messages) != 1 || !b.Messages[0].Duplicate || b.Messages[0].MessageID != a.Messages[0].MessageID || b.Messages[0].Sequence != a.Messages[0].Sequence {
		t.Fatalf("duplicate %+v of %+v", b, a)
	}
}

func TestBindings(t *testing.T) {
	w := newTopicWorld(t, true, tenancy.Defaults)
	w.must(201, "POST", "/v1/topics", `{"name":"t"}`, nil)
	w.must(201, "POST", "/v1/topics", `{"name":"f.fifo","type":"fifo"}`, nil)
	w.must(201, "POST", "/v1/queues", `{"name":"q"}`, nil)
	w.must(200, "POST", "/v1/topics/t/messages", `{"messages":[{"body":"a"},{"body":"b"}]}`, nil)

	w.refused(404, "not_found", "topic", "POST", "/v1/queues/q/sources", `{"topic":"nope"}`)
	w.refused(400, "invalid_argument", "topic", "POST", "/v1/queues/q/sources", `{"topic":"f.fifo"}`)
	w.refused(400, "invalid_argument", "from", "POST", "/v1/queues/q/sources", `{"topic":"t","from":"soon"}`)
	// A sequence past the next one names nothing published: refused, as the stream refuses it.
	w.refused(400, "invalid_argument", "from", "POST", "/v1/queues/q/sources", `{"topic":"t","from":4}`)
	w.refused(400, "invalid_argument", "from", "POST", "/v1/queues/q/sources", `{"topic":"t","from":"18446744073709551615"}`)
	w.refused(404, "not_found", "", "POST", "/v1/queues/nope/sources", `{"topic":"t"}`)
	var b bindingJSON
	w.must(201, "POST", "/v1/queues/q/sources", `{"topic":"t","from":"earliest","filter":{"attributes":{"c":"red"}}}`, &b)
	if b.From != "earliest" || b.StartSequence != 1 || b.Sequence != 0 || b.Lag != 2 || b.Queue != "q" || b.Topic != "t" ||
		string(b.Filter) != `{"attributes":{"c":["red"]}}` || !strings.HasPrefix(b.Slug, "qbd_") {
		t.Fatalf("created %+v", b)
	}
	w.refused(409, "binding_exists", "topic", "POST", "/v1/queues/q/sources", `{"topic":"t"}`)

	var got bindingJSON
	for _, ref := range []string{b.ID, b.Slug} {
		w.must(200, "GET", "/v1/queues/q/sources/"+ref, "", &got)
		if got.ID != b.ID || got.Lag != 2 {
			t.Fatalf("%s: %+v", ref, got)
		}
	}
	w.refused(400, "invalid_argument", "binding", "GET", "/v1/queues/q/sources/qbd_x", "")
	w.refused(404, "not_found", "", "GET", "/v1/queues/q/sources/"+ids.New().String(), "")
	var sources struct {
		Sources []bindingJSON `json:"sources"`
	}
	w.must(200, "GET", "/v1/queues/q/sources", "", &sources)
	var bindings struct {
		Bindings []bindingJSON `json:"bindings"`
	}
	w.must(200, "GET", "/v1/topics/t/bindings", "", &bindings)
	if len(sources.Sources) != 1 || len(bindings.Bindings) != 1 || bindings.Bindings[0].Queue != "q" {
		t.Fatalf("sources %+v, bindings %+v", sources, bindings)
	}
	var tp topicJSON
	w.must(200, "GET", "/v1/topics/t", "", &tp)
	if tp.Bindings != 1 {
		t.Fatalf("topic %+v", tp)
	}

	w.must(200, "PATCH", "/v1/queues/q/sources/"+b.ID, `{"filter":null}`, &got)
	if string(got.Filter) != "null" {
		t.Fatalf("patched %+v", got)
	}
	ebs, err := w.eng.Bindings(t.Context(), engine.Topic{ID: mustID(t, b.TopicID)})
	if err != nil || len(ebs) != 1 || ebs[0].Filter != "" {
		t.Fatalf("the engine's binding after the patch: %+v, %v", ebs, err)
	}
	w.refused(400, "invalid_argument", "filter", "PATCH", "/v1/queues/q/sources/"+b.ID, `{}`)

	w.must(204, "DELETE", "/v1/queues/q/sources/"+b.ID, "", nil)
	w.refused(404, "not_found", "", "GET", "/v1/queues/q/sources/"+b.ID, "")
	if ebs, err := w.eng.Bindings(t.Context(), engine.Topic{ID: mustID(t, b.TopicID)}); err != nil || len(ebs) != 0 {
		t.Fatalf("the engine's bindings after the delete: %+v, %v", ebs, err)
	}

	// Deleting the queue deletes its bindings, in the store and in the engine.
	w.must(201, "POST", "/v1/queues/q/sources", `{"topic":"t","from":"002"}`, &b)
	if b.StartSequence != 2 || b.From != "2" {
		t.Fatalf("from 2: %+v", b)
	}
	w.must(204, "DELETE", "/v1/queues/q", "", nil)
	w.must(200, "GET", "/v1/topics/t/bindings", "", &bindings)
	if len(bindings.Bindings) != 0 {
		t.Fatalf("bindings of a deleted queue: %+v", bindings)
	}
	if ebs, err := w.eng.Bindings(t.Context(), engine.Topic{ID: mustID(t, b.TopicID)}); err != nil || len(ebs) != 0 {
		t.Fatalf("the engine's bindings after the queue's delete: %+v, %v", ebs, err)
	}
}

func mustID(t *testing.T, s string) ids.ID {
	t.Helper()
	id, err := ids.ParseUUID(s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}
