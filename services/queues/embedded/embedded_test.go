package embedded_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/openapicheck"
	"github.com/queueshq/queues/services/queues/embedded"
)

func openNode(t *testing.T, dir string) (*embedded.Node, *httptest.Server) {
	t.Helper()
	n, err := embedded.Open(t.Context(), embedded.Options{DataDir: dir, Logger: slog.New(slog.DiscardHandler), SweepEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(n.Handler())
	t.Cleanup(func() {
		n.Drain()
		srv.Close()
		if err := n.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return n, srv
}

type client struct {
	t     *testing.T
	hc    *http.Client
	base  string
	token string
}

// do makes a request and decodes a JSON answer into out; it returns the status.
func (c *client) do(method, path string, in, out any) int {
	c.t.Helper()
	var body io.Reader
	if in != nil {
		b, _ := json.Marshal(in)
		body = bytes.NewReader(b)
	}
	req, _ := http.NewRequestWithContext(c.t.Context(), method, c.base+path, body)
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil && len(b) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			c.t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
	return resp.StatusCode
}

func (c *client) want(status int, method, path string, in, out any) {
	c.t.Helper()
	if got := c.do(method, path, in, out); got != status {
		c.t.Fatalf("%s %s answered %d, want %d", method, path, got, status)
	}
}

type received struct {
	Messages []struct {
		MessageID     string `json:"messageId"`
		Body          string `json:"body"`
		ReceiptHandle string `json:"receiptHandle"`
		ReceiveCount  int    `json:"receiveCount"`
	} `json:"messages"`
}

// TestSmoke runs the HTTP API on the embedded wiring, every response checked against
// openapi.yaml: first start (project, token), queue, send, receive, ack, long poll, counts,
// and a restart that keeps the token, the queue and its messages.
func TestSmoke(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	n, srv := openNode(t, dir)
	if !n.Created || n.Project.Name != embedded.DefaultProject || n.Token == "" {
		t.Fatalf("first start: created %v, project %+v", n.Created, n.Project)
	}
	fi, err := os.Stat(filepath.Join(dir, embedded.TokenFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v, %v", fi, err)
	}
	chk := openapicheck.NewChecker(t, srv.URL)
	c := &client{t: t, hc: chk.Client(), base: srv.URL, token: n.Token}

	c.want(http.StatusOK, http.MethodGet, "/readyz", nil, nil)
	var q struct {
		ID string `json:"id"`
	}
	c.want(http.StatusCreated, http.MethodPost, "/v1/queues", map[string]any{"name": "smoke", "visibilityTimeoutSeconds": 30}, &q)
	var sent struct {
		Messages []struct {
			MessageID string `json:"messageId"`
		} `json:"messages"`
	}
	c.want(http.StatusOK, http.MethodPost, "/v1/queues/smoke/messages",
		map[string]any{"messages": []map[string]any{{"body": "one", "attributes": map[string]string{"k": "v"}}, {"body": "two"}}}, &sent)
	if len(sent.Messages) != 2 {
		t.Fatalf("send answered %+v", sent)
	}
	var r received
	c.want(http.StatusOK, http.MethodPost, "/v1/queues/smoke/receive", map[string]any{"maxMessages": 1, "waitSeconds": 0}, &r)
	if len(r.Messages) != 1 || r.Messages[0].Body != "one" || r.Messages[0].ReceiveCount != 1 {
		t.Fatalf("receive answered %+v", r)
	}
	c.want(http.StatusNoContent, http.MethodPost, "/v1/receipts/ack", map[string]any{"receiptHandle": r.Messages[0].ReceiptHandle}, nil)
	c.want(http.StatusGone, http.MethodPost, "/v1/receipts/ack", map[string]any{"receiptHandle": r.Messages[0].ReceiptHandle}, nil)

	var counts struct {
		Partitions int `json:"partitions"`
		Counts     struct {
			Visible, InFlight, Delayed int64
		} `json:"counts"`
	}
	c.want(http.StatusOK, http.MethodGet, "/v1/queues/smoke", nil, &counts)
	if counts.Counts.Visible != 1 || counts.Counts.InFlight != 0 || counts.Partitions != 1 {
		t.Fatalf("counts %+v", counts)
	}

	// Long poll: a waiting receive answers as soon as a message is sent.
	var r2 received
	c.want(http.StatusOK, http.MethodPost, "/v1/queues/smoke/receive", map[string]any{"maxMessages": 10}, &r2) // takes "two"
	type answer struct {
		r   received
		at  time.Time
		err int
	}
	got := make(chan answer, 1)
	go func() {
		var lr received
		st := c.do(http.MethodPost, "/v1/queues/smoke/receive", map[string]any{"maxMessages": 10, "waitSeconds": 10}, &lr)
		got <- answer{lr, time.Now(), st}
	}()
	// Give the poll time to park, so the send below wakes it rather than being found by it.
	// (Correctness does not depend on this: a poll arriving later finds the message at once.)
	time.Sleep(100 * time.Millisecond)
	sentAt := time.Now()
	c.want(http.StatusOK, http.MethodPost, "/v1/queues/smoke/messages", map[string]any{"messages": []map[string]any{{"body": "wake"}}}, nil)
	a := <-got
	if a.err != http.StatusOK || len(a.r.Messages) != 1 || a.r.Messages[0].Body != "wake" {
		t.Fatalf("long poll answered %d %+v", a.err, a.r)
	}
	if d := a.at.Sub(sentAt); d > 2*time.Second {
		t.Fatalf("long poll answered %v after the send", d)
	}
	c.want(http.StatusAccepted, http.MethodPost, "/v1/queues/smoke/purge", nil, nil)
	c.want(http.StatusOK, http.MethodPost, "/v1/queues/smoke/messages", map[string]any{"messages": []map[string]any{{"body": "kept"}}}, nil)

	// Restart on the same directory: the same token works and the state is there.
	n.Drain()
	srv.Close()
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	n2, srv2 := openNode(t, dir)
	if n2.Created || n2.Token != n.Token || n2.Project.ID != n.Project.ID {
		t.Fatalf("second start: created %v, token changed %v, project %s (was %s)", n2.Created, n2.Token != n.Token, n2.Project.ID, n.Project.ID)
	}
	chk2 := openapicheck.NewChecker(t, srv2.URL)
	c2 := &client{t: t, hc: chk2.Client(), base: srv2.URL, token: n2.Token}
	var r3 received
	c2.want(http.StatusOK, http.MethodPost, "/v1/queues/"+q.ID+"/receive", map[string]any{"maxMessages": 10, "waitSeconds": 0}, &r3)
	if len(r3.Messages) != 1 || r3.Messages[0].Body != "kept" {
		t.Fatalf("after restart received %+v, want the message sent after the purge", r3)
	}
}
