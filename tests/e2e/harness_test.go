// Package e2e tests the whole API tier end to end over HTTP, the way users reach it, every
// response checked against openapi.yaml. The suite runs once per backend (docs/architecture.md:
// embedded mode runs the same public API with the same semantics):
//
//	stack     two API replicas built exactly as production builds them (services/queues/stack) on one
//	          real redis-server and DynamoDB Local
//	embedded  one node built exactly as `queues serve` builds it (services/queues/embedded) on a temporary
//	          data directory; replicas A and B are that one node
//
// TestMain runs the test binary once per backend, with QUEUES_E2E_BACKEND set; setting it
// yourself runs that backend only. Tests that need what only the production stack has (two
// processes sharing Redis, stopping Redis or DynamoDB, a replica with its own options) call
// requireStack.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/redis/go-redis/v9"

	"github.com/queueshq/queues/pkg/meta/dynamometa"
	"github.com/queueshq/queues/pkg/openapicheck"
	"github.com/queueshq/queues/pkg/signingkeys"
	"github.com/queueshq/queues/pkg/testservers"
	"github.com/queueshq/queues/services/queues/embedded"
	"github.com/queueshq/queues/services/queues/stack"
)

const operator = "e2e-operator-secret"

// Backends the suite runs on, and the variable that picks one.
const (
	backendEnv      = "QUEUES_E2E_BACKEND"
	backendStack    = "stack"
	backendEmbedded = "embedded"
)

var backends = []string{backendStack, backendEmbedded}

// world is what every test shares: two replicas (A and B) on one Redis and one table, or, on
// the embedded backend, one node serving as both.
type world struct {
	backend string

	// The stack backend's shared state (zero on the embedded backend).
	redisAddr string
	rdb       *redis.Client
	ddb       *dynamodb.Client
	table     string
	ring      *signingkeys.Ring

	a, b *httptest.Server
	// waiters counts the receives parked in long polls on a and b.
	waiters func() int

	mu   sync.Mutex
	seen map[string]bool
}

var w *world

func TestMain(m *testing.M) {
	backend := os.Getenv(backendEnv)
	if backend == "" {
		os.Exit(runEach())
	}
	var code int
	var err error
	switch backend {
	case backendStack:
		code, err = runStack(m)
	case backendEmbedded:
		code, err = runEmbedded(m)
	default:
		err = fmt.Errorf("%s=%q: want %s", backendEnv, backend, strings.Join(backends, " or "))
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e setup (%s): %v\n", backend, err)
		code = 1
	}
	testservers.StopAll()
	os.Exit(code)
}

// runEach runs this test binary, with the same arguments, once per backend (m.Run can run
// once per process) and returns the worst exit code. Every backend runs even if one fails.
func runEach() int {
	code := 0
	for _, b := range backends {
		fmt.Printf("e2e: backend %s\n", b)
		cmd := exec.Command(os.Args[0], os.Args[1:]...)
		cmd.Env = append(os.Environ(), backendEnv+"="+b)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		err := cmd.Run()
		var exit *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &exit) && exit.ExitCode() > 0:
			fmt.Printf("e2e: backend %s failed\n", b)
			code = max(code, exit.ExitCode())
		default:
			fmt.Printf("e2e: backend %s: %v\n", b, err)
			code = max(code, 1)
		}
	}
	return code
}

func runStack(m *testing.M) (int, error) {
	ctx := context.Background()
	be, err := testservers.StartBackends(ctx, "e2e", dynamometa.Migrate)
	if err != nil {
		return 1, err
	}
	defer be.Stop()
	addr, ddb, table := be.RedisAddr, be.Dynamo, be.Table
	ring, err := signingkeys.Generate("e2e")
	if err != nil {
		return 1, err
	}
	w = &world{backend: backendStack, redisAddr: addr, rdb: redis.NewClient(&redis.Options{Addr: addr}), ddb: ddb, table: table, ring: ring, seen: map[string]bool{}}
	defer w.rdb.Close()
	a, closeA, err := w.replica(ctx, stack.Options{})
	if err != nil {
		return 1, err
	}
	defer closeA()
	ra := lastReplica
	b, closeB, err := w.replica(ctx, stack.Options{})
	if err != nil {
		return 1, err
	}
	defer closeB()
	rb := lastReplica
	w.a, w.b = a, b
	w.waiters = func() int { return ra.Engine.Watchers() + rb.Engine.Watchers() }
	return m.Run(), nil
}

func runEmbedded(m *testing.M) (int, error) {
	srv, closeNode, err := openNode(embedded.Options{})
	if err != nil {
		return 1, err
	}
	defer closeNode()
	n := lastNode
	w = &world{backend: backendEmbedded, a: srv, b: srv, seen: map[string]bool{}, waiters: n.Engine.Watchers}
	return m.Run(), nil
}

// The replica or node most recently built by w.replica or openNode (set-up is sequential).
var (
	lastReplica *stack.Replica
	lastNode    *embedded.Node
)

// requireStack skips t on every backend but the production stack; why says what the test
// needs that only the stack has.
func requireStack(t testing.TB, why string) {
	t.Helper()
	if w.backend != backendStack {
		t.Skipf("needs the production stack (%s); backend is %s", why, w.backend)
	}
}

// openNode opens one more embedded node, as `queues serve` builds it, on a new temporary data
// directory with the e2e operator token and o's other settings; close removes the directory.
func openNode(o embedded.Options) (*httptest.Server, func(), error) {
	dir, err := os.MkdirTemp("", "queues-e2e-")
	if err != nil {
		return nil, nil, err
	}
	o.DataDir, o.OperatorToken = dir, operator
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.SweepEvery == 0 {
		o.SweepEvery = time.Second
	}
	if o.MeterEvery == 0 {
		o.MeterEvery = meterEvery
	}
	n, err := embedded.Open(context.Background(), o)
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	lastNode = n
	srv := httptest.NewServer(n.Handler())
	return srv, func() { n.Drain(); srv.Close(); _ = n.Close(); _ = os.RemoveAll(dir) }, nil
}

// replica starts one more API replica on the shared Redis and table, with o's overrides.
func (w *world) replica(ctx context.Context, o stack.Options) (*httptest.Server, func(), error) {
	if w.backend != backendStack {
		return nil, nil, fmt.Errorf("replica: the %s backend has no replicas (call requireStack)", w.backend)
	}
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
	if o.MeterEvery == 0 {
		o.MeterEvery = meterEvery
	}
	r, err := stack.New(ctx, o)
	if err != nil {
		return nil, nil, err
	}
	lastReplica = r
	srv := httptest.NewServer(r.Handler())
	return srv, func() { r.Drain(); srv.Close(); _ = r.Close() }, nil
}

// client speaks to one replica with one credential; every exchange is checked against
// openapi.yaml.
type client struct {
	t     testing.TB
	base  string
	token string
	chk   *openapicheck.Checker
	hc    *http.Client
}

func newClient(t testing.TB, srv *httptest.Server, token string) *client {
	chk := openapicheck.NewChecker(t, srv.URL)
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

func (r resp) has(key string) bool { _, ok := r.body[key]; return ok }

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
	return newTenantOn(t, w.a, w.b)
}

// newTenantOn creates the tenant through a, with clients on a and b (which share a store).
func newTenantOn(t testing.TB, a, b *httptest.Server) *tenant {
	t.Helper()
	op := newClient(t, a, operator)
	p := op.do("POST", "/v1/projects", map[string]any{"name": "tenant " + t.Name()}).must(t, 201)
	tok := op.do("POST", "/v1/projects/"+p.str("id")+"/tokens", map[string]any{"name": "all", "scopes": []string{"*"}}).must(t, 201)
	return &tenant{project: p.str("id"), token: tok.str("token"), a: newClient(t, a, tok.str("token")), b: newClient(t, b, tok.str("token")), op: op}
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
