// Package e2e tests the whole API tier end to end over HTTP, the way users reach it: two API
// replicas built exactly as production builds them (pkg/stack) on one real redis-server and
// DynamoDB Local, every response checked against openapi.yaml.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/redis/go-redis/v9"

	"github.com/queueshq/queues/pkg/apitest"
	"github.com/queueshq/queues/pkg/keys"
	"github.com/queueshq/queues/pkg/meta/dynamometa"
	"github.com/queueshq/queues/pkg/stack"
	"github.com/queueshq/queues/pkg/testenv"
)

const operator = "e2e-operator-secret"

// world is what every test shares: two replicas (A and B) on one Redis and one table.
type world struct {
	redisAddr string
	rdb       *redis.Client
	ddb       *dynamodb.Client
	table     string
	ring      *keys.Ring
	a, b      *httptest.Server

	mu   sync.Mutex
	seen map[string]bool
}

var w *world

func TestMain(m *testing.M) {
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e setup:", err)
		code = 1
	}
	testenv.StopAll()
	os.Exit(code)
}

func run(m *testing.M) (int, error) {
	ctx := context.Background()
	addr, stopRedis, err := testenv.StartRedis(ctx)
	if err != nil {
		return 1, err
	}
	defer stopRedis()
	endpoint := os.Getenv(testenv.EnvDynamoDBEndpoint)
	if endpoint == "" {
		ep, stop, err := testenv.StartDynamoDB(ctx)
		if err != nil {
			return 1, err
		}
		defer stop()
		endpoint = ep
	}
	ddb, err := testenv.DynamoClient(ctx, endpoint)
	if err != nil {
		return 1, err
	}
	table := testenv.TableName("e2e")
	if err := dynamometa.Migrate(ctx, ddb, table); err != nil {
		return 1, err
	}
	ring, err := keys.Generate("e2e")
	if err != nil {
		return 1, err
	}
	w = &world{redisAddr: addr, rdb: redis.NewClient(&redis.Options{Addr: addr}), ddb: ddb, table: table, ring: ring, seen: map[string]bool{}}
	defer w.rdb.Close()
	a, closeA, err := w.replica(ctx, stack.Options{})
	if err != nil {
		return 1, err
	}
	defer closeA()
	b, closeB, err := w.replica(ctx, stack.Options{})
	if err != nil {
		return 1, err
	}
	defer closeB()
	w.a, w.b = a, b
	return m.Run(), nil
}

// replica starts one more API replica on the shared Redis and table, with o's overrides.
func (w *world) replica(ctx context.Context, o stack.Options) (*httptest.Server, func(), error) {
	if o.Redis == nil {
		o.Redis = w.rdb
	}
	if o.Dynamo == nil {
		o.Dynamo = w.ddb
	}
	o.Table, o.Keys, o.OperatorToken = w.table, w.ring, operator
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.SweepEvery == 0 {
		o.SweepEvery = time.Second
	}
	r, err := stack.New(ctx, o)
	if err != nil {
		return nil, nil, err
	}
	srv := httptest.NewServer(r.Handler())
	return srv, func() { r.Drain(); srv.Close(); _ = r.Close() }, nil
}

// client speaks to one replica with one credential; every exchange is checked against
// openapi.yaml.
type client struct {
	t     testing.TB
	base  string
	token string
	chk   *apitest.Checker
	hc    *http.Client
}

func newClient(t testing.TB, srv *httptest.Server, token string) *client {
	chk := apitest.NewChecker(t, srv.URL)
	t.Cleanup(func() {
		w.mu.Lock()
		for k := range chk.Seen() {
			w.seen[k] = true
		}
		w.mu.Unlock()
	})
	return &client{t: t, base: srv.URL, token: token, chk: chk, hc: &http.Client{Transport: chk, Timeout: 40 * time.Second}}
}

func (c *client) as(token string) *client {
	cp := *c
	cp.token = token
	return &cp
}

// resp is a decoded answer.
type resp struct {
	status int
	header http.Header
	body   map[string]any
	raw    []byte
}

// do sends body (a string is sent as is, anything else as JSON; nil sends nothing).
func (c *client) do(method, path string, body any) resp {
	c.t.Helper()
	return c.doCT(method, path, body, "application/json")
}

func (c *client) doCT(method, path string, body any, contentType string) resp {
	c.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			c.t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", contentType)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	hr, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer hr.Body.Close()
	raw, _ := io.ReadAll(hr.Body)
	r := resp{status: hr.StatusCode, header: hr.Header, raw: raw}
	if len(raw) > 0 && strings.HasPrefix(hr.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(raw, &r.body); err != nil {
			c.t.Fatalf("%s %s: answer is not a JSON object: %s", method, path, raw)
		}
	}
	return r
}

// must fails the test unless the answer has status want.
func (r resp) must(t testing.TB, want int) resp {
	t.Helper()
	if r.status != want {
		t.Fatalf("status %d, want %d: %s", r.status, want, r.raw)
	}
	return r
}

// fails checks an error answer's status, code and (if not empty) field.
func (r resp) fails(t testing.TB, status int, code, field string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d (%s): %s", r.status, status, code, r.raw)
	}
	e, _ := r.body["error"].(map[string]any)
	if e == nil || e["code"] != code {
		t.Fatalf("error code: want %s: %s", code, r.raw)
	}
	if field != "" {
		d, _ := e["details"].(map[string]any)
		if d == nil || d["field"] != field {
			t.Fatalf("details.field: want %q: %s", field, r.raw)
		}
	}
}

func (r resp) str(key string) string { s, _ := r.body[key].(string); return s }

func (r resp) list(key string) []map[string]any {
	items, _ := r.body[key].([]any)
	out := make([]map[string]any, len(items))
	for i, it := range items {
		out[i], _ = it.(map[string]any)
	}
	return out
}

// tenant is a project with an all-scopes token, and clients on both replicas.
type tenant struct {
	project, token string
	a, b           *client
	op             *client
}

func newTenant(t testing.TB) *tenant {
	t.Helper()
	op := newClient(t, w.a, operator)
	p := op.do("POST", "/v1/projects", map[string]any{"name": "tenant " + t.Name()}).must(t, 201)
	tok := op.do("POST", "/v1/projects/"+p.str("id")+"/tokens", map[string]any{"name": "all", "scopes": []string{"*"}}).must(t, 201)
	return &tenant{project: p.str("id"), token: tok.str("token"), a: newClient(t, w.a, tok.str("token")), b: newClient(t, w.b, tok.str("token")), op: op}
}

// tokenWith issues a token with the given scopes in the tenant's project.
func (tn *tenant) tokenWith(t testing.TB, scopes ...string) string {
	t.Helper()
	return tn.op.do("POST", "/v1/projects/"+tn.project+"/tokens", map[string]any{"name": "scoped", "scopes": scopes}).must(t, 201).str("token")
}

// queue creates a queue with settings and returns its answer.
func (tn *tenant) queue(t testing.TB, name string, settings map[string]any) resp {
	t.Helper()
	body := map[string]any{"name": name}
	for k, v := range settings {
		body[k] = v
	}
	return tn.a.do("POST", "/v1/queues", body).must(t, 201)
}

// send sends bodies and returns their message ids.
func (c *client) send(t testing.TB, queue string, bodies ...string) []string {
	t.Helper()
	msgs := make([]map[string]any, len(bodies))
	for i, b := range bodies {
		msgs[i] = map[string]any{"body": b}
	}
	r := c.do("POST", "/v1/queues/"+queue+"/messages", map[string]any{"messages": msgs}).must(t, 200)
	if f := r.list("failed"); len(f) > 0 {
		t.Fatalf("send failed: %s", r.raw)
	}
	var ids []string
	for _, m := range r.list("messages") {
		ids = append(ids, m["messageId"].(string))
	}
	return ids
}

// receive receives with the given request body.
func (c *client) receive(t testing.TB, queue string, req map[string]any) []map[string]any {
	t.Helper()
	var body any
	if req != nil {
		body = req
	}
	return c.do("POST", "/v1/queues/"+queue+"/receive", body).must(t, 200).list("messages")
}

func (c *client) counts(t testing.TB, queue string) map[string]any {
	t.Helper()
	q := c.do("GET", "/v1/queues/"+queue, nil).must(t, 200)
	return q.body["counts"].(map[string]any)
}

func ack(t testing.TB, c *client, handle string) resp {
	t.Helper()
	return c.as("").do("POST", "/v1/receipts/ack", map[string]any{"receiptHandle": handle})
}

// testingFlag returns the value of a -test.* flag.
func testingFlag(name string) string {
	if f := flag.Lookup("test." + name); f != nil {
		return f.Value.String()
	}
	return ""
}
