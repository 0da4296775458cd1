package attacks

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
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
