package api

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/redis/go-redis/v9"

	"github.com/queueshq/queues/pkg/auth"
	"github.com/queueshq/queues/pkg/clock"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/engine/embeddedengine"
	"github.com/queueshq/queues/pkg/engine/redisengine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/meta/memmeta"
	"github.com/queueshq/queues/pkg/metacache"
	"github.com/queueshq/queues/pkg/receipt"
	"github.com/queueshq/queues/pkg/signingkeys"
	"github.com/queueshq/queues/pkg/testservers"
)

// topicRig is a stream rig (streamguard_test.go) whose server keeps topics on the embedded
// engine, with one project, its token and a topic "t" (retention 1 h).
type topicRig struct {
	*streamRig
	eng topicEngine
	top meta.Topic
	tok meta.Token
	jwt string
	// drain is the server's Draining: closing it shuts the streams down.
	drain chan struct{}
}

// topicEngine is an engine with topics (both engines are).
type topicEngine interface {
	engine.Engine
	engine.Topics
}

// engineMaker opens a topic engine on clk for one test.
type engineMaker func(t *testing.T, clk clock.Clock) topicEngine

func embeddedTopics(t *testing.T, clk clock.Clock) topicEngine {
	eng, err := embeddedengine.Open(filepath.Join(t.TempDir(), "s.db"), clk, embeddedengine.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	return eng
}

func redisTopics(t *testing.T, clk clock.Clock) topicEngine {
	rdb := redis.NewClient(&redis.Options{Addr: testservers.Redis(t)})
	eng, err := redisengine.New(rdb, clk, redisengine.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close(); rdb.Close() })
	return eng
}

// onEngines runs test on the embedded engine and on Redis.
func onEngines(t *testing.T, test func(t *testing.T, mk engineMaker)) {
	t.Run("embedded", func(t *testing.T) { test(t, embeddedTopics) })
	t.Run("redis", func(t *testing.T) { test(t, redisTopics) })
}

func newTopicRig(t *testing.T, limits StreamLimits) *topicRig {
	return newTopicRigOn(t, limits, embeddedTopics)
}

func newTopicRigOn(t *testing.T, limits StreamLimits, mk engineMaker) *topicRig {
	t.Helper()
	clk := clock.NewFake(time.Now())
	eng := mk(t, clk)
	ring, err := signingkeys.Generate("k")
	if err != nil {
		t.Fatal(err)
	}
	store := memmeta.New()
	cache := metacache.New(store, &metacache.LocalBus{}, clk, 0)
	t.Cleanup(cache.Close)
	r := &streamRig{clk: clk, cache: cache, store: store, auth: auth.New(ring, "op", clk.Now),
		ticks: make(chan time.Time), checked: make(chan struct{}, 16)}
	r.down = &downMeta{Cache: cache}
	drain := make(chan struct{})
	r.s = New(Config{Engine: hookEngine{eng, r}, Meta: r.down, Auth: r.auth, Receipts: receipt.NewSigner(ring), Tenancy: store,
		Clock: clk, Streams: limits, Topics: store, TopicEngine: eng, Draining: drain})
	r.s.streamTicks = func() <-chan time.Time { return r.ticks }
	r.s.streamChecked = func() { r.checked <- struct{}{} }
	r.srv = httptest.NewServer(r.s.Handler())
	t.Cleanup(r.srv.Close)
	tr := &topicRig{streamRig: r, eng: eng, drain: drain}
	q, tok, jwt := r.project(t, nil)
	tr.tok, tr.jwt = tok, jwt
	now := clk.Now().UTC().Truncate(time.Millisecond)
	tr.top = meta.Topic{ID: ids.New(), ProjectID: q.ProjectID, Name: "t", Type: "standard", RetentionSeconds: 3600, CreatedAt: now, UpdatedAt: now}
	if err := r.s.CreateTopic(t.Context(), tr.top); err != nil {
		t.Fatal(err)
	}
	return tr
}

// publish appends messages to topic t straight through the engine (which signals watchers
// as the API's publish does).
func (r *topicRig) publish(t *testing.T, msgs ...engine.PublishMessage) {
	t.Helper()
	if _, err := r.eng.Publish(t.Context(), engineTopic(r.top), msgs); err != nil {
		t.Fatal(err)
	}
}

func bodies(bs ...string) []engine.PublishMessage {
	out := make([]engine.PublishMessage, len(bs))
	for i, b := range bs {
		out[i] = engine.PublishMessage{Message: engine.Message{Body: b}}
	}
	return out
}

func (r *topicRig) streamURL(query string) string {
	return "ws" + strings.TrimPrefix(r.srv.URL, "http") + "/v1/topics/t/stream?" + query
}

// open dials topic t's stream with query.
func (r *topicRig) open(t *testing.T, query string) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, r.streamURL(query), &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + r.jwt}}})
	if err != nil {
		t.Fatalf("dial %s: %v (%v)", query, err, resp)
	}
	c.SetReadLimit(32 << 20)
	t.Cleanup(func() { _ = c.CloseNow() })
	return c
}

// topicFrame is any frame of the topic stream.
type topicFrame struct {
	Messages []struct {
		Sequence   uint64            `json:"sequence"`
		MessageID  string            `json:"messageId"`
		Body       *string           `json:"body"`
		Attributes map[string]string `json:"attributes"`
		Key        string            `json:"key"`
		Delta      bool              `json:"delta"`
		Deleted    bool              `json:"deleted"`
	} `json:"messages"`
	Gap *struct {
		From          *uint64 `json:"from"`
		FirstSequence uint64  `json:"firstSequence"`
	} `json:"gap"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func readFrame(t *testing.T, c *websocket.Conn) topicFrame {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, data, err := c.Read(ctx)
	if err != nil {
		t.Fatalf("reading a frame: %v", err)
	}
	var f topicFrame
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatalf("frame %s: %v", data, err)
	}
	if f.Error != nil {
		t.Fatalf("the stream ended: %s", data)
	}
	return f
}

// sequences reads message frames until n messages came and returns their sequences; a frame
// carrying more than n in all fails the test (credit is the bound).
func sequences(t *testing.T, c *websocket.Conn, n int) []uint64 {
	t.Helper()
	var out []uint64
	for len(out) < n {
		f := readFrame(t, c)
		if f.Gap != nil {
			t.Fatalf("unexpected gap frame %+v", *f.Gap)
		}
		for _, m := range f.Messages {
			out = append(out, m.Sequence)
		}
	}
	if len(out) > n {
		t.Fatalf("got %v, more than the %d granted", out, n)
	}
	return out
}

func seqRange(from, to uint64) []uint64 {
	var out []uint64
	for s := from; s <= to; s++ {
		out = append(out, s)
	}
	return out
}

func sameSeqs(a, b []uint64) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

// TestTopicStreamBookmark: a stream from earliest delivers every entry in order with its
// sequence, never beyond its credit (two frames of maxMessages=2 for credit 3, then nothing
// until more credit: the next frame is the one credit 1 allows); a subscriber that
// reconnects with from = last+1 gets the rest — live ones included, awaited on the engine's
// watch — with no gap and no repeat.
func TestTopicStreamBookmark(t *testing.T) { onEngines(t, testTopicStreamBookmark) }

func testTopicStreamBookmark(t *testing.T, mk engineMaker) {
	r := newTopicRigOn(t, StreamLimits{}, mk)
	r.publish(t, bodies("m1", "m2", "m3", "m4", "m5")...)
	c := r.open(t, "from=earliest&maxMessages=2")
	credit(t, c, 3)
	got := sequences(t, c, 3)
	if !sameSeqs(got, seqRange(1, 3)) {
		t.Fatalf("first stream delivered %v, want 1..3", got)
	}
	credit(t, c, 1)
	if f := readFrame(t, c); len(f.Messages) != 1 || f.Messages[0].Sequence != 4 || *f.Messages[0].Body != "m4" {
		t.Fatalf("after credit 1: %+v, want sequence 4 alone", f)
	}
	_ = c.Close(websocket.StatusNormalClosure, "")
	last := uint64(4)

	r.publish(t, bodies("m6", "m7")...)
	c = r.open(t, fmt.Sprintf("from=%d", last+1))
	credit(t, c, 100)
	if got := sequences(t, c, 3); !sameSeqs(got, seqRange(5, 7)) {
		t.Fatalf("after reconnecting from %d: %v, want 5..7", last+1, got)
	}
	r.publish(t, bodies("m8")...) // live: the stream waits on the engine's watch for it
	if got := sequences(t, c, 1); !sameSeqs(got, []uint64{8}) {
		t.Fatalf("live: %v, want 8", got)
	}

	// from=now (the default) starts after the last entry.
	n := r.open(t, "")
	credit(t, n, 10)
	r.publish(t, bodies("m9")...)
	if got := sequences(t, n, 1); !sameSeqs(got, []uint64{9}) {
		t.Fatalf("from now: %v, want 9", got)
	}
}

// TestTopicStreamGap: entries trimmed before the stream reads them are announced by a gap
// frame, first, before what the log still holds; a time older than the log holds is a gap
// of unknown start (from null). Before the gap frame the subscriber could not tell.
func TestTopicStreamGap(t *testing.T) { onEngines(t, testTopicStreamGap) }

func testTopicStreamGap(t *testing.T, mk engineMaker) {
	r := newTopicRigOn(t, StreamLimits{}, mk)
	start := r.clk.Now()
	r.publish(t, bodies("old1", "old2", "old3")...)
	r.clk.Advance(2 * time.Hour)
	if err := r.eng.Trim(t.Context(), engineTopic(r.top)); err != nil {
		t.Fatal(err)
	}
	r.publish(t, bodies("new4", "new5")...)

	c := r.open(t, "from=2")
	f := readFrame(t, c) // no credit needed: the gap is the first frame
	if f.Gap == nil || f.Gap.From == nil || *f.Gap.From != 2 || f.Gap.FirstSequence != 4 {
		t.Fatalf("first frame %+v, want gap from 2, firstSequence 4", f)
	}
	credit(t, c, 10)
	if got := sequences(t, c, 2); !sameSeqs(got, []uint64{4, 5}) {
		t.Fatalf("after the gap: %v, want 4, 5", got)
	}

	c = r.open(t, "from="+start.UTC().Format(time.RFC3339Nano))
	if f := readFrame(t, c); f.Gap == nil || f.Gap.From != nil || f.Gap.FirstSequence != 4 {
		t.Fatalf("from a trimmed time: %+v, want gap from null, firstSequence 4", f)
	}

	// Trimmed while the stream runs: a stream at 6 (caught up) falls behind retention.
	c = r.open(t, "")
	r.publish(t, bodies("m6")...)
	r.clk.Advance(2 * time.Hour)
	if err := r.eng.Trim(t.Context(), engineTopic(r.top)); err != nil {
		t.Fatal(err)
	}
	r.publish(t, bodies("m7")...)
	credit(t, c, 10)
	if f := readFrame(t, c); f.Gap == nil || *f.Gap.From != 6 || f.Gap.FirstSequence != 7 {
		t.Fatalf("mid-stream: %+v, want gap from 6, firstSequence 7", f)
	}
	if got := sequences(t, c, 1); !sameSeqs(got, []uint64{7}) {
		t.Fatalf("after the mid-stream gap: %v, want 7", got)
	}
}

// TestTopicStreamFilter: attribute.<name> selects entries as a log read's filter does, and
// the credit counts delivered entries only.
func TestTopicStreamFilter(t *testing.T) { onEngines(t, testTopicStreamFilter) }

func testTopicStreamFilter(t *testing.T, mk engineMaker) {
	r := newTopicRigOn(t, StreamLimits{}, mk)
	var msgs []engine.PublishMessage
	for i := range 30 {
		color := []string{"red", "blue", "green"}[i%3]
		msgs = append(msgs, engine.PublishMessage{Message: engine.Message{Body: fmt.Sprint(i + 1), Attributes: map[string]string{"color": color}}})
	}
	for i := 0; i < len(msgs); i += 10 {
		r.publish(t, msgs[i:i+10]...)
	}
	c := r.open(t, "from=earliest&attribute.color=red&attribute.color=green")
	credit(t, c, 5)
	got := sequences(t, c, 5)
	if !sameSeqs(got, []uint64{1, 3, 4, 6, 7}) {
		t.Fatalf("filtered: %v, want 1 3 4 6 7", got)
	}
	credit(t, c, 15)
	if got := sequences(t, c, 15); got[0] != 9 || got[14] != 30 {
		t.Fatalf("filtered, the rest: %v", got)
	}
}

// TestTopicStreamReconnectUnderPublish: while a publisher appends 300 entries, a subscriber
// takes some, drops its connection with frames in flight, and reconnects from its bookmark
// (last+1) twice: it sees every sequence exactly once, in order.
func TestTopicStreamReconnectUnderPublish(t *testing.T) {
	onEngines(t, testReconnectUnderPublish)
}

func testReconnectUnderPublish(t *testing.T, mk engineMaker) {
	r := newTopicRigOn(t, StreamLimits{}, mk)
	const total = 300
	published := make(chan error, 1)
	go func() {
		for i := 0; i < total; i += 10 {
			msgs := make([]engine.PublishMessage, 10)
			for j := range msgs {
				msgs[j] = engine.PublishMessage{Message: engine.Message{Body: fmt.Sprint(i + j + 1)}}
			}
			if _, err := r.eng.Publish(context.Background(), engineTopic(r.top), msgs); err != nil {
				published <- err
				return
			}
		}
		published <- nil
	}()
	var got []uint64
	from := "earliest"
	for _, stopAt := range []int{60, 170, total} {
		c := r.open(t, "maxMessages=7&from="+from)
		credit(t, c, maxStreamCredit)
		for len(got) < stopAt {
			f := readFrame(t, c)
			for _, m := range f.Messages {
				if len(got) < stopAt {
					got = append(got, m.Sequence)
				}
			}
		}
		_ = c.CloseNow() // frames in flight are lost with the connection
		from = fmt.Sprint(got[len(got)-1] + 1)
	}
	if err := <-published; err != nil {
		t.Fatal(err)
	}
	if !sameSeqs(got, seqRange(1, total)) {
		t.Fatalf("across the reconnects: %v", got)
	}
}
