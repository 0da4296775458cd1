package embedded_test

import (
	"net/http"
	"path/filepath"
	"testing"

	"github.com/queueshq/queues/pkg/openapicheck"
)

// TestTopicLogAndStateSurviveRestart: on serve's wiring a topic's log and keyed state (a
// patch merged into it) read back through the API, answers checked against openapi.yaml,
// before and after a restart on the same data directory.
func TestTopicLogAndStateSurviveRestart(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	n, srv := openNode(t, dir)
	c := &client{t: t, hc: openapicheck.NewChecker(t, srv.URL).Client(), base: srv.URL, token: n.Token}
	c.want(http.StatusCreated, http.MethodPost, "/v1/topics", map[string]any{"name": "prices"}, nil)
	c.want(http.StatusOK, http.MethodPost, "/v1/topics/prices/messages", map[string]any{"messages": []map[string]any{
		{"body": `{"bid":1,"ask":2}`, "key": "EURUSD"},
		{"body": `{"ask":3}`, "key": "EURUSD", "merge": "patch"},
		{"body": "plain"},
	}}, nil)
	check := func(c *client, when string) {
		t.Helper()
		var log struct {
			Messages []struct {
				Sequence uint64 `json:"sequence"`
				Body     string `json:"body"`
				Key      string `json:"key"`
			} `json:"messages"`
		}
		c.want(http.StatusOK, http.MethodGet, "/v1/topics/prices/messages?from=2", nil, &log)
		if len(log.Messages) != 2 || log.Messages[0].Sequence != 2 || log.Messages[0].Body != `{"bid":1,"ask":3}` ||
			log.Messages[0].Key != "EURUSD" || log.Messages[1].Body != "plain" {
			t.Fatalf("%s: the log from 2 reads %+v", when, log)
		}
		var st struct {
			Key      string `json:"key"`
			Body     string `json:"body"`
			Sequence uint64 `json:"sequence"`
		}
		c.want(http.StatusOK, http.MethodGet, "/v1/topics/prices/state?key=EURUSD", nil, &st)
		if st.Key != "EURUSD" || st.Body != `{"bid":1,"ask":3}` || st.Sequence != 2 {
			t.Fatalf("%s: the state reads %+v", when, st)
		}
		c.want(http.StatusNotFound, http.MethodGet, "/v1/topics/prices/state?key=GBPUSD", nil, nil)
	}
	check(c, "before the restart")
	n.Drain()
	srv.Close()
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	n2, srv2 := openNode(t, dir)
	check(&client{t: t, hc: openapicheck.NewChecker(t, srv2.URL).Client(), base: srv2.URL, token: n2.Token}, "after the restart")
}
