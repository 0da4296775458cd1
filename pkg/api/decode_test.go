package api

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/queueshq/queues/pkg/apierr"
)

func TestParseString(t *testing.T) {
	ok := map[string]string{
		`"plain"`:                "plain",
		`"a\"b\\c\/d\n\t\r\b\f"`: "a\"b\\c/d\n\t\r\b\f",
		`"\u00e9\u4e2d"`:         "é中",
		`"\ud83d\ude00"`:         "😀",
		`"é😀"`:                   "é😀",
		`""`:                     "",
		`  "padded"  `:           "padded",
		`"\u0000"`:               "\x00",
	}
	for in, want := range ok {
		got, err := parseString(json.RawMessage(in), "f")
		if err != nil || got != want {
			t.Errorf("parseString(%s) = %q, %v; want %q", in, got, err, want)
		}
	}
	bad := []string{`"\ud800"`, `"\udc00"`, `"\ud800\u0041"`, `"\ud800x"`, "\"\xff\"", "\"a\xc3\"", `123`, `null`, `"\x"`, `"\u12"`}
	for _, in := range bad {
		if _, err := parseString(json.RawMessage(in), "messages[0].body"); err == nil || err.Field != "messages[0].body" || err.Code != apierr.InvalidArgument {
			t.Errorf("parseString(%q) = %v; want invalid_argument naming the field", in, err)
		}
	}
}

func TestParseMessageFields(t *testing.T) {
	cases := []struct {
		in    string
		fifo  bool
		field string
		code  apierr.Code
	}{
		{`{"body":""}`, false, "m.body", apierr.InvalidArgument},
		{`{}`, false, "m.body", apierr.InvalidArgument},
		{`{"body":"x","extra":1}`, false, "m.extra", apierr.InvalidArgument},
		{`{"body":"x","delaySeconds":345601}`, false, "m.delaySeconds", apierr.InvalidArgument},
		{`{"body":"x","delaySeconds":1.5}`, false, "m.delaySeconds", apierr.InvalidArgument},
		{`{"body":"x","delaySeconds":"1"}`, false, "m.delaySeconds", apierr.InvalidArgument},
		{`{"body":"x","groupId":"g"}`, false, "m.groupId", apierr.InvalidArgument},
		{`{"body":"x","dedupId":"d"}`, false, "m.dedupId", apierr.InvalidArgument},
		{`{"body":"x","barrier":1}`, false, "m.barrier", apierr.InvalidArgument},
		{`{"body":"x","barrier":null}`, false, "m.barrier", apierr.InvalidArgument},
		{`{"body":"x","groupId":"g","barrier":true}`, true, "m.barrier", apierr.InvalidArgument},
		{`{"body":"x"}`, true, "m.groupId", apierr.InvalidArgument},
		{`{"body":"x","groupId":"a b"}`, true, "m.groupId", apierr.InvalidArgument},
		{`{"body":"x","groupId":"g","delaySeconds":3}`, true, "m.delaySeconds", apierr.InvalidArgument},
		{`{"body":"x","attributes":{"bad name":"v"}}`, false, "m.attributes", apierr.InvalidArgument},
		{`{"body":"x","attributes":{"a":1}}`, false, "m.attributes.a", apierr.InvalidArgument},
		{`{"body":"x","attributes":{"a":"\udfff"}}`, false, "m.attributes.a", apierr.InvalidArgument},
		{`{"body":"x","attributes":[]}`, false, "m.attributes", apierr.InvalidArgument},
		{`{"body":"` + strings.Repeat("a", 256*1024+1) + `"}`, false, "m", apierr.PayloadTooLarge},
		{`{"body":"` + strings.Repeat("a", 256*1024-2) + `","attributes":{"k":"vv"}}`, false, "m", apierr.PayloadTooLarge},
	}
	for _, c := range cases {
		_, err := parseMessage(json.RawMessage(c.in), false, "m", testRules(c.fifo))
		if err == nil || err.Field != c.field || err.Code != c.code {
			in := c.in
			if len(in) > 80 {
				in = in[:80] + "…"
			}
			t.Errorf("parseMessage(%s, fifo=%v) = %v; want %s on %q", in, c.fifo, err, c.code, c.field)
		}
	}
	m, err := parseMessage(json.RawMessage(`{"body":"`+strings.Repeat("a", 256*1024-2)+`","attributes":{"k":"v"}}`), false, "m", testRules(false))
	if err != nil || len(m.Body) != 256*1024-2 {
		t.Fatalf("a message of exactly 256 KiB failed: %v", err)
	}
	// A queue's own maxMessageBytes: 1 MiB takes a 1 MiB message and refuses a byte more; a
	// 1,024-byte queue refuses 1,025.
	big, small := testRules(false), testRules(false)
	big.maxBytes, small.maxBytes = 1<<20, 1024
	for _, c := range []struct {
		r    sendRules
		body int
		ok   bool
	}{{big, 1 << 20, true}, {big, 1<<20 + 1, false}, {small, 1024, true}, {small, 1025, false}} {
		_, err := parseMessage(json.RawMessage(`{"body":"`+strings.Repeat("a", c.body)+`"}`), false, "m", c.r)
		if (err == nil) != c.ok || (err != nil && (err.Code != apierr.PayloadTooLarge || err.Field != "m")) {
			t.Errorf("a %d-byte body under maxMessageBytes %d: %v, want ok %v", c.body, c.r.maxBytes, err, c.ok)
		}
	}
	m, err = parseMessage(json.RawMessage(`{"body":"x","groupId":"g!~","dedupId":"d","delaySeconds":0}`), false, "m", testRules(true))
	if err != nil || m.GroupID != "g!~" || m.DedupID != "d" {
		t.Fatalf("valid fifo message: %+v, %v", m, err)
	}
	for in, want := range map[string]bool{`{"body":"x","barrier":true}`: true, `{"body":"x","barrier":false}`: false} {
		m, err = parseMessage(json.RawMessage(in), false, "m", testRules(false))
		if err != nil || m.Barrier != want {
			t.Fatalf("%s: %+v, %v", in, m, err)
		}
	}
	if m, err = parseMessage(json.RawMessage(`{"body":"x","groupId":"g","barrier":false}`), false, "m", testRules(true)); err != nil || m.Barrier {
		t.Fatalf("barrier false on fifo: %+v, %v", m, err)
	}
}

func FuzzParseString(f *testing.F) {
	for _, s := range []string{`"a"`, `"\ud83d\ude00"`, `"\ud800"`, "\"\xff\"", `"\u00"`, `"\\"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var std string
		stdErr := json.Unmarshal(raw, &std)
		got, err := parseString(raw, "f")
		if err != nil {
			if err.Code != apierr.InvalidArgument || err.Field != "f" {
				t.Fatalf("bad error %v", err)
			}
			return
		}
		if !utf8.ValidString(got) {
			t.Fatalf("accepted invalid UTF-8 result %q", got)
		}
		// Whatever we accept, the standard decoder reads the same way.
		if stdErr != nil || std != got {
			t.Fatalf("parseString(%q) = %q, encoding/json says %q (%v)", raw, got, std, stdErr)
		}
	})
}

func FuzzSendRequest(f *testing.F) {
	for _, s := range []string{
		`{"messages":[{"body":"hi","attributes":{"a":"b"},"delaySeconds":3}]}`,
		`{"messages":[]}`, `{"messages":[{"body":"x","groupId":"g","dedupId":"d"}]}`, `[]`, `{`, `{"messages":null}`,
	} {
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, data []byte, fifo bool) {
		o, err := parseObject(data, "", false, "messages")
		if err != nil {
			if err.Code != apierr.InvalidArgument {
				t.Fatalf("bad error %v", err)
			}
			return
		}
		items, _, err := o.array("messages", 1, 10)
		if err != nil {
			return
		}
		for _, raw := range items {
			m, err := parseMessage(raw, false, "messages[0]", testRules(fifo))
			if err != nil {
				if err.Code != apierr.InvalidArgument && err.Code != apierr.PayloadTooLarge {
					t.Fatalf("bad error %v", err)
				}
				if !strings.HasPrefix(err.Field, "messages[0]") {
					t.Fatalf("error names %q", err.Field)
				}
				continue
			}
			if m.Body == "" || !utf8.ValidString(m.Body) {
				t.Fatalf("accepted body %q", m.Body)
			}
		}
	})
}

func TestParseInteger(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"10", 10, true}, {" 7 ", 7, true}, {"-0", 0, true}, {"0", 0, true},
		{"1e1", 10, true}, {"2.0", 2, true}, {"20", 0, false}, {"-1", 0, false},
		{"1.5", 0, false}, {`"5"`, 0, false}, {"true", 0, false}, {"99999999999999999999", 0, false},
	} {
		got, err := parseInteger(json.RawMessage(c.in), "n", 0, 10)
		if (err == nil) != c.ok || c.ok && got != c.want {
			t.Errorf("parseInteger(%s) = %d, %v; want %d ok=%v", c.in, got, err, c.want, c.ok)
		}
	}
}
