package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// sendWithTraceparent sends messages with a traceparent request header.
func (c *client) sendWithTraceparent(t *testing.T, queue, header string, msgs []any) resp {
	t.Helper()
	data, _ := json.Marshal(map[string]any{"messages": msgs})
	req, err := http.NewRequest("POST", c.base+"/v1/queues/"+queue+"/messages", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("traceparent", header)
	hr, err := c.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer hr.Body.Close()
	raw, _ := io.ReadAll(hr.Body)
	r := resp{status: hr.StatusCode, header: hr.Header, raw: raw}
	if err := json.Unmarshal(raw, &r.body); err != nil {
		t.Fatalf("send: %s", raw)
	}
	return r
}

// TestTraceparent: a message's trace context is stored from the send's header or its own
// field, validated, returned on receive and browse, and never shown or counted as an
// attribute (with tracing off, as here, the header is stored as sent).
func TestTraceparent(t *testing.T) {
	tn := newTenant(t)
	c := tn.a
	tn.queue(t, "traced", nil)
	const header = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	const own = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	ten := map[string]any{}
	for i := range 10 {
		ten[fmt.Sprintf("a%d", i)] = "v"
	}
	r := c.sendWithTraceparent(t, "traced", header, []any{
		map[string]any{"body": "from the header", "attributes": ten},
		map[string]any{"body": "its own", "traceparent": own},
		map[string]any{"body": "bad", "traceparent": strings.ToUpper(own)},
		map[string]any{"body": strings.Repeat("a", 256*1024)}, // at the limit: the traceparent is not counted
	}).must(t, 200)
	if len(r.list("messages")) != 3 || len(r.list("failed")) != 1 {
		t.Fatalf("send: %s", r.raw)
	}
	f := r.list("failed")[0]
	if e := f["error"].(map[string]any); f["index"] != 2.0 || e["code"] != "invalid_argument" || e["details"].(map[string]any)["field"] != "messages[2].traceparent" {
		t.Fatalf("failed: %s", r.raw)
	}
	// An invalid header is ignored, as W3C asks of a receiver.
	c.sendWithTraceparent(t, "traced", "garbage", []any{map[string]any{"body": "untraced"}}).must(t, 200)

	want := map[string]string{"from the header": header, "its own": own, strings.Repeat("a", 256*1024): header, "untraced": ""}
	check := func(what string, msgs []map[string]any) {
		t.Helper()
		if len(msgs) != 4 {
			t.Fatalf("%s: %d messages", what, len(msgs))
		}
		for _, m := range msgs {
			body := m["body"].(string)
			tp, _ := m["traceparent"].(string)
			if tp != want[body] {
				t.Errorf("%s %.20q: traceparent %q, want %q", what, body, tp, want[body])
			}
			for k := range m["attributes"].(map[string]any) {
				if !strings.HasPrefix(k, "a") {
					t.Errorf("%s %.20q: attribute %q shown", what, body, k)
				}
			}
		}
	}
	check("browse", c.do("GET", "/v1/queues/traced/messages", nil).must(t, 200).list("messages"))
	check("receive", c.do("POST", "/v1/queues/traced/receive", map[string]any{"maxMessages": 10}).must(t, 200).list("messages"))
}
