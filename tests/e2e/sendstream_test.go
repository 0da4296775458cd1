package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// sendStream is a raw send stream (GET …/send-stream) for the tests: frames written and read
// as the wire format says (docs/streaming.md).
type sendStream struct {
	t    testing.TB
	conn *websocket.Conn
	ctx  context.Context
}

// openSendStream opens queue's send stream as c, or fails the test.
func (c *client) openSendStream(t testing.TB, queue string) *sendStream {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	conn, resp, err := c.dialSendStream(ctx, queue)
	if err != nil {
		t.Fatalf("opening the send stream: %v (%v)", err, resp)
	}
	t.Cleanup(func() { _ = conn.CloseNow() })
	return &sendStream{t: t, conn: conn, ctx: ctx}
}

func (c *client) dialSendStream(ctx context.Context, queue string) (*websocket.Conn, *http.Response, error) {
	h := http.Header{}
	if c.token != "" {
		h.Set("Authorization", "Bearer "+c.token)
	}
	return websocket.Dial(ctx, c.base+"/v1/queues/"+queue+"/send-stream", &websocket.DialOptions{HTTPClient: c.hc, HTTPHeader: h}) //nolint:bodyclose // owned by the websocket
}

// write writes a frame: a string as is, anything else as JSON.
func (s *sendStream) write(frame any) {
	s.t.Helper()
	b, ok := frame.(string)
	if !ok {
		raw, err := json.Marshal(frame)
		if err != nil {
			s.t.Fatal(err)
		}
		b = string(raw)
	}
	if err := s.conn.Write(s.ctx, websocket.MessageText, []byte(b)); err != nil {
		s.t.Fatalf("writing a frame: %v", err)
	}
}

// read reads the next frame of the service's.
func (s *sendStream) read() map[string]any {
	s.t.Helper()
	_, data, err := s.conn.Read(s.ctx)
	if err != nil {
		s.t.Fatalf("reading a frame: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		s.t.Fatalf("frame %q: %v", data, err)
	}
	return m
}

// frameError checks that f carries an error of code (and field, when not empty).
func frameError(t testing.TB, f map[string]any, code, field string) map[string]any {
	t.Helper()
	e, _ := f["error"].(map[string]any)
	if e == nil || e["code"] != code {
		t.Fatalf("frame %v: want error %s", f, code)
	}
	if msg, _ := e["message"].(string); msg == "" {
		t.Fatalf("frame %v: error without a message", f)
	}
	d, _ := e["details"].(map[string]any)
	if field != "" && (d == nil || d["field"] != field) {
		t.Fatalf("frame %v: want field %q", f, field)
	}
	return d
}

func msgs(bodies ...string) []map[string]any {
	out := make([]map[string]any, len(bodies))
	for i, b := range bodies {
		out[i] = map[string]any{"body": b}
	}
	return out
}

// TestSendStream: frames written pipelined (none waiting for the last's confirmation) are
// each confirmed by seq with the HTTP send's answer — ids, and per-message failures with the
// same codes and fields — and what they stored is received; a frame refused whole is answered
// to its seq and the stream goes on; a frame whose seq cannot be read ends the stream with an
// error frame naming the field.
func TestSendStream(t *testing.T) {
	tn := newTenant(t)
	tn.queue(t, "work", map[string]any{"maxMessageBytes": 1024})
	s := tn.a.openSendStream(t, "work")
	s.write(map[string]any{"seq": 1, "messages": msgs("a1", "a2")})
	s.write(map[string]any{"seq": 2, "messages": []map[string]any{{"body": "b1"}, {"body": "b2", "groupId": "g"}, {"body": strings.Repeat("x", 1025)}}})
	s.write(map[string]any{"seq": 3, "messages": msgs("c1")})
	s.write(map[string]any{"seq": 4}) // no messages: refused whole
	s.write(map[string]any{"seq": 5, "messages": msgs("e1"), "traceparent": "nope"})
	got := map[float64]map[string]any{}
	for range 5 {
		f := s.read()
		seq, _ := f["seq"].(float64)
		got[seq] = f
	}
	ids := map[string]bool{}
	stored := func(seq float64, want int) {
		t.Helper()
		ms, _ := got[seq]["messages"].([]any)
		if len(ms) != want {
			t.Fatalf("frame %v: confirmation %v, want %d stored", seq, got[seq], want)
		}
		for _, m := range ms {
			ids[m.(map[string]any)["messageId"].(string)] = true
		}
	}
	stored(1, 2)
	stored(2, 1)
	stored(3, 1)
	failed, _ := got[2]["failed"].([]any)
	if len(failed) != 2 {
		t.Fatalf("frame 2: %v, want two failures", got[2])
	}
	for i, want := range []struct {
		code, field string
	}{{"invalid_argument", "messages[1].groupId"}, {"payload_too_large", "messages[2]"}} {
		frameError(t, failed[i].(map[string]any), want.code, want.field)
	}
	frameError(t, got[4], "invalid_argument", "messages")
	frameError(t, got[5], "invalid_argument", "traceparent")

	// Still open after the refusals.
	s.write(map[string]any{"seq": 6, "messages": msgs("f1")})
	got[6] = s.read()
	stored(6, 1)
	received := tn.a.receive(t, "work", map[string]any{"maxMessages": 10})
	received = append(received, tn.a.receive(t, "work", map[string]any{"maxMessages": 10, "waitSeconds": 0})...)
	if len(received) != len(ids) {
		t.Fatalf("received %d messages, confirmed %d", len(received), len(ids))
	}
	for _, m := range received {
		if !ids[m["messageId"].(string)] {
			t.Fatalf("received %v, never confirmed", m)
		}
	}

	// A frame without a readable seq: the frames taken before it confirmed, then an error
	// frame naming the field, then the close.
	for _, bad := range []struct {
		frame, field string
	}{{`{"messages":[{"body":"x"}]}`, "seq"}, {`{"seq":"7","messages":[]}`, "seq"}, {`{"seq":1,"extra":true}`, "extra"}, {`not json`, ""}} {
		s := tn.a.openSendStream(t, "work")
		s.write(map[string]any{"seq": 1, "messages": msgs("before the bad frame")})
		s.write(bad.frame)
		if f := s.read(); f["seq"] != 1.0 || f["error"] != nil {
			t.Fatalf("the frame before %s: %v, want its confirmation first", bad.frame, f)
		}
		frameError(t, s.read(), "invalid_argument", bad.field)
		if _, _, err := s.conn.Read(s.ctx); websocket.CloseStatus(err) != websocket.StatusPolicyViolation {
			t.Fatalf("after %s: %v, want a policy violation close", bad.frame, err)
		}
	}
	b := tn.a.openSendStream(t, "work")
	if err := b.conn.Write(b.ctx, websocket.MessageBinary, []byte{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	frameError(t, b.read(), "invalid_argument", "frame")
}

// TestSendStreamFifo: frames carry fifo options (groupId, dedupId) as the HTTP send does: a
// duplicate answers the original's id, and a group's messages are stored in frame order.
func TestSendStreamFifo(t *testing.T) {
	tn := newTenant(t)
	tn.queue(t, "ordered.fifo", map[string]any{"type": "fifo"})
	s := tn.a.openSendStream(t, "ordered.fifo")
	for i := range 5 {
		s.write(map[string]any{"seq": i, "messages": []map[string]any{
			{"body": fmt.Sprint("m", 2*i), "groupId": "g", "dedupId": fmt.Sprint("d", 2*i)},
			{"body": fmt.Sprint("m", 2*i+1), "groupId": "g", "dedupId": fmt.Sprint("d", 2*i+1)},
		}})
	}
	s.write(map[string]any{"seq": 5, "messages": []map[string]any{{"body": "again", "groupId": "g", "dedupId": "d0"}}})
	var first string
	for i := range 6 {
		f := s.read()
		if f["seq"] != float64(i) {
			t.Fatalf("confirmation %d: %v (a fifo queue's frames are confirmed in order)", i, f)
		}
		m := f["messages"].([]any)[0].(map[string]any)
		if i == 0 {
			first = m["messageId"].(string)
		}
		if i == 5 && (m["duplicate"] != true || m["messageId"] != first) {
			t.Fatalf("the duplicate: %v, want duplicate of %s", m, first)
		}
	}
	var bodies []string
	for len(bodies) < 10 {
		got := tn.a.receive(t, "ordered.fifo", map[string]any{"maxMessages": 10})
		if len(got) == 0 {
			t.Fatalf("received %v, then nothing", bodies)
		}
		for _, m := range got {
			bodies = append(bodies, m["body"].(string))
			ack(t, tn.a, m["receiptHandle"].(string))
		}
	}
	for i, b := range bodies {
		if b != fmt.Sprint("m", i) {
			t.Fatalf("group order %v", bodies)
		}
	}
}

// TestSendStreamAuth: the upgrade takes the HTTP send's authentication and scope, and the
// route answers as an HTTP route before it upgrades.
func TestSendStreamAuth(t *testing.T) {
	tn := newTenant(t)
	tn.queue(t, "work", nil)
	ctx := t.Context()
	for _, c := range []struct {
		token  string
		queue  string
		status int
	}{
		{"", "work", 401},
		{"not-a-token", "work", 401},
		{tn.tokenWith(t, "messages:receive"), "work", 403},
		{tn.token, "missing", 404},
	} {
		_, resp, err := tn.a.as(c.token).dialSendStream(ctx, c.queue)
		if err == nil || resp == nil || resp.StatusCode != c.status {
			t.Fatalf("token %.10q queue %s: %v %v, want %d", c.token, c.queue, err, resp, c.status)
		}
	}
	newClient(t, w.a, tn.tokenWith(t, "messages:send")).openSendStream(t, "work")
	tn.a.do("GET", "/v1/queues/work/send-stream", nil).fails(t, 400, "invalid_argument", "Upgrade")
}

// TestSendStreamLimits: a frame is a send request to the project's limits — its request rate
// and maxStoredBytes refuse a frame whole, answered to its seq, as they refuse a POST.
func TestSendStreamLimits(t *testing.T) {
	t.Run("maxStoredBytes", func(t *testing.T) {
		tn := newTenant(t)
		tn.setLimits(t, map[string]any{"maxStoredBytes": 100})
		tn.queue(t, "full", nil)
		s := tn.a.openSendStream(t, "full")
		s.write(map[string]any{"seq": 1, "messages": msgs(strings.Repeat("x", 60))})
		if f := s.read(); f["error"] != nil {
			t.Fatalf("the first 60 bytes: %v", f)
		}
		for seq := 2; seq < 4; seq++ { // the engine's refusal, then the full project's
			s.write(map[string]any{"seq": seq, "messages": msgs(strings.Repeat("x", 60))})
			if d := frameError(t, s.read(), "quota_exceeded", ""); d["limit"] != "maxStoredBytes" {
				t.Fatalf("details %v", d)
			}
		}
	})
	t.Run("requestsPerSecond", func(t *testing.T) {
		tn := newTenant(t)
		tn.queue(t, "busy", nil)
		s := tn.a.openSendStream(t, "busy")
		tn.setLimits(t, map[string]any{"requestsPerSecond": 2})
		limited := false
		for seq := 0; seq < 40 && !limited; seq++ {
			s.write(map[string]any{"seq": seq, "messages": msgs("x")})
			f := s.read()
			if f["error"] != nil {
				frameError(t, f, "rate_limited", "")
				if ra, _ := f["retryAfterSeconds"].(float64); ra < 1 {
					t.Fatalf("rate_limited frame without retryAfterSeconds: %v", f)
				}
				limited = true
			}
		}
		if !limited {
			t.Fatal("40 frames at a limit of 2 requests a second were all admitted")
		}
	})
}

// TestSendStreamMeteredAndTraced: a frame's stored messages are metered as a send's
// (messagesSent, bytesIn, one request per frame; a refused message nothing), and a frame's
// traceparent is stored with its messages that carry none, as a send request's header is.
func TestSendStreamMeteredAndTraced(t *testing.T) {
	tn := newTenant(t)
	tn.queue(t, "q", nil)
	const frameTP = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	const ownTP = "00-11111111111111111111111111111111-2222222222222222-01"
	s := tn.a.openSendStream(t, "q")
	s.write(map[string]any{"seq": 1, "traceparent": frameTP, "messages": []map[string]any{
		{"body": "hello"}, {"body": "world!", "traceparent": ownTP}, {"body": "bad", "delaySeconds": -1},
	}})
	if f := s.read(); len(f["messages"].([]any)) != 2 {
		t.Fatalf("confirmation %v", f)
	}
	got := tn.a.receive(t, "q", map[string]any{"maxMessages": 10})
	tps := map[string]string{}
	for _, m := range got {
		tps[m["body"].(string)], _ = m["traceparent"].(string)
	}
	if tps["hello"] != frameTP || tps["world!"] != ownTP || len(tps) != 2 {
		t.Fatalf("traceparents %v", tps)
	}
	hour := waitUsage(t, tn.a, func(h map[string]any) bool { return num(t, h, "messagesSent") == 2 })
	if num(t, hour, "bytesIn") != 11 {
		t.Fatalf("usage hour: %v", hour)
	}
}
