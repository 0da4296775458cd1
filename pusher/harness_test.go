package pusher_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/queueshq/queues/pkg/clock"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/engine/redisengine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/meta/memmeta"
	"github.com/queueshq/queues/pkg/meta/pushlog"
	"github.com/queueshq/queues/pkg/receipt"
	"github.com/queueshq/queues/pkg/signingkeys"
	"github.com/queueshq/queues/pkg/testservers"
	"github.com/queueshq/queues/pusher"
	"github.com/queueshq/queues/sdk/go/webhook"
)

var redisAddr string

func TestMain(m *testing.M) {
	addr, stop, err := testservers.StartRedis(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "redis:", err)
		os.Exit(1)
	}
	redisAddr = addr
	code := m.Run()
	stop()
	testservers.StopAll()
	// Every worker, lease renewer and subscription watcher stops with its pusher.
	if err := goleak.Find(); code == 0 && err != nil {
		fmt.Fprintln(os.Stderr, "goroutines left running:", err)
		code = 1
	}
	os.Exit(code)
}

// env is one test's world: a real Redis engine on a fake clock, an in-memory metadata store
// (the store's own behaviour is proven by metatest), receipt signing, and pushers.
type env struct {
	t        testing.TB
	rdb      *redis.Client
	clk      *clock.Fake
	eng      *redisengine.Engine
	store    *memmeta.Store
	signer   *receipt.Signer
	attempts *pushlog.Attempts
	project  meta.Project
	prefix   string

	events  chan event
	backlog []event // events seen by next but not matched yet
}

// event is something a pusher reported: an attempt, or a batch given back.
type event struct {
	queue    ids.ID
	member   string
	attempt  *meta.Attempt
	gaveBack int
	applied  *meta.Subscription
}

func newEnv(t testing.TB) *env {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	t.Cleanup(func() { _ = rdb.Close() })
	clk := clock.NewFake(time.Now().Truncate(time.Millisecond))
	eng, err := redisengine.New(rdb, clk, redisengine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	ring, err := signingkeys.Generate("t")
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, rdb: rdb, clk: clk, eng: eng, store: memmeta.New(), signer: receipt.NewSigner(ring),
		attempts: pushlog.NewAttempts(rdb), prefix: "t:" + ids.New().String(), events: make(chan event, 1024)}
	e.project = meta.Project{ID: ids.New(), Name: "p", CreatedAt: clk.Now()}
	if err := e.store.CreateProject(t.Context(), e.project); err != nil {
		t.Fatal(err)
	}
	return e
}

// queue creates a queue; mod changes its settings first.
func (e *env) queue(typ string, mod func(*meta.Queue)) meta.Queue {
	e.t.Helper()
	id := ids.New()
	q := meta.Queue{ID: id, ProjectID: e.project.ID, Name: "q" + id.String()[24:], Type: typ,
		CreatedAt: e.clk.Now(), UpdatedAt: e.clk.Now(), VisibilityTimeoutSeconds: 30, RetentionSeconds: 345600}
	if mod != nil {
		mod(&q)
	}
	if err := e.eng.CreateQueue(e.t.Context(), q.Engine(nil)); err != nil {
		e.t.Fatal(err)
	}
	if err := e.store.CreateQueue(e.t.Context(), q); err != nil {
		e.t.Fatal(err)
	}
	q.Version = 1
	return q
}

func (e *env) engineQueue(q meta.Queue) engine.Queue {
	if q.Redrive == nil {
		return q.Engine(nil)
	}
	dlq, err := e.store.GetQueueByID(e.t.Context(), q.Redrive.DeadLetterQueue)
	if err != nil {
		e.t.Fatal(err)
	}
	return q.Engine(&dlq)
}

// subscribe creates q's subscription to endpoint (batch 10, in flight 10, timeout 5 s).
func (e *env) subscribe(q meta.Queue, endpoint string, mod func(*meta.Subscription)) meta.Subscription {
	e.t.Helper()
	s := meta.Subscription{ID: ids.New(), QueueID: q.ID, ProjectID: q.ProjectID, Endpoint: endpoint,
		BatchSize: 10, MaxInFlight: 10, TimeoutSeconds: 5, Secret: webhook.NewSecret(), CreatedAt: e.clk.Now(), UpdatedAt: e.clk.Now()}
	if mod != nil {
		mod(&s)
	}
	if err := e.store.CreateSubscription(e.t.Context(), s); err != nil {
		e.t.Fatal(err)
	}
	s.Version = 1
	return s
}

// update changes a subscription in the store and tells p at once.
func (e *env) update(p *pusher.Pusher, s meta.Subscription, mod func(*meta.Subscription)) meta.Subscription {
	e.t.Helper()
	cur, err := e.store.GetSubscription(e.t.Context(), s.QueueID)
	if err != nil {
		e.t.Fatal(err)
	}
	mod(&cur)
	out, err := e.store.UpdateSubscription(e.t.Context(), cur)
	if err != nil {
		e.t.Fatal(err)
	}
	if p != nil {
		p.Changed(s.QueueID)
	}
	return out
}

// send sends bodies (with groups on fifo: group i%len(groups)).
func (e *env) send(q meta.Queue, bodies ...string) []ids.ID {
	e.t.Helper()
	msgs := make([]engine.Message, len(bodies))
	for i, b := range bodies {
		msgs[i] = engine.Message{Body: b}
	}
	return e.sendMsgs(q, msgs)
}

func (e *env) sendMsgs(q meta.Queue, msgs []engine.Message) []ids.ID {
	e.t.Helper()
	var out []ids.ID
	for len(msgs) > 0 {
		n := min(len(msgs), engine.MaxBatch)
		res, err := e.eng.Send(e.t.Context(), e.engineQueue(q), msgs[:n])
		if err != nil {
			e.t.Fatal(err)
		}
		for _, r := range res {
			out = append(out, r.MessageID)
		}
		msgs = msgs[n:]
	}
	return out
}

// pusher starts a pusher replica; it stops (gracefully) when the test ends.
func (e *env) pusher(mod func(*pusher.Config)) *pusher.Pusher {
	e.t.Helper()
	cfg := pusher.Config{
		Engine: e.eng, Store: e.store, Receipts: e.signer,
		Coordinator: pusher.NewRedisCoordinator(e.rdb, e.prefix), Attempts: e.attempts, Health: memmeta.NewHealth(),
		AllowPrivate: true, Clock: e.clk, RandN: func(int64) int64 { return 0 },
		LeaseTTL: 900 * time.Millisecond, Refresh: 100 * time.Millisecond, IdlePoll: 50 * time.Millisecond,
		Grace: 5 * time.Second,
	}
	if mod != nil {
		mod(&cfg)
	}
	var p *pusher.Pusher
	cfg.OnAttempt = func(q ids.ID, a meta.Attempt) { e.events <- event{queue: q, member: p.Member(), attempt: &a} }
	cfg.OnGiveBack = func(q ids.ID, n int) { e.events <- event{queue: q, member: p.Member(), gaveBack: n} }
	p, err := pusher.New(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	p.OnApplied = func(s meta.Subscription) { e.events <- event{queue: s.QueueID, member: p.Member(), applied: &s} }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = p.Run(ctx) }()
	e.t.Cleanup(func() { cancel(); <-done })
	return p
}

// next returns the first event, in arrival order, that matches and was not returned before,
// failing after a generous bound.
func (e *env) next(match func(event) bool) event {
	e.t.Helper()
	for i, ev := range e.backlog {
		if match(ev) {
			e.backlog = append(e.backlog[:i:i], e.backlog[i+1:]...)
			return ev
		}
	}
	t := time.NewTimer(20 * time.Second)
	defer t.Stop()
	for {
		select {
		case ev := <-e.events:
			if match(ev) {
				return ev
			}
			e.backlog = append(e.backlog, ev)
		case <-t.C:
			e.t.Fatal("no matching pusher event within 20 s")
		}
	}
}

// attempt waits for the next attempt on queue q.
func (e *env) attempt(q meta.Queue) meta.Attempt {
	e.t.Helper()
	return *e.next(func(ev event) bool { return ev.attempt != nil && ev.queue == q.ID }).attempt
}

// applied waits until a pusher applied subscription version v of q.
func (e *env) applied(q meta.Queue, pred func(meta.Subscription) bool) {
	e.t.Helper()
	e.next(func(ev event) bool { return ev.applied != nil && ev.queue == q.ID && pred(*ev.applied) })
}

func (e *env) stats(q meta.Queue) engine.Stats {
	e.t.Helper()
	st, err := e.eng.Stats(e.t.Context(), e.engineQueue(q))
	if err != nil {
		e.t.Fatal(err)
	}
	return st
}

// browse returns q's messages in one state by id.
func (e *env) browse(q meta.Queue, s engine.State) map[ids.ID]engine.BrowsedMessage {
	e.t.Helper()
	page, err := e.eng.Browse(e.t.Context(), e.engineQueue(q), engine.BrowseRequest{State: s, Limit: 100})
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[ids.ID]engine.BrowsedMessage{}
	for _, m := range page.Messages {
		out[m.MessageID] = m
	}
	return out
}

// pushed is one request an endpoint received.
type pushed struct {
	ctx    context.Context // the request's: done when the client gives up
	proto  string
	header http.Header
	raw    []byte
	body   pushBody
}

type pushBody struct {
	Subscription string `json:"subscription"`
	Queue        struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"queue"`
	Messages []pushMsg `json:"messages"`
}

type pushMsg struct {
	MessageID          string            `json:"messageId"`
	Body               string            `json:"body"`
	Attributes         map[string]string `json:"attributes"`
	ReceiveCount       int               `json:"receiveCount"`
	SentAt             string            `json:"sentAt"`
	GroupID            string            `json:"groupId"`
	SequenceNumber     string            `json:"sequenceNumber"`
	ReceiptHandle      string            `json:"receiptHandle"`
	VisibilityDeadline string            `json:"visibilityDeadline"`
}

// endpoint is an httptest receiver: each request is recorded on got, and answered by respond.
type endpoint struct {
	*httptest.Server
	got   chan pushed
	conns atomic.Int32 // connections opened to it

	mu      sync.Mutex
	respond func(w http.ResponseWriter, p pushed)
}

func newEndpoint(t testing.TB, tlsServer bool, respond func(w http.ResponseWriter, p pushed)) *endpoint {
	ep := &endpoint{got: make(chan pushed, 1024), respond: respond}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		p := pushed{ctx: r.Context(), proto: r.Proto, header: r.Header.Clone(), raw: raw}
		if err := json.Unmarshal(raw, &p.body); err != nil {
			t.Errorf("push body is not JSON: %s", raw)
		}
		ep.mu.Lock()
		respond := ep.respond
		ep.mu.Unlock()
		ep.got <- p
		if respond == nil {
			// A test race, not a pusher fault: the push came before the test set its answer.
			t.Errorf("pushed before the test set the endpoint's answer")
			w.WriteHeader(500)
			return
		}
		respond(w, p)
	})
	ep.Server = httptest.NewUnstartedServer(h)
	ep.Config.ErrorLog = log.New(io.Discard, "", 0) // the untrusted-certificate test's handshake errors
	ep.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			ep.conns.Add(1)
		}
	}
	if tlsServer {
		ep.EnableHTTP2 = true
		ep.StartTLS()
	} else {
		ep.Start()
	}
	t.Cleanup(ep.Close)
	return ep
}

func (ep *endpoint) setRespond(f func(w http.ResponseWriter, p pushed)) {
	ep.mu.Lock()
	ep.respond = f
	ep.mu.Unlock()
}

// next returns the next request the endpoint received.
func (ep *endpoint) next(t testing.TB) pushed {
	t.Helper()
	select {
	case p := <-ep.got:
		return p
	case <-time.After(20 * time.Second):
		t.Fatal("the endpoint received nothing within 20 s")
		return pushed{}
	}
}

func status(code int) func(http.ResponseWriter, pushed) {
	return func(w http.ResponseWriter, _ pushed) { w.WriteHeader(code) }
}

func jsonAnswer(code int, v any) func(http.ResponseWriter, pushed) {
	return func(w http.ResponseWriter, _ pushed) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(v)
	}
}
