package embedded_test

import (
	"net/http"
	"path/filepath"
	"testing"

	"github.com/queueshq/queues/pkg/apitest"
)

// TestTopicsSmoke: on the embedded wiring (the bbolt engine's topics, the embedded metadata
// store, the in-process fan-out) a message published to a topic reaches every bound queue
// once, with the published messageId, and the log and keyed state read back.
func TestTopicsSmoke(t *testing.T) {
	t.Parallel()
	n, srv := openNode(t, filepath.Join(t.TempDir(), "data"))
	if n.Fanout == nil {
		t.Fatal("the embedded node runs no fan-out: its engine or store keeps no topics")
	}
	chk := apitest.NewChecker(t, srv.URL)
	c := &client{t: t, hc: chk.Client(), base: srv.URL, token: n.Token}
	c.want(http.StatusCreated, http.MethodPost, "/v1/topics", map[string]any{"name": "orders"}, nil)
	for _, q := range []string{"billing", "shipping"} {
		c.want(http.StatusCreated, http.MethodPost, "/v1/queues", map[string]any{"name": q}, nil)
		c.want(http.StatusCreated, http.MethodPost, "/v1/queues/"+q+"/sources", map[string]any{"topic": "orders"}, nil)
	}
	var pub struct {
		Messages []struct {
			MessageID string `json:"messageId"`
			Sequence  uint64 `json:"sequence"`
		} `json:"messages"`
	}
	c.want(http.StatusOK, http.MethodPost, "/v1/topics/orders/messages",
		map[string]any{"messages": []map[string]any{{"body": `{"id":1}`, "key": "o1"}}}, &pub)
	if len(pub.Messages) != 1 || pub.Messages[0].Sequence != 1 {
		t.Fatalf("publish answered %+v", pub)
	}
	for _, q := range []string{"billing", "shipping"} {
		var r received
		c.want(http.StatusOK, http.MethodPost, "/v1/queues/"+q+"/receive", map[string]any{"maxMessages": 10, "waitSeconds": 10}, &r)
		if len(r.Messages) != 1 || r.Messages[0].MessageID != pub.Messages[0].MessageID || r.Messages[0].Body != `{"id":1}` {
			t.Fatalf("queue %s received %+v, want the published message", q, r)
		}
	}
	var log struct {
		Messages []struct {
			Sequence uint64 `json:"sequence"`
			Body     string `json:"body"`
		} `json:"messages"`
	}
	c.want(http.StatusOK, http.MethodGet, "/v1/topics/orders/messages", nil, &log)
	if len(log.Messages) != 1 || log.Messages[0].Body != `{"id":1}` {
		t.Fatalf("the log reads %+v", log)
	}
	var st struct {
		Key  string `json:"key"`
		Body string `json:"body"`
	}
	c.want(http.StatusOK, http.MethodGet, "/v1/topics/orders/state?key=o1", nil, &st)
	if st.Key != "o1" || st.Body != `{"id":1}` {
		t.Fatalf("the state reads %+v", st)
	}
}
