// Package servekill kills `queues serve` (embedded mode: API and store in one process) with
// SIGKILL under a send/receive/ack load, restarts it on the same data directory, and checks
// what SPEC §4 and §8 promise across the crash: every acknowledged send (a 200 listing the
// message) is received afterwards, a message acknowledged with a 204 is never handed out
// again, and messages that were in flight at the kill come back at their visibility deadline
// (and not before). Unlike tests/killtest, the kill takes the storage down too: what survives
// is what the embedded store fsynced before answering.
//
// The load, history and checks are those of tests/killtest (copied: test files cannot be
// imported); only the process under test and its setup differ. The drain awaits returning
// messages with long polls, never with sleeps.
package servekill

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/testenv"
)

// Load and bounds. The load phase ends (with the kill) at targetAcked acknowledged sends or
// after loadFor, whichever comes first; every loop is also bounded in iterations.
const (
	producers      = 4
	consumers      = 2
	drainers       = 3
	batch          = 10
	maxBatches     = 400 // per producer: 16,000 messages at most, far above targetAcked
	maxReceives    = 2000
	targetAcked    = 2000
	loadFor        = 4 * time.Second
	visibility     = 2 // seconds, the queue's visibilityTimeoutSeconds
	holdEvery      = 8 // a consumer leaves every 8th first delivery un-acked
	minHeld        = 20
	drainFor       = 45 * time.Second
	drainQuiet     = 3 * visibility * time.Second // an empty queue and no delivery for this long: the drain is over
	requestTimeout = 10 * time.Second
	timeFormat     = "2006-01-02T15:04:05.000Z"
)

// queuesBin is the queues binary TestMain builds once for the test binary.
var queuesBin string

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(run(m))
}

func run(m *testing.M) int {
	defer testenv.StopAll()
	if testing.Short() {
		return m.Run() // the test skips itself; no need to build
	}
	dir, err := os.MkdirTemp("", "servekill-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "servekill:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	root, err := moduleRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "servekill:", err)
		return 1
	}
	queuesBin = filepath.Join(dir, "queues")
	build := exec.Command("go", "build", "-o", queuesBin, "./services/queues")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "servekill: go build ./services/queues: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// moduleRoot walks up from the working directory to the folder holding go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// stack is one data directory and the settings every `queues serve` child gets.
type stack struct {
	env  []string
	dir  string
	data string
}

func newStack(t *testing.T) *stack {
	t.Helper()
	s := &stack{dir: t.TempDir()}
	s.data = filepath.Join(s.dir, "data")
	s.env = append(s.env, "QUEUES_DATA_DIR="+s.data, "QUEUES_LOG_LEVEL=warn")
	return s
}

// environ is the child's environment: the test's, without any QUEUES_* setting of the
// machine, plus the stack's.
func (s *stack) environ(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "QUEUES_") {
			env = append(env, kv)
		}
	}
	return append(append(env, s.env...), extra...)
}

// token is the default project's token that the first start wrote.
func (s *stack) token(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.data, "token"))
	if err != nil {
		t.Fatalf("the token file: %v", err)
	}
	return strings.TrimSpace(string(b))
}

// apiProc is one `queues serve` child process.
type apiProc struct {
	cmd    *exec.Cmd
	url    string
	log    string
	exited chan struct{}
}

// kill sends SIGKILL and waits for the process to be gone. It is safe to call more than once.
func (p *apiProc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// startAPI starts `queues serve` on a free port and waits until GET /readyz answers 200. It
// returns the process and the time from start to ready. The process is killed when the test
// ends, and also dies with the test binary (parent death signal).
func (s *stack) startAPI(t *testing.T, hc *http.Client, name string) (*apiProc, time.Duration) {
	t.Helper()
	var lastErr error
	for attempt := range 3 { // the free port may be taken before the child binds it
		port, err := testenv.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		p := &apiProc{
			url:    "http://127.0.0.1:" + strconv.Itoa(port),
			log:    filepath.Join(s.dir, fmt.Sprintf("%s-%d.log", name, attempt)),
			exited: make(chan struct{}),
		}
		logf, err := os.Create(p.log)
		if err != nil {
			t.Fatal(err)
		}
		p.cmd = exec.Command(queuesBin, "serve")
		p.cmd.Env = s.environ("QUEUES_LISTEN=127.0.0.1:" + strconv.Itoa(port))
		p.cmd.Stdout, p.cmd.Stderr = logf, logf
		p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		start := time.Now()
		if err := p.cmd.Start(); err != nil {
			logf.Close()
			t.Fatalf("start queues serve: %v", err)
		}
		go func() { _ = p.cmd.Wait(); logf.Close(); close(p.exited) }()
		t.Cleanup(p.kill)
		err = testenv.WaitFor(t.Context(), 30*time.Second, func(ctx context.Context) error {
			select {
			case <-p.exited:
				return errExited
			default:
			}
			status, err := call(ctx, hc, http.MethodGet, p.url+"/readyz", "", nil, nil)
			if err == nil && status != http.StatusOK {
				err = fmt.Errorf("GET /readyz answered %d", status)
			}
			return err
		})
		if err == nil {
			return p, time.Since(start)
		}
		p.kill()
		lastErr = fmt.Errorf("%w\n%s", err, tailOf(p.log))
	}
	t.Fatalf("queues serve did not become ready: %v", lastErr)
	return nil, 0
}

var errExited = errors.New("the process exited")

func tailOf(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// call makes one JSON request. It returns the status, and decodes a 2xx body into out.
func call(ctx context.Context, hc *http.Client, method, url, token string, in, out any) (int, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return 0, err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return 0, err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		// The answer was cut off: its outcome is unknown.
		return 0, err
	}
	if resp.StatusCode/100 == 2 && out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			return resp.StatusCode, fmt.Errorf("decode %s %s answer: %w: %s", method, url, err, data)
		}
	}
	if resp.StatusCode/100 != 2 && out != nil {
		return resp.StatusCode, fmt.Errorf("%s %s answered %d: %s", method, url, resp.StatusCode, data)
	}
	return resp.StatusCode, nil
}

type sendAnswer struct {
	Messages []struct {
		Index     int    `json:"index"`
		MessageID string `json:"messageId"`
		Duplicate bool   `json:"duplicate"`
	} `json:"messages"`
	Failed []json.RawMessage `json:"failed"`
}

type receivedMsg struct {
	MessageID          string `json:"messageId"`
	Body               string `json:"body"`
	ReceiptHandle      string `json:"receiptHandle"`
	ReceiveCount       int    `json:"receiveCount"`
	VisibilityDeadline string `json:"visibilityDeadline"`
}

type queueAnswer struct {
	ID     string `json:"id"`
	Counts struct {
		Visible  int64 `json:"visible"`
		InFlight int64 `json:"inFlight"`
		Delayed  int64 `json:"delayed"`
	} `json:"counts"`
}

// delivery is one received message, as the client saw it.
type delivery struct {
	body, id   string
	rc         int
	deadline   time.Time // the server's visibilityDeadline
	start, end time.Time // the receive request's start and the answer's arrival
	afterKill  bool      // received from the restarted process
	held       bool      // deliberately left un-acked
}

// history is everything the clients observed. Only answered operations count as done.
type history struct {
	mu           sync.Mutex
	attempted    map[string]bool      // bodies whose send was made, answered or not
	acked        map[string]string    // body → messageId, for sends answered 200 listing it
	ackOrder     []string             // acknowledged bodies in acknowledgement order
	deliveries   []delivery           // every received message, both phases
	settled      map[string]time.Time // body → arrival of the 204 to its ack
	held         int                  // deliveries left un-acked on purpose
	unknownSends int                  // sends with no 200 (error, cut off, non-200)
	failedSends  int                  // messages listed in a 200's failed
	acks204      int
	ackUnknown   int
	ackStale     int
}

func newHistory() *history {
	return &history{attempted: map[string]bool{}, acked: map[string]string{}, settled: map[string]time.Time{}}
}

func (h *history) lockedDo(f func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f()
}

// client holds what the workers share.
type client struct {
	hc       *http.Client
	token    string
	queueURL string // base URL + /v1/queues/{id}
	base     string
	h        *history
	inFlight atomic.Int64 // requests started and not yet answered
}

func (c *client) do(ctx context.Context, method, url, token string, in, out any) (int, error) {
	c.inFlight.Add(1)
	defer c.inFlight.Add(-1)
	return call(ctx, c.hc, method, url, token, in, out)
}

// send sends one batch and records the outcome; it returns the number of acknowledged sends
// and whether the request was answered 200.
func (c *client) send(ctx context.Context, bodies []string) (int, bool) {
	msgs := make([]map[string]string, len(bodies))
	c.h.lockedDo(func() {
		for i, b := range bodies {
			c.h.attempted[b] = true
			msgs[i] = map[string]string{"body": b}
		}
	})
	var ans sendAnswer
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	status, err := c.do(rctx, http.MethodPost, c.queueURL+"/messages", c.token, map[string]any{"messages": msgs}, &ans)
	if err != nil || status != http.StatusOK {
		c.h.lockedDo(func() { c.h.unknownSends++ })
		return 0, false
	}
	n := 0
	c.h.lockedDo(func() {
		c.h.failedSends += len(ans.Failed)
		for _, m := range ans.Messages {
			if m.Index < 0 || m.Index >= len(bodies) {
				continue
			}
			b := bodies[m.Index]
			if _, dup := c.h.acked[b]; !dup {
				c.h.ackOrder = append(c.h.ackOrder, b)
				n++
			}
			c.h.acked[b] = m.MessageID
		}
	})
	return n, true
}

// receive makes one receive and records every message it returns. hold decides which
// deliveries are left un-acked; the others are returned for acknowledging.
func (c *client) receive(ctx context.Context, wait int, afterKill bool, hold func(receivedMsg) bool) (toAck []receivedMsg, answered bool) {
	var ans struct {
		Messages []receivedMsg `json:"messages"`
	}
	rctx, cancel := context.WithTimeout(ctx, requestTimeout+time.Duration(wait)*time.Second)
	defer cancel()
	start := time.Now()
	status, err := c.do(rctx, http.MethodPost, c.queueURL+"/receive", c.token,
		map[string]any{"maxMessages": batch, "waitSeconds": wait}, &ans)
	end := time.Now()
	if err != nil || status != http.StatusOK {
		return nil, false
	}
	c.h.lockedDo(func() {
		for _, m := range ans.Messages {
			dl, _ := time.Parse(timeFormat, m.VisibilityDeadline)
			d := delivery{body: m.Body, id: m.MessageID, rc: m.ReceiveCount, deadline: dl, start: start, end: end, afterKill: afterKill}
			d.held = hold != nil && hold(m)
			if d.held {
				c.h.held++
			} else {
				toAck = append(toAck, m)
			}
			c.h.deliveries = append(c.h.deliveries, d)
		}
	})
	return toAck, true
}

// ack acknowledges one delivery with the single form and records a 204.
func (c *client) ack(ctx context.Context, m receivedMsg) {
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	status, err := c.do(rctx, http.MethodPost, c.base+"/v1/receipts/ack", "", map[string]string{"receiptHandle": m.ReceiptHandle}, nil)
	end := time.Now()
	c.h.lockedDo(func() {
		switch {
		case err == nil && status == http.StatusNoContent:
			c.h.acks204++
			c.h.settled[m.Body] = end
		case err == nil && status == http.StatusGone:
			c.h.ackStale++
		default:
			c.h.ackUnknown++
		}
	})
}

// ackAll acknowledges each delivery with its own request, all at once.
func (c *client) ackAll(ctx context.Context, ms []receivedMsg) {
	var wg sync.WaitGroup
	for _, m := range ms {
		wg.Go(func() { c.ack(ctx, m) })
	}
	wg.Wait()
}

func (c *client) counts(ctx context.Context) (queueAnswer, error) {
	var q queueAnswer
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	_, err := c.do(rctx, http.MethodGet, c.queueURL, c.token, nil, &q)
	return q, err
}

func TestKillServeUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the queues binary under load")
	}
	testStart := time.Now()
	st := newStack(t)
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 32, MaxConnsPerHost: 64}}
	t.Cleanup(hc.CloseIdleConnections)

	api1, ready1 := st.startAPI(t, hc, "api1")
	ctx := t.Context()

	// The default project's token from the data directory, and a standard queue with a 2 s
	// visibility timeout.
	tok := struct{ Token string }{st.token(t)}
	var q queueAnswer
	if _, err := call(ctx, hc, http.MethodPost, api1.url+"/v1/queues", tok.Token,
		map[string]any{"name": "kill", "type": "standard", "visibilityTimeoutSeconds": visibility}, &q); err != nil {
		t.Fatal(err)
	}
	h := newHistory()
	c := &client{hc: hc, token: tok.Token, base: api1.url, queueURL: api1.url + "/v1/queues/" + q.ID, h: h}

	// Load: producers send batches of unique bodies, consumers receive, ack most and hold some.
	// The kill comes once targetAcked sends are acknowledged and minHeld deliveries are held,
	// or after loadFor, while every worker is still busy.
	var killed atomic.Bool
	var ackedTotal, heldTotal atomic.Int64
	progress := make(chan struct{}, 1)
	poke := func() {
		select {
		case progress <- struct{}{}:
		default:
		}
	}
	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			for seq := 0; seq < maxBatches && !killed.Load(); seq++ {
				bodies := make([]string, batch)
				for i := range bodies {
					bodies[i] = fmt.Sprintf("p%d-%d", p, seq*batch+i)
				}
				n, _ := c.send(ctx, bodies)
				ackedTotal.Add(int64(n))
				poke()
			}
		})
	}
	for range consumers {
		wg.Go(func() {
			firsts := 0
			hold := func(m receivedMsg) bool {
				if m.ReceiveCount != 1 {
					return false // a held message that came back is acked
				}
				firsts++
				return firsts%holdEvery == 0
			}
			for i := 0; i < maxReceives && !killed.Load(); i++ {
				toAck, _ := c.receive(ctx, 1, false, hold)
				h.lockedDo(func() { heldTotal.Store(int64(h.held)) })
				c.ackAll(ctx, toAck)
				poke()
			}
		})
	}
	loadDone := make(chan struct{})
	go func() { wg.Wait(); close(loadDone) }()
	loadStart := time.Now()
	timeout := time.After(loadFor)
	for waiting := true; waiting; {
		select {
		case <-progress:
			waiting = ackedTotal.Load() < targetAcked || heldTotal.Load() < minHeld
		case <-timeout:
			waiting = false
		case <-loadDone:
			waiting = false
		}
	}
	inFlightAtKill := c.inFlight.Load()
	killed.Store(true)
	api1.kill()
	killedAt := time.Now()
	<-loadDone // every request to the dead process fails at once

	h.mu.Lock()
	ackedBeforeKill := len(h.ackOrder)
	receivedBeforeKill := len(h.deliveries)
	// Held at the kill: the last delivery of a message before the kill was held, and its
	// deadline had not passed.
	last := map[string]delivery{}
	for _, d := range h.deliveries {
		if l, ok := last[d.body]; !ok || d.rc > l.rc {
			last[d.body] = d
		}
	}
	heldAtKill := map[string]delivery{}
	for b, d := range last {
		if d.held && d.deadline.After(killedAt) {
			heldAtKill[b] = d
		}
	}
	unknownBeforeKill, acksBeforeKill := h.unknownSends, h.acks204
	h.mu.Unlock()
	t.Logf("load: %v; acknowledged sends %d, unknown sends %d, received %d, acks 204 %d, requests in flight at the kill %d, held in flight at the kill %d",
		killedAt.Sub(loadStart).Round(time.Millisecond), ackedBeforeKill, unknownBeforeKill, receivedBeforeKill, acksBeforeKill, inFlightAtKill, len(heldAtKill))
	if ackedBeforeKill < 100 {
		t.Fatalf("only %d acknowledged sends before the kill: the load did not run (first serve log:\n%s)", ackedBeforeKill, tailOf(api1.log))
	}
	// Restart on the same data directory, then drain.
	api2, ready2 := st.startAPI(t, hc, "api2")
	t.Logf("restart: ready %v after start (first start %v), %v after the kill", ready2.Round(time.Millisecond), ready1.Round(time.Millisecond), time.Since(killedAt).Round(time.Millisecond))
	c.base, c.queueURL = api2.url, api2.url+"/v1/queues/"+q.ID

	// done reports whether every acknowledged send was seen and every held message came back.
	done := func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		seen := map[string]bool{}
		back := map[string]bool{}
		for _, d := range h.deliveries {
			seen[d.body] = true
			if hd, ok := heldAtKill[d.body]; ok && d.afterKill && d.rc > hd.rc {
				back[d.body] = true
			}
		}
		for _, b := range h.ackOrder {
			if !seen[b] {
				return false
			}
		}
		return len(back) == len(heldAtKill)
	}
	drainStart := time.Now()
	dctx, cancel := context.WithTimeout(ctx, drainFor)
	defer cancel()
	var drained atomic.Bool
	var lastDelivery atomic.Int64
	lastDelivery.Store(drainStart.UnixNano())
	var dwg sync.WaitGroup
	for range drainers {
		dwg.Go(func() {
			for i := 0; i < maxReceives && !drained.Load() && dctx.Err() == nil; i++ {
				toAck, answered := c.receive(dctx, visibility, true, nil)
				c.ackAll(dctx, toAck)
				if len(toAck) > 0 {
					lastDelivery.Store(time.Now().UnixNano())
				}
				if !answered || len(toAck) > 0 {
					continue
				}
				// Nothing came for a whole wait. Finished once the queue is empty and
				// everything expected was seen (an answer lost at the kill may have left
				// messages in flight; they come back at their deadline and the next wait
				// takes them), or once it has been empty and quiet for drainQuiet: what is
				// missing then is not coming.
				qa, err := c.counts(dctx)
				if err != nil || qa.Counts.Visible != 0 || qa.Counts.InFlight != 0 || qa.Counts.Delayed != 0 {
					continue
				}
				if done() || time.Since(time.Unix(0, lastDelivery.Load())) > drainQuiet {
					drained.Store(true)
				}
			}
		})
	}
	dwg.Wait()
	drainTime := time.Since(drainStart)

	// The checks, on the whole history.
	h.mu.Lock()
	defer h.mu.Unlock()
	byBody := map[string][]delivery{}
	for _, d := range h.deliveries {
		byBody[d.body] = append(byBody[d.body], d)
	}
	var lost []string
	for _, b := range h.ackOrder {
		if len(byBody[b]) == 0 {
			lost = append(lost, b)
		}
	}
	if len(lost) > 0 {
		t.Errorf("lost: %d of %d acknowledged sends never received (drain %s): %s", len(lost), len(h.ackOrder), drainTime.Round(time.Millisecond), firstN(lost, 50))
	}
	redeliveries, recovered, unexpected, afterAck, overlap, notBack := 0, 0, 0, 0, 0, 0
	for b, ds := range byBody {
		slices.SortFunc(ds, func(x, y delivery) int { return x.rc - y.rc })
		redeliveries += len(ds) - 1
		id, wasAcked := h.acked[b]
		switch {
		case !h.attempted[b]:
			unexpected++
			t.Errorf("unexpected: received %q (%s), which was never sent", b, ds[0].id)
		case !wasAcked:
			recovered++ // its send's outcome was unknown; receiving it is allowed
		}
		for i, d := range ds {
			if wasAcked && d.id != id {
				unexpected++
				t.Errorf("unexpected: %q received as message %s, its send answered %s", b, d.id, id)
			}
			if i > 0 && d.id != ds[0].id {
				unexpected++
				t.Errorf("unexpected: %q received as two messages, %s and %s (stored twice)", b, ds[0].id, d.id)
			}
			if at, ok := h.settled[b]; ok && d.start.After(at) {
				afterAck++
				t.Errorf("redelivered after ack: %q (%s) receiveCount %d received at %s, its ack answered 204 at %s",
					b, d.id, d.rc, d.start.Format(time.RFC3339Nano), at.Format(time.RFC3339Nano))
			}
			if i == 0 {
				continue
			}
			prev := ds[i-1]
			if d.rc == prev.rc {
				overlap++
				t.Errorf("delivered twice with receiveCount %d: %q (%s)", d.rc, b, d.id)
			} else if d.end.Before(prev.deadline) {
				// Nobody released or extended anything: the next delivery may only come after
				// the previous one's deadline.
				overlap++
				t.Errorf("lease overlap: %q (%s) receiveCount %d (after the restart: %v) answered at %s, before the deadline %s of receiveCount %d (after the restart: %v)",
					b, d.id, d.rc, d.afterKill, d.end.Format(time.RFC3339Nano), prev.deadline.Format(time.RFC3339Nano), prev.rc, prev.afterKill)
			}
		}
	}
	for b, hd := range heldAtKill {
		var back *delivery
		for _, d := range byBody[b] {
			if d.afterKill && d.rc > hd.rc {
				back = &d
				break
			}
		}
		switch {
		case back == nil:
			notBack++
			if notBack <= 20 {
				t.Errorf("held in flight at the kill and never came back: %q (%s), receiveCount %d, deadline %s", b, hd.id, hd.rc, hd.deadline.Format(time.RFC3339Nano))
			}
		case back.rc < 2:
			t.Errorf("held message %q came back with receiveCount %d, want ≥ 2", b, back.rc)
		case back.end.Before(hd.deadline):
			t.Errorf("held message %q came back at %s, before its deadline %s", b, back.end.Format(time.RFC3339Nano), hd.deadline.Format(time.RFC3339Nano))
		}
	}
	if len(heldAtKill) == 0 {
		t.Errorf("no message was held in flight at the kill: nothing shows that in-flight messages come back at their deadline")
	}
	if notBack > 0 {
		t.Errorf("%d of %d messages held in flight at the kill never came back", notBack, len(heldAtKill))
	}
	qa, err := c.counts(ctx)
	if err != nil {
		t.Errorf("final GET queue: %v", err)
	} else if qa.Counts.Visible != 0 || qa.Counts.InFlight != 0 || qa.Counts.Delayed != 0 {
		t.Errorf("final counts: visible %d, inFlight %d, delayed %d; want all 0", qa.Counts.Visible, qa.Counts.InFlight, qa.Counts.Delayed)
	}
	if !drained.Load() {
		t.Errorf("the drain did not finish within %v", drainFor)
	}
	if t.Failed() {
		t.Logf("restarted serve log:\n%s", tailOf(api2.log))
	}
	t.Logf("figures: acknowledged sends %d (before the kill %d), unknown sends %d (recovered %d), failed in a 200 %d; "+
		"received %d deliveries of %d messages, redeliveries %d; acks 204 %d, 410 %d, unknown %d; "+
		"held in flight at the kill %d, back %d; lost %d, unexpected %d, redelivered after ack %d, lease overlaps %d; "+
		"restart to ready %v; drain %v; test %v",
		len(h.ackOrder), ackedBeforeKill, h.unknownSends, recovered, h.failedSends,
		len(h.deliveries), len(byBody), redeliveries, h.acks204, h.ackStale, h.ackUnknown,
		len(heldAtKill), len(heldAtKill)-notBack, len(lost), unexpected, afterAck, overlap,
		ready2.Round(time.Millisecond), drainTime.Round(time.Millisecond), time.Since(testStart).Round(time.Millisecond))
}

func firstN(s []string, n int) string {
	if len(s) > n {
		return strings.Join(s[:n], " ") + fmt.Sprintf(" … and %d more", len(s)-n)
	}
	return strings.Join(s, " ")
}
