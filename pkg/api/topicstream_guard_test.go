package api

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
)

func keyedPub(key, body string, merge engine.MergeMode) engine.PublishMessage {
	return engine.PublishMessage{Message: engine.Message{Body: body, Key: key, Merge: merge}}
}

// TestTopicStreamDelta: with delta=true a keyed entry goes out as the merge patch from the
// last version of its key this stream delivered ("delta": true), whole the first time, after
// a delete, when a body is no JSON object and when the patch would have to set a null; an
// entry without a key is whole; a stream without delta gets every body whole.
func TestTopicStreamDelta(t *testing.T) { onEngines(t, testTopicStreamDelta) }

func testTopicStreamDelta(t *testing.T, mk engineMaker) {
	r := newTopicRigOn(t, StreamLimits{}, mk)
	r.publish(t,
		keyedPub("k1", `{"a":1,"b":{"c":1}}`, engine.MergeReplace),
		keyedPub("k1", `{"a":1,"b":{"c":2},"d":[1]}`, engine.MergeReplace),
		keyedPub("k2", `plain text`, engine.MergeReplace),
		keyedPub("k2", `plain2`, engine.MergeReplace),
		engine.PublishMessage{Message: engine.Message{Key: "k1"}, Delete: true},
		keyedPub("k1", `{"a":2}`, engine.MergeReplace),
	)
	r.publish(t,
		keyedPub("k3", `{"x":1}`, engine.MergePatch),
		keyedPub("k3", `{"y":2}`, engine.MergePatch), // merged: {"x":1,"y":2}
		keyedPub("k4", `{"a":1}`, engine.MergeReplace),
		keyedPub("k4", `{"a":null}`, engine.MergeReplace),
		engine.PublishMessage{Message: engine.Message{Body: `{"u":1}`}},
		keyedPub("k1", `{"a":2,"z":true}`, engine.MergeReplace),
	)
	type want struct {
		body  string // "<null>": a null body
		delta bool
	}
	wantDelta := []want{
		{`{"a":1,"b":{"c":1}}`, false}, {`{"b":{"c":2},"d":[1]}`, true}, {`plain text`, false}, {`plain2`, false},
		{`<null>`, false}, {`{"a":2}`, false}, {`{"x":1}`, false}, {`{"y":2}`, true}, {`{"a":1}`, false},
		{`{"a":null}`, false}, {`{"u":1}`, false}, {`{"z":true}`, true},
	}
	wantWhole := []want{
		{`{"a":1,"b":{"c":1}}`, false}, {`{"a":1,"b":{"c":2},"d":[1]}`, false}, {`plain text`, false}, {`plain2`, false},
		{`<null>`, false}, {`{"a":2}`, false}, {`{"x":1}`, false}, {`{"x":1,"y":2}`, false}, {`{"a":1}`, false},
		{`{"a":null}`, false}, {`{"u":1}`, false}, {`{"a":2,"z":true}`, false},
	}
	for _, c := range []struct {
		query string
		want  []want
	}{{"from=earliest&delta=true&maxMessages=5", wantDelta}, {"from=earliest", wantWhole}} {
		conn := r.open(t, c.query)
		credit(t, conn, len(c.want))
		var got []want
		for len(got) < len(c.want) {
			for _, m := range readFrame(t, conn).Messages {
				b := "<null>"
				if m.Body != nil {
					b = *m.Body
				}
				got = append(got, want{b, m.Delta})
			}
		}
		for i := range c.want {
			if got[i] != c.want[i] {
				t.Errorf("%s: entry %d = %+v, want %+v", c.query, i+1, got[i], c.want[i])
			}
		}
	}
}

// TestDeltaMemoryBounds: a stream remembers at most deltaMaxKeys keys and deltaMaxBytes;
// past them a new key is not remembered (its versions go whole) and a remembered key whose
// new version does not fit is forgotten.
func TestDeltaMemoryBounds(t *testing.T) {
	m := newDeltaMemory()
	for i := range deltaMaxKeys {
		m.remember(strings.Repeat("k", 1+i%7)+string(rune('A'+i%26))+strconv.Itoa(i), "{}")
	}
	m.remember("one-too-many", "{}")
	if _, ok := m.bodies["one-too-many"]; ok || len(m.bodies) != deltaMaxKeys {
		t.Fatalf("%d keys remembered, the last one %v; want %d, not the last", len(m.bodies), ok, deltaMaxKeys)
	}
	m = newDeltaMemory()
	m.remember("big", `{"x":"`+strings.Repeat("x", deltaMaxBytes/2)+`"}`)
	m.remember("big2", `{"x":"`+strings.Repeat("x", deltaMaxBytes/2)+`"}`)
	if _, ok := m.bodies["big2"]; ok {
		t.Fatal("remembered past deltaMaxBytes")
	}
	m.remember("big", `{"x":"`+strings.Repeat("y", deltaMaxBytes)+`"}`)
	if _, ok := m.bodies["big"]; ok || m.bytes != 0 {
		t.Fatalf("a version past the bound kept (bytes %d); want the key forgotten", m.bytes)
	}
}

// topicUpgrade asks for topic t's stream with a plain request: status, error code and field.
func (r *topicRig) topicUpgrade(t *testing.T, jwt, query string, upgrade bool) (status int, code, field string) {
	t.Helper()
	req, _ := http.NewRequest("GET", r.srv.URL+"/v1/topics/t/stream?"+query, nil)
	req.Header.Set("Authorization", "Bearer "+jwt)
	if upgrade {
		req.Header.Set("Connection", "Upgrade")
		req.Header.Set("Upgrade", "websocket")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Error struct {
			Code    string         `json:"code"`
			Details map[string]any `json:"details"`
		} `json:"error"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&body)
	field, _ = body.Error.Details["field"].(string)
	limit, _ := body.Error.Details["limit"].(string)
	return resp.StatusCode, body.Error.Code, field + limit
}

// TestTopicStreamRefusals: bad parameters are 400s naming the parameter, before the upgrade;
// a sequence past the log's end is refused; the scope is messages:receive.
func TestTopicStreamRefusals(t *testing.T) {
	r := newTopicRig(t, StreamLimits{})
	r.publish(t, bodies("a", "b")...)
	for _, c := range []struct {
		query, field string
		upgrade      bool
	}{
		{"from=abc", "from", true}, {"from=0", "from", true}, {"from=4", "from", true},
		{"delta=yes", "delta", true}, {"maxMessages=0", "maxMessages", true}, {"maxMessages=1001", "maxMessages", true},
		{"attribute.=x", "attribute.", true}, {"", "Upgrade", false},
	} {
		if st, code, field := r.topicUpgrade(t, r.jwt, c.query, c.upgrade); st != 400 || code != "invalid_argument" || field != c.field {
			t.Errorf("%q: %d %s field %q; want 400 invalid_argument field %q", c.query, st, code, field, c.field)
		}
	}
	c := r.open(t, "from=3") // last+1: the next publish
	credit(t, c, 1)
	r.publish(t, bodies("c")...)
	if got := sequences(t, c, 1); !sameSeqs(got, []uint64{3}) {
		t.Fatalf("from last+1: %v, want 3", got)
	}

	now := r.clk.Now()
	tok := meta.Token{ID: ids.New(), ProjectID: r.top.ProjectID, Scopes: []string{"messages:send", "queues:read"}, CreatedAt: now}
	if err := r.store.CreateToken(t.Context(), tok); err != nil {
		t.Fatal(err)
	}
	send, err := r.auth.Issue(tok.ProjectID, tok.ID, tok.Scopes, now, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st, code, _ := r.topicUpgrade(t, send, "", true); st != 403 || code != "permission_denied" {
		t.Errorf("without messages:receive: %d %s, want 403 permission_denied", st, code)
	}
}

// TestTopicStreamFrames: a frame other than credit ends the stream with invalid_argument
// naming what was wrong (close 1008).
func TestTopicStreamFrames(t *testing.T) {
	r := newTopicRig(t, StreamLimits{})
	c := r.open(t, "")
	if err := c.Write(t.Context(), websocket.MessageText, []byte(`{"id":"1","ack":{"receiptHandle":"x"}}`)); err != nil {
		t.Fatal(err)
	}
	if code, _, status := streamEnd(t, c); code != "invalid_argument" || status != websocket.StatusPolicyViolation {
		t.Fatalf("ended with %q, close %d; want invalid_argument, 1008", code, status)
	}
	c = r.open(t, "")
	credit(t, c, maxStreamCredit)
	credit(t, c, 1)
	if code, _, _ := streamEnd(t, c); code != "invalid_argument" {
		t.Fatalf("credit past %d: ended with %q, want invalid_argument", maxStreamCredit, code)
	}
}

// TestTopicStreamCaps: topic streams count against the receive streams' caps (one
// project's, one replica's): past them either upgrade is 429 naming the cap, and a closed
// topic stream frees its slot. Before, a topic stream took no slot.
func TestTopicStreamCaps(t *testing.T) {
	r := newTopicRig(t, StreamLimits{PerProject: 1, PerReplica: 2})
	c := r.open(t, "")
	if st, _, lim := r.upgrade(t, r.jwt); st != 429 || lim != "streamsPerProject" {
		t.Fatalf("a receive stream beside the topic stream: %d %s, want 429 streamsPerProject", st, lim)
	}
	if st, code, lim := r.topicUpgrade(t, r.jwt, "", true); st != 429 || code != "rate_limited" || lim != "streamsPerProject" {
		t.Fatalf("a second topic stream: %d %s %s, want 429 rate_limited streamsPerProject", st, code, lim)
	}
	_, _, other := r.project(t, nil)
	r.dial(t, other) // the replica's second
	_, _, third := r.project(t, nil)
	if st, _, lim := r.upgrade(t, third); st != 429 || lim != "streamsPerReplica" {
		t.Fatalf("third on the replica: %d %s, want 429 streamsPerReplica", st, lim)
	}
	_ = c.Close(websocket.StatusNormalClosure, "")
	await(t, "the topic stream's slot freed", func() bool { return r.s.openStreams() == 1 })
	r.open(t, "")
}

// TestTopicStreamGuards: the receive stream's guards hold: a revoked token ends the stream
// (unauthenticated), a stream without credit or frames for a minute ends (idle), and a
// deleted topic ends it (not_found) at the check every topicCheckTicks ticks.
func TestTopicStreamGuards(t *testing.T) {
	r := newTopicRig(t, StreamLimits{})
	c := r.open(t, "")
	r.clk.Advance(61 * time.Second)
	r.tick(t)
	if code, _, status := streamEnd(t, c); code != "idle" || status != websocket.StatusPolicyViolation {
		t.Fatalf("idle: ended with %q, close %d", code, status)
	}
	r.awaitClosed(t)

	c = r.open(t, "")
	credit(t, c, 1)
	if err := r.cache.RevokeToken(t.Context(), r.top.ProjectID, r.tok.ID, r.clk.Now()); err != nil {
		t.Fatal(err)
	}
	r.tick(t)
	if code, _, status := streamEnd(t, c); code != "unauthenticated" || status != websocket.StatusPolicyViolation {
		t.Fatalf("revoked: ended with %q, close %d", code, status)
	}
	r.awaitClosed(t)
	_, tok, jwt := r.project(t, nil)
	r.tok, r.jwt = tok, jwt
	r.top.ProjectID, r.top.ID = tok.ProjectID, ids.New()
	if err := r.s.CreateTopic(t.Context(), r.top); err != nil {
		t.Fatal(err)
	}

	c = r.open(t, "")
	credit(t, c, 1)
	if _, _, err := r.s.cfg.Topics.DeleteTopic(t.Context(), r.top.ProjectID, r.top.ID); err != nil {
		t.Fatal(err)
	}
	for range topicCheckTicks - 1 {
		r.tick(t)
		r.awaitChecked(t)
	}
	r.tick(t)
	if code, _, _ := streamEnd(t, c); code != "not_found" {
		t.Fatalf("topic deleted: ended with %q, want not_found", code)
	}
}

// TestTopicStreamDrain: a draining server closes a topic stream waiting on a quiet topic
// with 1001 (going away), for the subscriber to reconnect elsewhere from its bookmark.
func TestTopicStreamDrain(t *testing.T) {
	r := newTopicRig(t, StreamLimits{})
	c := r.open(t, "")
	credit(t, c, 10)
	close(r.drain)
	if _, _, status := streamEnd(t, c); status != websocket.StatusGoingAway {
		t.Fatalf("closed with %d, want 1001", status)
	}
	r.awaitClosed(t)
}
