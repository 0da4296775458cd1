package embedded_test

import (
	"net/http"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/openapicheck"
)

// TestPublishFansOut runs a topic through serve's wiring, answers checked against
// openapi.yaml: a publish reaches both bound queues, with the published message ids, once.
func TestPublishFansOut(t *testing.T) {
	t.Parallel()
	n, srv := openNode(t, filepath.Join(t.TempDir(), "data"))
	chk := openapicheck.NewChecker(t, srv.URL)
	c := &client{t: t, hc: chk.Client(), base: srv.URL, token: n.Token}
	c.want(http.StatusCreated, http.MethodPost, "/v1/topics", map[string]any{"name": "news"}, nil)
	for _, q := range []string{"a", "b"} {
		c.want(http.StatusCreated, http.MethodPost, "/v1/queues", map[string]any{"name": q}, nil)
		c.want(http.StatusCreated, http.MethodPost, "/v1/queues/"+q+"/sources", map[string]any{"topic": "news"}, nil)
	}
	var pub struct {
		Messages []struct {
			MessageID string `json:"messageId"`
		} `json:"messages"`
	}
	c.want(http.StatusOK, http.MethodPost, "/v1/topics/news/messages",
		map[string]any{"messages": []map[string]any{{"body": "one"}, {"body": "two"}}}, &pub)
	answered := time.Now()
	if len(pub.Messages) != 2 {
		t.Fatalf("publish answered %+v", pub)
	}
	want := []string{pub.Messages[0].MessageID, pub.Messages[1].MessageID}
	slices.Sort(want)
	for _, q := range []string{"a", "b"} {
		var got []string
		for range 20 { // a long poll each: the copies arrive within milliseconds
			var r received
			c.want(http.StatusOK, http.MethodPost, "/v1/queues/"+q+"/receive", map[string]any{"maxMessages": 10, "waitSeconds": 1}, &r)
			if len(got) == 0 && len(r.Messages) > 0 {
				t.Logf("queue %s: receivable %v after the publish's answer", q, time.Since(answered))
			}
			for _, m := range r.Messages {
				got = append(got, m.MessageID)
			}
			if len(got) >= 2 {
				break
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("queue %s received %v, want the published %v once each", q, got, want)
		}
	}
}
