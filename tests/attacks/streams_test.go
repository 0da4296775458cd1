package attacks

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/queueshq/queues/pkg/api"
	"github.com/queueshq/queues/services/queues/stack"
)

// Receive streams against a hostile or careless tenant (issue 31): a stream whose token is
// revoked ends; streams are capped per project and per replica; a stream that holds no
// credit ends after the idle limit, and its goroutines with it.

// openStream opens the receive stream of queue on base; a refused upgrade is the answer.
func openStream(t testing.TB, base, token, queue string) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+"/v1/queues/"+queue+"/stream",
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + token}}})
	if err == nil {
		c.SetReadLimit(4 << 20)
	}
	return c, resp, err
}

// streamFrames reads a stream's frames until it ends (or fails the test after 20 s): the
// error frame's code, how many messages were delivered and the close status.
func streamFrames(t testing.TB, c *websocket.Conn) (code string, delivered int, status websocket.StatusCode) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		_, data, err := c.Read(ctx)
		if err != nil {
			if ctx.Err() != nil {
				t.Fatalf("the stream did not end (error frame %q, %d messages delivered)", code, delivered)
			}
			return code, delivered, websocket.CloseStatus(err)
		}
		var f struct {
			Messages []json.RawMessage `json:"messages"`
			Error    *struct {
				Code string `json:"code"`
			} `json:"error"`
		}
		if err := json.Unmarshal(data, &f); err != nil {
			t.Fatalf("frame %.200s: %v", data, err)
		}
		delivered += len(f.Messages)
		if f.Error != nil {
			code = f.Error.Code
		}
	}
}

func grant(t testing.TB, c *websocket.Conn, n int) {
	t.Helper()
	b, _ := json.Marshal(map[string]int{"credit": n})
	if err := c.Write(context.Background(), websocket.MessageText, b); err != nil {
		t.Fatal(err)
	}
}

// TestRevokedStream: a stream opened before its token is revoked, holding credit, gets no
// message sent after the revocation: it ends with an unauthenticated error frame (close
// 1008), and the message stays receivable at once by another token. Before the fix the
// stream delivered it (issue 31: still so 10 s after the revocation).
func TestRevokedStream(t *testing.T) {
	p, owner := project(t)
	call(t, "POST", "/v1/queues", owner, map[string]any{"name": "revoked-stream"}).is(t, 201, "", "")
	tk := call(t, "POST", "/v1/projects/"+p+"/tokens", operator, map[string]any{"name": "consumer", "scopes": []string{"messages:receive"}})
	tk.is(t, 201, "", "")
	tok, _ := tk.body["token"].(string)
	id, _ := tk.body["id"].(string)
	remember(tok)
	c, _, err := openStream(t, e.base, tok, "revoked-stream")
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	grant(t, c, 10)
	call(t, "DELETE", "/v1/projects/"+p+"/tokens/"+id, operator, nil).is(t, 204, "", "")
	call(t, "POST", "/v1/queues/revoked-stream/messages", owner, map[string]any{"messages": []any{map[string]any{"body": "after the revocation"}}}).is(t, 200, "", "")
	code, delivered, status := streamFrames(t, c)
	if code != "unauthenticated" || delivered != 0 || status != websocket.StatusPolicyViolation {
		t.Fatalf("the stream ended with %q after delivering %d (close %d); want unauthenticated, 0, 1008", code, delivered, status)
	}
	r := call(t, "POST", "/v1/queues/revoked-stream/receive", owner, map[string]any{"waitSeconds": 0})
	r.is(t, 200, "", "")
	ms, _ := r.body["messages"].([]any)
	if len(ms) != 1 {
		t.Fatalf("after the stream ended the message is not receivable at once: %s", r.raw)
	}
	if n, _ := ms[0].(map[string]any)["receiveCount"].(float64); n != 1 {
		t.Fatalf("receiveCount %v; the stream's receive of it must not count", n)
	}
}

// refusedStream fails t unless opening a stream is refused with 429 rate_limited, Retry-After
// 5 and details.limit limit.
func refusedStream(t *testing.T, base, token, queue, limit string) {
	t.Helper()
	a := callTo(t, base, "GET", "/v1/queues/"+queue+"/stream", token, nil, http.Header{"Connection": {"Upgrade"}, "Upgrade": {"websocket"}})
	a.is(t, 429, "rate_limited", "")
	er, _ := a.body["error"].(map[string]any)
	d, _ := er["details"].(map[string]any)
	if d["limit"] != limit || a.header.Get("Retry-After") != "5" {
		t.Fatalf("429 with details.limit %v, Retry-After %q; want %s, 5: %s", d["limit"], a.header.Get("Retry-After"), limit, a.raw)
	}
}

// openStreams opens n streams of queue, or fails t.
func openStreams(t *testing.T, base, token, queue string, n int) []*websocket.Conn {
	t.Helper()
	cs := make([]*websocket.Conn, n)
	for i := range cs {
		c, resp, err := openStream(t, base, token, queue)
		if err != nil {
			status := 0
			if resp != nil {
				status = resp.StatusCode
			}
			t.Fatalf("stream %d of %d: %d %v", i+1, n, status, err)
		}
		cs[i] = c
		t.Cleanup(func() { _ = c.CloseNow() })
	}
	return cs
}

// TestStreamCaps: one project holds at most 256 streams on a replica (the default); past it
// the upgrade is 429 rate_limited, Retry-After 5, details.limit streamsPerProject, while
// another project still opens one. A replica with its caps lowered (as
// QUEUES_STREAM_MAX_PER_PROJECT and QUEUES_STREAM_MAX_PER_REPLICA set them) refuses past
// either, and a closed stream frees its slot. Before the fix there was no cap: each stream
// costs the replica its goroutines (about 8) for as long as the tenant keeps it.
func TestStreamCaps(t *testing.T) {
	_, a := project(t)
	call(t, "POST", "/v1/queues", a, map[string]any{"name": "capped"}).is(t, 201, "", "")
	_, b := project(t)
	call(t, "POST", "/v1/queues", b, map[string]any{"name": "capped"}).is(t, 201, "", "")
	goroutines := runtime.NumGoroutine()
	held := openStreams(t, e.base, a, "capped", api.DefaultStreamsPerProject)
	t.Logf("%d streams of one project: %d goroutines -> %d", len(held), goroutines, runtime.NumGoroutine())
	refusedStream(t, e.base, a, "capped", "streamsPerProject")
	openStreams(t, e.base, b, "capped", 1)
	for _, c := range held {
		_ = c.Close(websocket.StatusNormalClosure, "")
	}

	base, _, stop, err := e.serve(stack.Options{Streams: api.StreamLimits{PerProject: 3, PerReplica: 5}})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	as := openStreams(t, base, a, "capped", 3)
	refusedStream(t, base, a, "capped", "streamsPerProject")
	openStreams(t, base, b, "capped", 2)
	refusedStream(t, base, b, "capped", "streamsPerReplica")
	_ = as[0].Close(websocket.StatusNormalClosure, "")
	deadline := time.Now().Add(20 * time.Second)
	for { // the slot is freed once the server has let go of the stream
		c, _, err := openStream(t, base, b, "capped")
		if err == nil {
			_ = c.CloseNow()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the closed stream's slot was not freed: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestZeroCreditStreams: streams that never grant credit end after the idle limit (shortened
// to 2 s here; 60 s by default) with an idle error frame and close 1008, and every goroutine
// they held ends with them. Before the fix they stayed open, holding their goroutines, for
// as long as the connection lasted.
func TestZeroCreditStreams(t *testing.T) {
	base, _, stop, err := e.serve(stack.Options{Streams: api.StreamLimits{Idle: 2 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	_, tok := project(t)
	callTo(t, base, "POST", "/v1/queues", tok, map[string]any{"name": "zero-credit"}, nil).is(t, 201, "", "")
	goroutines := runtime.NumGoroutine()
	const n = 100
	cs := openStreams(t, base, tok, "zero-credit", n)
	during := runtime.NumGoroutine()
	var wg sync.WaitGroup
	ends := make([]string, n)
	for i, c := range cs {
		wg.Go(func() {
			code, delivered, status := streamFrames(t, c)
			ends[i] = fmt.Sprintf("%s/%d/%d", code, delivered, status)
		})
	}
	wg.Wait()
	for i, end := range ends {
		if end != "idle/0/1008" {
			t.Fatalf("stream %d ended %s; want idle/0/1008 (code/delivered/close)", i, end)
		}
	}
	t.Logf("%d zero-credit streams: goroutines %d -> %d while open (%.1f a stream), all closed idle", n, goroutines, during, float64(during-goroutines)/n)
	waitGoroutines(t, goroutines+10)
}
