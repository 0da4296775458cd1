package api

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/engine"
)

// FuzzSendFrame: any frame either parses to a seq within range — its messages then decode
// as a send's do, each fault an invalid_argument or payload_too_large naming a field under
// messages[i] — or is refused with invalid_argument (never a panic, never another code); and
// the confirmation of any outcome is one valid JSON object carrying the seq.
func FuzzSendFrame(f *testing.F) {
	for _, s := range []string{
		`{"seq":0,"messages":[{"body":"hi"}]}`, `{"seq":9007199254740991,"messages":[{"body":"x","groupId":"g","dedupId":"d"}]}`,
		`{"seq":1,"messages":[{"body":"a"},{"body":"b","delaySeconds":-1}],"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}`,
		`{"seq":-1,"messages":[]}`, `{"seq":"1"}`, `{"messages":[{"body":"x"}]}`, `{"seq":1.5}`, `{"seq":1e3,"x":1}`, `[]`, `{`, ``, `null`,
	} {
		f.Add([]byte(s), true, false)
	}
	f.Add([]byte(`{"seq":1}`), false, false)
	f.Fuzz(func(t *testing.T, data []byte, text, fifo bool) {
		typ := websocket.MessageBinary
		if text {
			typ = websocket.MessageText
		}
		fr, aerr := parseSendFrame(typ, data)
		if aerr != nil {
			if aerr.Code != apierr.InvalidArgument {
				t.Fatalf("refused with %s: %v", aerr.Code, aerr)
			}
			if !json.Valid(appendSendConfirmation(nil, 0, sendOutcome{}, aerr)) {
				t.Fatal("an invalid error confirmation")
			}
			return
		}
		if !text || fr.seq < 0 || fr.seq > maxSendSeq || fr.size != len(data) {
			t.Fatalf("accepted %q as seq %d (text %v)", data, fr.seq, text)
		}
		out := sendOutcome{sent: []sendOK{}, failed: []sendFailed{}}
		items, ok, aerr := fr.o.array("messages", 1, engine.MaxBatch)
		if aerr != nil || !ok {
			if aerr != nil && aerr.Field != "messages" {
				t.Fatalf("messages refused naming %q", aerr.Field)
			}
		}
		for i, raw := range items {
			prefix := "messages[" + string(rune('0'+i)) + "]"
			if _, err := parseMessage(raw, fr.o.valid, prefix, testRules(fifo)); err != nil {
				if err.Code != apierr.InvalidArgument && err.Code != apierr.PayloadTooLarge || !strings.HasPrefix(err.Field, prefix) {
					t.Fatalf("message %d refused with %s naming %q", i, err.Code, err.Field)
				}
				out.failed = append(out.failed, sendFailed{Index: i, Error: bodyOf(err)})
				continue
			}
			out.sent = append(out.sent, sendOK{Index: i, MessageID: "m", SequenceNumber: seqNumber(i)})
		}
		b := appendSendConfirmation(nil, fr.seq, out, nil)
		var back struct {
			Seq      *int64            `json:"seq"`
			Messages []json.RawMessage `json:"messages"`
			Failed   []json.RawMessage `json:"failed"`
		}
		if err := json.Unmarshal(b, &back); err != nil || back.Seq == nil || *back.Seq != fr.seq ||
			len(back.Messages) != len(out.sent) || len(back.Failed) != len(out.failed) {
			t.Fatalf("confirmation %s of seq %d: %v", b, fr.seq, err)
		}
	})
}

// dialSend opens the send stream of queue q.
func (r *streamRig) dialSend(t *testing.T, jwt string) *websocket.Conn {
	t.Helper()
	c := r.dial(t, jwt) // a receive stream would hold a slot: closed, then the send stream
	_ = c.CloseNow()
	r.awaitClosed(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	sc, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(r.srv.URL, "http")+"/v1/queues/q/send-stream",
		&websocket.DialOptions{HTTPHeader: map[string][]string{"Authorization": {"Bearer " + jwt}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sc.CloseNow() })
	return sc
}

func sendFrameOf(t *testing.T, c *websocket.Conn, seq int, bodies ...string) {
	t.Helper()
	ms := make([]map[string]string, len(bodies))
	for i, b := range bodies {
		ms[i] = map[string]string{"body": b}
	}
	b, _ := json.Marshal(map[string]any{"seq": seq, "messages": ms})
	if err := c.Write(t.Context(), websocket.MessageText, b); err != nil {
		t.Fatal(err)
	}
}

// TestSendStreamGuarded: an open send stream re-checks its token as a receive stream does — a
// revoked token ends it (unauthenticated, close 1008) — and one that sends no frame for the
// idle limit ends with idle; frames are activity.
func TestSendStreamGuarded(t *testing.T) {
	r := newStreamRig(t, StreamLimits{})
	q, tok, jwt := r.project(t, nil)
	c := r.dialSend(t, jwt)
	r.clk.Advance(59 * time.Second)
	sendFrameOf(t, c, 1, "a")
	if _, data, err := c.Read(t.Context()); err != nil || !strings.HasPrefix(string(data), `{"seq":1,"failed":[],"messages":[{`) {
		t.Fatalf("confirmation %s, %v", data, err)
	}
	r.clk.Advance(59 * time.Second)
	r.tick(t)
	r.awaitChecked(t) // 118 s open, 59 s since the frame: still open
	r.clk.Advance(2 * time.Second)
	r.tick(t)
	if code, _, status := streamEnd(t, c); code != "idle" || status != websocket.StatusPolicyViolation {
		t.Fatalf("stream ended with %q, close %d; want idle, 1008", code, status)
	}

	r.awaitClosed(t)
	c = r.dialSend(t, jwt)
	if err := r.cache.RevokeToken(t.Context(), q.ProjectID, tok.ID, r.clk.Now()); err != nil {
		t.Fatal(err)
	}
	r.tick(t)
	if code, _, status := streamEnd(t, c); code != "unauthenticated" || status != websocket.StatusPolicyViolation {
		t.Fatalf("stream ended with %q, close %d; want unauthenticated, 1008", code, status)
	}
}

// TestSendStreamDrain: a draining server confirms the frame it is storing, then closes with
// 1001 — the promise a producer relies on to send what is unconfirmed again.
func TestSendStreamDrain(t *testing.T) {
	r := newStreamRig(t, StreamLimits{})
	q, _, jwt := r.project(t, nil)
	c := r.dialSend(t, jwt)
	entered, gate := make(chan struct{}), make(chan struct{})
	hold := func() {
		entered <- struct{}{}
		<-gate
	}
	r.sending.Store(&hold)
	sendFrameOf(t, c, 7, "stored before the close")
	<-entered // the frame is taken and being stored
	// Its store ends only once the stream stopped taking frames: a stream that closed then,
	// without waiting for the frames it took, would close before it confirmed this one.
	r.s.streamDraining = func() { close(gate) }
	close(r.drain)
	_, data, err := c.Read(t.Context())
	if err != nil || !strings.HasPrefix(string(data), `{"seq":7,"failed":[],"messages":[{`) {
		t.Fatalf("the frame taken before the drain: %s, %v", data, err)
	}
	if _, _, err := c.Read(t.Context()); websocket.CloseStatus(err) != websocket.StatusGoingAway {
		t.Fatalf("after the confirmation: %v, want close 1001", err)
	}
	eq, err := r.s.engineQueue(t.Context(), q)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := r.s.cfg.Engine.Stats(t.Context(), eq); err != nil || st.Visible != 1 {
		t.Fatalf("stats %+v, %v; want the one message", st, err)
	}
}
