package attacks

import (
	"strings"
	"testing"
)

// X40: names with Unicode, control characters, 10 KB, or Redis hash-tag braces are 400 naming
// the field; a fifo group id may hold braces (printable ASCII) but they never lead a Redis key,
// so they cannot choose its hash slot.
func TestHostileNames(t *testing.T) {
	_, tok := project(t)
	for _, name := range []string{"caf\u00e9", "a\u0000b", "a\nb", "\u202eevil", strings.Repeat("q", 10_000), "{q:x}", "a}b", "a b", "", "../x"} {
		call(t, "POST", "/v1/queues", tok, map[string]any{"name": name}).is(t, 400, "invalid_argument", "name")
	}
	call(t, "POST", "/v1/queues", tok, map[string]any{"name": "x40", "type": "fifo"}).is(t, 201, "", "")
	send := func(m map[string]any) answer {
		return call(t, "POST", "/v1/queues/x40/messages", tok, map[string]any{"messages": []any{m}})
	}
	for field, m := range map[string]map[string]any{
		"messages[0].groupId":    {"body": "x", "groupId": "g\u00e9"},
		"messages[0].dedupId":    {"body": "x", "groupId": "g", "dedupId": strings.Repeat("d", 10_000)},
		"messages[0].attributes": {"body": "x", "groupId": "g", "attributes": map[string]any{"{tag}": "v"}},
		"messages[0].body":       {"body": "", "groupId": "g"},
	} {
		a := send(m)
		a.is(t, 200, "", "")
		if !strings.Contains(string(a.raw), `"invalid_argument"`) || !strings.Contains(string(a.raw), `"field":"`+field) {
			t.Errorf("%s: %s", field, a.raw)
		}
	}
	send(map[string]any{"body": "x", "groupId": "}{slot-evil}"}).is(t, 200, "", "")
	ctx := t.Context()
	keys, err := e.rdb.Keys(ctx, "*slot-evil*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if !strings.HasPrefix(k, "{q:") {
			t.Errorf("a key holding the group id does not start with the queue's hash tag: %q", k)
		}
	}
}

// X41: bodies that are not JSON, have duplicate keys, huge numbers, deep nesting, or unknown
// fields are 400 (never 500), with nothing stored.
func TestHostileJSON(t *testing.T) {
	_, tok := project(t)
	call(t, "POST", "/v1/queues", tok, map[string]any{"name": "x41"}).is(t, 201, "", "")
	deep := strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000)
	for name, body := range map[string]string{
		"not JSON":        `{"messages":`,
		"trailing data":   `{"messages":[{"body":"x"}]} {}`,
		"array":           `[{"body":"x"}]`,
		"deep nesting":    `{"messages":` + deep + `}`,
		"deep in a body":  `{"messages":[{"body":` + deep + `}]}`,
		"huge number":     `{"messages":[{"body":"x","delaySeconds":1e400}]}`,
		"huge integer":    `{"messages":[{"body":"x","delaySeconds":` + strings.Repeat("9", 5000) + `}]}`,
		"unknown field":   `{"messages":[{"body":"x"}],"extra":1}`,
		"invalid UTF-8":   "{\"messages\":[{\"body\":\"\xff\xfe\"}]}",
		"lone surrogate":  `{"messages":[{"body":"\ud800"}]}`,
		"NUL in key":      "{\"mess\u0000ages\":[]}",
		"null messages":   `{"messages":null}`,
		"string messages": `{"messages":"x"}`,
	} {
		a := call(t, "POST", "/v1/queues/x41/messages", tok, body)
		if a.status >= 500 || a.status < 400 && !strings.Contains(string(a.raw), `"failed":[{`) {
			t.Errorf("%s: %d %.200s; want a 4xx (or the message failed)", name, a.status, a.raw)
		}
	}
	// Duplicate keys: one meaning only — the request is refused or one value wins, never two
	// messages or a 500.
	a := call(t, "POST", "/v1/queues/x41/messages", tok, `{"messages":[{"body":"a"}],"messages":[{"body":"b"},{"body":"c"}]}`)
	if a.status >= 500 {
		t.Errorf("duplicate keys: %d %s", a.status, a.raw)
	}
	c := call(t, "GET", "/v1/queues/x41", tok, nil).body["counts"].(map[string]any)
	if v := c["visible"].(float64); v > 2 {
		t.Errorf("duplicate keys stored %v messages", v)
	}
}
