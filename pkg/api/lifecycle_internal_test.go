package api

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/engine"
)

// testRules are a standard or fifo queue's send rules with the default retention (4 days)
// and maxMessageBytes (256 KiB).
func testRules(fifo bool) sendRules {
	return sendRules{fifo: fifo, retention: 345600 * time.Second, now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), maxBytes: 256 * 1024}
}

func TestParseLifecycleFields(t *testing.T) {
	cases := []struct {
		in    string
		fifo  bool
		field string // "" valid
	}{
		{`{"body":"x","key":"k","merge":"replace"}`, false, ""},
		{`{"body":"{\"a\":1}","key":"k","merge":"patch"}`, false, ""},
		{`{"body":"x","key":"k","merge":"patch"}`, false, "m.body"},
		{`{"body":"[1]","key":"k","merge":"patch"}`, false, "m.body"},
		{`{"body":"x","key":"k","merge":"other"}`, false, "m.merge"},
		{`{"body":"x","merge":"replace"}`, false, "m.merge"},
		{`{"body":"x","key":""}`, false, "m.key"},
		{`{"body":"x","key":"a b"}`, false, "m.key"},
		{`{"body":"x","key":1}`, false, "m.key"},
		{`{"body":"x","key":"` + string(make129()) + `"}`, false, "m.key"},
		{`{"body":"x","key":"k","groupId":"g"}`, true, "m.key"},
		{`{"body":"x","delaySeconds":345600}`, false, ""},
		{`{"body":"x","delaySeconds":345601}`, false, "m.delaySeconds"},
		{`{"body":"x","delaySeconds":901,"groupId":"g"}`, true, "m.delaySeconds"},
		{`{"body":"x","deliverAt":"2026-01-05T00:00:00Z"}`, false, ""},
		{`{"body":"x","deliverAt":"2025-01-01T00:00:00Z"}`, false, ""},
		{`{"body":"x","deliverAt":"2026-01-06T03:04:06Z"}`, false, "m.deliverAt"},
		{`{"body":"x","deliverAt":"tomorrow"}`, false, "m.deliverAt"},
		{`{"body":"x","deliverAt":"2026-01-05T00:00:00Z","delaySeconds":1}`, false, "m.deliverAt"},
		{`{"body":"x","deliverAt":"2026-01-05T00:00:00Z","groupId":"g"}`, true, "m.deliverAt"},
	}
	for _, c := range cases {
		_, err := parseMessage(json.RawMessage(c.in), false, "m", testRules(c.fifo))
		switch {
		case c.field == "" && err != nil:
			t.Errorf("%s: %v, want valid", c.in, err)
		case c.field != "" && (err == nil || err.Field != c.field):
			t.Errorf("%s: %v, want invalid_argument on %s", c.in, err, c.field)
		}
	}
	m, err := parseMessage(json.RawMessage(`{"body":"x","deliverAt":"2026-01-02T04:04:05.5+00:00","key":"k"}`), false, "m", testRules(false))
	if err != nil || m.Delay == nil || *m.Delay != time.Hour+500*time.Millisecond || m.Key != "k" || m.Merge != engine.MergeReplace {
		t.Fatalf("parsed %+v, %v", m, err)
	}
	m, err = parseMessage(json.RawMessage(`{"body":"x","deliverAt":"2020-01-01T00:00:00Z"}`), false, "m", testRules(false))
	if err != nil || m.Delay == nil || *m.Delay != 0 {
		t.Fatalf("a past deliverAt: %+v, %v; want a delay of 0", m, err)
	}
}

// TestPatchTooDeep: a "patch" body nesting past engine.MaxPatchDepth is refused naming the
// body and the bound (before: json.Valid's 10,000 levels, answered as "not a JSON object").
func TestPatchTooDeep(t *testing.T) {
	nested := func(depth int) string {
		return strings.Repeat(`{\"a\":`, depth-1) + `{}` + strings.Repeat(`}`, depth-1)
	}
	if _, err := parseMessage(json.RawMessage(`{"body":"`+nested(engine.MaxPatchDepth)+`","key":"k","merge":"patch"}`), false, "m", testRules(false)); err != nil {
		t.Fatalf("a patch %d deep: %v", engine.MaxPatchDepth, err)
	}
	_, err := parseMessage(json.RawMessage(`{"body":"`+nested(engine.MaxPatchDepth+1)+`","key":"k","merge":"patch"}`), false, "m", testRules(false))
	if err == nil || err.Code != apierr.InvalidArgument || err.Field != "m.body" || !strings.Contains(err.Message, "at most 100 deep") {
		t.Fatalf("a patch %d deep: %v, want invalid_argument on m.body naming the bound", engine.MaxPatchDepth+1, err)
	}
}

func make129() []byte {
	b := make([]byte, 129)
	for i := range b {
		b[i] = 'k'
	}
	return b
}
