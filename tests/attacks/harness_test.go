// Package attacks runs the security test plan's attacks (X1–X43) against a real running API
// tier: a replica built exactly as `queues api` builds it (services/queues/stack) on a real redis-server
// and DynamoDB Local, served by api.Serve (the production http.Server: header cap, timeouts)
// on a loopback port, with its admin listener (pkg/adminhttp). Each test names its rows; rows
// that do not apply, or are proven elsewhere, say why in rows_test.go.
//
// The server runs in this process, so the resource tests read its heap, RSS and goroutines
// directly and bound them.
package attacks

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/redis/go-redis/v9"

	"github.com/queueshq/queues/pkg/adminhttp"
	"github.com/queueshq/queues/pkg/api"
	"github.com/queueshq/queues/pkg/meta/dynamometa"
	"github.com/queueshq/queues/pkg/signingkeys"
	"github.com/queueshq/queues/pkg/testservers"
	"github.com/queueshq/queues/services/queues/stack"
)

const operator = "attacks-operator-secret"

// env is what every test shares.
type env struct {
	base, admin string // http://host:port of the API and of its admin listener
	rdb         *redis.Client
	ddb         *dynamodb.Client
	table       string
	ring        *signingkeys.Ring
	replica     *stack.Replica
	logs        *syncBuffer // everything the replica logged
	commands    *commandCounter
}

var e *env

func TestMain(m *testing.M) {
	code, err := run(m)
	if err != nil {
		fmt.Fprintf(os.Stderr, "attacks setup: %v\n", err)
		code = 1
	}
	testservers.StopAll()
	os.Exit(code)
}

func run(m *testing.M) (int, error) {
	ctx := context.Background()
	be, err := testservers.StartBackends(ctx, "attacks", dynamometa.Migrate)
	if err != nil {
		return 1, err
	}
	defer be.Stop()
	addr, ddb, table := be.RedisAddr, be.Dynamo, be.Table
	ring, err := signingkeys.Generate("atk")
	if err != nil {
		return 1, err
	}
	e = &env{rdb: redis.NewClient(&redis.Options{Addr: addr}), ddb: ddb, table: table, ring: ring,
		logs: &syncBuffer{}, commands: &commandCounter{}}
	defer e.rdb.Close()
	e.rdb.AddHook(e.commands)
	base, admin, stop, err := e.serve(stack.Options{Redis: e.rdb})
	if err != nil {
		return 1, err
	}
	defer stop()
	e.base, e.admin = base, admin
	return m.Run(), nil
}

// serve starts a replica with o's overrides (the shared Redis, table and keys by default),
// serves it with the production server on a loopback port and its admin listener on another.
func (e *env) serve(o stack.Options) (base, admin string, stop func(), err error) {
	return e.serveWrapped(o, nil)
}

// drainable serves a wrapped handler with the replica's drain.
type drainable struct {
	h http.Handler
	r *stack.Replica
}

func (d drainable) Handler() http.Handler { return d.h }
func (d drainable) Drain()                { d.r.Drain() }

// serveWrapped is serve with the replica's handler wrapped (nil: not wrapped), for tests that
// watch requests from inside the server.
func (e *env) serveWrapped(o stack.Options, wrap func(http.Handler) http.Handler) (base, admin string, stop func(), err error) {
	return e.serveTimeouts(o, wrap, api.DefaultTimeouts)
}

// serveTimeouts is serveWrapped with the production server's deadlines replaced by to.
func (e *env) serveTimeouts(o stack.Options, wrap func(http.Handler) http.Handler, to api.Timeouts) (base, admin string, stop func(), err error) {
	if o.Redis == nil {
		o.Redis = e.rdb
	}
	if o.Keys == nil {
		o.Keys = e.ring
	}
	o.Dynamo, o.Table, o.OperatorToken = e.ddb, e.table, operator
	o.Logger = slog.New(slog.NewJSONHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	o.SweepEvery = -1
	reg := adminhttp.NewRegistry()
	o.Registry = reg
	r, err := stack.New(context.Background(), o)
	if err != nil {
		return "", "", nil, err
	}
	if e.replica == nil {
		e.replica = r
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", "", nil, err
	}
	adm, err := adminhttp.Start("127.0.0.1:0", true, reg, o.Logger)
	if err != nil {
		return "", "", nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var h http.Handler = r.Handler()
	if wrap != nil {
		h = wrap(h)
	}
	go func() { defer close(done); _ = api.ServeTimeouts(ctx, ln, drainable{h, r}, to, time.Second, o.Logger) }()
	return "http://" + ln.Addr().String(), "http://" + adm.Addr(), func() {
		cancel()
		<-done
		_ = adm.Close()
		_ = r.Close()
	}, nil
}

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// commandCounter counts the Redis commands the replica sends (a go-redis hook), so a test can
// show that a refusal touched no storage.
type commandCounter struct {
	mu sync.Mutex
	n  int
}

func (c *commandCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *commandCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.mu.Lock()
		c.n++
		c.mu.Unlock()
		return next(ctx, cmd)
	}
}
func (c *commandCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.mu.Lock()
		c.n += len(cmds)
		c.mu.Unlock()
		return next(ctx, cmds)
	}
}
func (c *commandCounter) count() int { c.mu.Lock(); defer c.mu.Unlock(); return c.n }

// answer is a decoded response.
type answer struct {
	status int
	header http.Header
	raw    []byte
	body   map[string]any
}

func (a answer) code() string {
	er, _ := a.body["error"].(map[string]any)
	s, _ := er["code"].(string)
	return s
}

func (a answer) field() string {
	er, _ := a.body["error"].(map[string]any)
	d, _ := er["details"].(map[string]any)
	s, _ := d["field"].(string)
	return s
}

// is fails t unless the answer has the status and error code (and field, when not empty).
func (a answer) is(t testing.TB, status int, code, field string) {
	t.Helper()
	if a.status != status || (code != "" && a.code() != code) || (field != "" && a.field() != field) {
		t.Fatalf("got %d %s (field %q); want %d %s (field %q): %.300s", a.status, a.code(), a.field(), status, code, field, a.raw)
	}
}

var hc = &http.Client{Timeout: 30 * time.Second}

// call sends body (string as is, anything else as JSON) with token ("" for none).
func call(t testing.TB, method, path, token string, body any) answer {
	t.Helper()
	return callTo(t, e.base, method, path, token, body, nil)
}

func callTo(t testing.TB, base, method, path, token string, body any, hdr http.Header) answer {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, header: resp.Header, raw: raw}
	_ = json.Unmarshal(raw, &a.body)
	return a
}

// project creates a project and an all-scopes token in it.
func project(t testing.TB) (id, token string) {
	t.Helper()
	p := call(t, "POST", "/v1/projects", operator, map[string]any{"name": "atk-" + t.Name()})
	p.is(t, 201, "", "")
	id, _ = p.body["id"].(string)
	tk := call(t, "POST", "/v1/projects/"+id+"/tokens", operator, map[string]any{"name": "all", "scopes": []string{"*"}})
	tk.is(t, 201, "", "")
	token, _ = tk.body["token"].(string)
	remember(token)
	return id, token
}

// queueWithMessage creates a queue, sends one message, receives it and returns the handle.
func queueWithMessage(t testing.TB, token, name string, settings map[string]any) string {
	t.Helper()
	q := map[string]any{"name": name}
	for k, v := range settings {
		q[k] = v
	}
	call(t, "POST", "/v1/queues", token, q).is(t, 201, "", "")
	msg := map[string]any{"body": "hello"}
	if settings["type"] == "fifo" {
		msg["groupId"] = "g"
	}
	call(t, "POST", "/v1/queues/"+name+"/messages", token, map[string]any{"messages": []any{msg}}).is(t, 200, "", "")
	r := call(t, "POST", "/v1/queues/"+name+"/receive", token, map[string]any{"waitSeconds": 0})
	r.is(t, 200, "", "")
	ms, _ := r.body["messages"].([]any)
	if len(ms) != 1 {
		t.Fatalf("received %d messages: %s", len(ms), r.raw)
	}
	h, _ := ms[0].(map[string]any)["receiptHandle"].(string)
	remember(h)
	return h
}

// secrets are the tokens and receipt handles the tests obtained: none may appear in the logs.
var (
	secretsMu sync.Mutex
	secrets   = []string{operator}
)

func remember(s string) {
	secretsMu.Lock()
	defer secretsMu.Unlock()
	secrets = append(secrets, s)
}
