package api

import (
	"context"
	"errors"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/clock"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/filter"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
)

func TestParsePublishMessage(t *testing.T) {
	m, err := parsePublishMessage([]byte(`{"body":"{\"a\":1}","attributes":{"c":"red"},"key":"k1","merge":"patch"}`), false, "messages[0]", false)
	if err != nil || m.Body != `{"a":1}` || m.Attributes["c"] != "red" || m.Key != "k1" || m.Merge != engine.MergePatch || m.Delete {
		t.Fatalf("%+v, %v", m, err)
	}
	m, err = parsePublishMessage([]byte(`{"body":null,"key":"k1"}`), false, "messages[0]", false)
	if err != nil || !m.Delete || m.Body != "" {
		t.Fatalf("a keyed null body: %+v, %v", m, err)
	}
	m, err = parsePublishMessage([]byte(`{"body":"x","groupId":"g","dedupId":"d"}`), false, "messages[0]", true)
	if err != nil || m.GroupID != "g" || m.DedupID != "d" {
		t.Fatalf("fifo: %+v, %v", m, err)
	}
	big := strings.Repeat("x", engine.MaxMessageBytes+1)
	for _, c := range []struct {
		body  string
		fifo  bool
		field string
		code  apierr.Code
	}{
		{`{"body":null}`, false, "messages[3].body", apierr.InvalidArgument},
		{`{"body":""}`, false, "messages[3].body", apierr.InvalidArgument},
		{`{}`, false, "messages[3].body", apierr.InvalidArgument},
		{`{"body":"x","delaySeconds":5}`, false, "messages[3].delaySeconds", apierr.InvalidArgument},
		{`{"body":"x","priority":1}`, false, "messages[3].priority", apierr.InvalidArgument},
		{`{"body":"x","groupId":"g"}`, false, "messages[3].groupId", apierr.InvalidArgument},
		{`{"body":"x"}`, true, "messages[3].groupId", apierr.InvalidArgument},
		{`{"body":"x","groupId":"a b"}`, true, "messages[3].groupId", apierr.InvalidArgument},
		{`{"body":"x","merge":"replace"}`, false, "messages[3].merge", apierr.InvalidArgument},
		{`{"body":"x","key":"k","merge":"both"}`, false, "messages[3].merge", apierr.InvalidArgument},
		{`{"body":"[1]","key":"k","merge":"patch"}`, false, "messages[3].body", apierr.InvalidArgument},
		{`{"body":null,"key":"k","merge":"patch"}`, false, "messages[3].merge", apierr.InvalidArgument},
		{`{"body":"x","key":"a b"}`, false, "messages[3].key", apierr.InvalidArgument},
		{`{"body":"x","key":""}`, false, "messages[3].key", apierr.InvalidArgument},
		{`{"body":"x","attributes":{"bad name":"v"}}`, false, "messages[3].attributes", apierr.InvalidArgument},
		{`{"body":"\ud800"}`, false, "messages[3].body", apierr.InvalidArgument},
		{`{"body":"` + big + `"}`, false, "messages[3]", apierr.PayloadTooLarge},
	} {
		_, err := parsePublishMessage([]byte(c.body), false, "messages[3]", c.fifo)
		if err == nil || err.Field != c.field || err.Code != c.code {
			t.Errorf("%.60s (fifo %v): %v, want %s naming %s", c.body, c.fifo, err, c.code, c.field)
		}
	}
}

func TestParsePublishFailsOneMessage(t *testing.T) {
	msgs, index, failed, err := parsePublish([]byte(`{"messages":[{"body":"a"},{"body":"b","delaySeconds":1},{"body":"c"}]}`), false)
	if err != nil || len(msgs) != 2 || index[0] != 0 || index[1] != 2 || len(failed) != 1 || failed[0].Index != 1 ||
		failed[0].Error.Details["field"] != "messages[1].delaySeconds" {
		t.Fatalf("%+v %v %+v %v", msgs, index, failed, err)
	}
	for body, field := range map[string]string{
		`{}`:                                "messages",
		`{"messages":[]}`:                   "messages",
		`{"messages":{}}`:                   "messages",
		`{"messages":[{"body":"a"}],"x":1}`: "x",
		`{"messages":[` + strings.Repeat(`{"body":"a"},`, 10) + `{"body":"a"}]}`: "messages",
	} {
		if _, _, _, err := parsePublish([]byte(body), false); err == nil || err.Field != field {
			t.Errorf("%.50s: %v, want field %s", body, err, field)
		}
	}
}

func TestRefusedMessage(t *testing.T) {
	i, ae := refusedMessage(apierr.Invalid("messages[1].body", "not an object"), 3)
	if i != 1 || ae.Field != "body" || ae.WithPrefix("messages[4]").Field != "messages[4].body" {
		t.Fatalf("%d %v", i, ae)
	}
	i, ae = refusedMessage(&engine.Refusal{Err: engine.ErrPatchWaitingNotObject, Index: 2}, 3)
	if i != 2 || ae.Field != "body" || ae.Code != apierr.InvalidArgument || !strings.Contains(ae.Message, "state") {
		t.Fatalf("an engine's refusal of message 2: %d %v", i, ae)
	}
	for _, err := range []error{
		&engine.Refusal{Err: engine.ErrPatchNotObject, Index: 3},
		apierr.Invalid("messages[3].body", "out of range"),
		apierr.Invalid("body", "no index"),
		apierr.New(apierr.QuotaExceeded, "full"),
		errors.New("storage"),
	} {
		if i, _ := refusedMessage(err, 3); i != -1 {
			t.Errorf("%v: message %d, want none", err, i)
		}
	}
}

func TestParseNewTopic(t *testing.T) {
	s := &Server{cfg: Config{Clock: clock.Real{}}}
	p := ids.New()
	tp, err := s.parseNewTopic([]byte(`{"name":"orders"}`), p)
	if err != nil || tp.Type != "standard" || tp.RetentionSeconds != meta.DefaultTopicRetentionSeconds || tp.ProjectID != p {
		t.Fatalf("%+v, %v", tp, err)
	}
	tp, err = s.parseNewTopic([]byte(`{"name":"o.fifo","type":"fifo","retentionSeconds":0}`), p)
	if err != nil || tp.Type != "fifo" || tp.RetentionSeconds != 0 {
		t.Fatalf("%+v, %v", tp, err)
	}
	if _, err := s.parseNewTopic([]byte(`{"name":"`+ids.New().String()+`"}`), p); err != nil {
		t.Fatalf("a UUID-shaped name: %v", err)
	}
	for body, field := range map[string]string{
		`{}`:                                 "name",
		`{"name":""}`:                        "name",
		`{"name":"a b"}`:                     "name",
		`{"name":"top_x"}`:                   "name",
		`{"name":"o.fifo"}`:                  "name",
		`{"name":"o","type":"log"}`:          "type",
		`{"name":"o","retentionSeconds":-1}`: "retentionSeconds",
		`{"name":"o","retentionSeconds":1209601}`:   "retentionSeconds",
		`{"name":"o","retentionSeconds":"60"}`:      "retentionSeconds",
		`{"name":"o","visibilityTimeoutSeconds":1}`: "visibilityTimeoutSeconds",
	} {
		if _, err := s.parseNewTopic([]byte(body), p); err == nil || err.Field != field {
			t.Errorf("%s: %v, want field %s", body, err, field)
		}
	}
}

func TestParseNewBinding(t *testing.T) {
	ref, f, from, err := parseNewBinding([]byte(`{"topic":"orders","filter":{"attributes":{"c":["red","blue"]}},"from":"earliest"}`))
	if err != nil || ref != "orders" || filterJSON(f) != `{"attributes":{"c":["red","blue"]}}` || from.asked != "earliest" {
		t.Fatalf("%q %v %+v %v", ref, f, from, err)
	}
	for body, want := range map[string]bindingFrom{
		`{"topic":"o"}`:                               {asked: "now"},
		`{"topic":"o","from":null}`:                   {asked: "now"},
		`{"topic":"o","from":"now"}`:                  {asked: "now"},
		`{"topic":"o","from":42}`:                     {asked: "42", seq: 42},
		`{"topic":"o","from":"42"}`:                   {asked: "42", seq: 42},
		`{"topic":"o","from":"2026-01-02T03:04:05Z"}`: {asked: "2026-01-02T03:04:05Z"},
	} {
		_, _, from, err := parseNewBinding([]byte(body))
		if err != nil || from.asked != want.asked || from.seq != want.seq {
			t.Errorf("%s: %+v, %v", body, from, err)
		}
		if strings.Contains(body, "2026") && from.at.IsZero() {
			t.Errorf("%s: no time", body)
		}
	}
	for body, field := range map[string]string{
		`{}`:                                      "topic",
		`{"topic":""}`:                            "topic",
		`{"topic":1}`:                             "topic",
		`{"topic":"o","from":0}`:                  "from",
		`{"topic":"o","from":"0"}`:                "from",
		`{"topic":"o","from":1.5}`:                "from",
		`{"topic":"o","from":"later"}`:            "from",
		`{"topic":"o","from":true}`:               "from",
		`{"topic":"o","filter":{"attributes":1}}`: "filter.attributes",
		`{"topic":"o","filter":{"color":"red"}}`:  "filter.color",
		`{"topic":"o","queue":"q"}`:               "queue",
	} {
		_, _, _, err := parseNewBinding([]byte(body))
		if ae := apierr.As(err); err == nil || ae.Field != field || ae.Code != apierr.InvalidArgument {
			t.Errorf("%s: %v, want field %s", body, err, field)
		}
	}
}

func TestParseFilterPatch(t *testing.T) {
	f, err := parseFilterPatch([]byte(`{"filter":{"attributes":{"c":"red"}}}`))
	if err != nil || filterJSON(f) != `{"attributes":{"c":["red"]}}` {
		t.Fatalf("%v %v", f, err)
	}
	if f, err := parseFilterPatch([]byte(`{"filter":null}`)); err != nil || filterJSON(f) != "" {
		t.Fatalf("null: %v %v", f, err)
	}
	for body, field := range map[string]string{`{}`: "filter", `{"filter":[]}`: "filter", `{"from":1}`: "from"} {
		if _, err := parseFilterPatch([]byte(body)); apierr.As(err).Field != field {
			t.Errorf("%s: %v, want field %s", body, err, field)
		}
	}
}

func TestLogCursorRoundTrip(t *testing.T) {
	for _, n := range []uint64{1, 2, 1 << 40} {
		if got, ok := decodeLogCursor(encodeLogCursor(n)); !ok || got != n {
			t.Errorf("%d: %d %v", n, got, ok)
		}
	}
	for _, c := range []string{"", "x", encodeLogCursor(0), "AQAAAAAAAAAB" + "A", strings.Repeat("A", 12)} {
		if _, ok := decodeLogCursor(c); ok {
			t.Errorf("%q accepted", c)
		}
	}
}

func TestParseLogQuery(t *testing.T) {
	e := echo.New()
	ctx := func(q string) echo.Context {
		return e.NewContext(httptest.NewRequest("GET", "/v1/topics/t/messages?"+q, nil), httptest.NewRecorder())
	}
	from, to, limit, cursor, flt, err := parseLogQuery(ctx("from=5&to=2026-01-02T00:00:00Z&limit=7&attribute.c=red&cursor=" + encodeLogCursor(9)))
	if err != nil || from.seq != 5 || to.at.IsZero() || limit != 7 || cursor != 9 || flt.Empty() {
		t.Fatalf("%+v %+v %d %d %v %v", from, to, limit, cursor, flt, err)
	}
	if _, _, limit, _, _, err := parseLogQuery(ctx("")); err != nil || limit != defaultLogLimit {
		t.Fatalf("defaults: %d %v", limit, err)
	}
	for q, field := range map[string]string{
		"from=0": "from", "from=soon": "from", "to=-1": "to", "limit=0": "limit", "limit=1001": "limit",
		"cursor=zz": "cursor", "attribute.=x": "attribute.",
	} {
		if _, _, _, _, _, err := parseLogQuery(ctx(q)); apierr.As(err).Field != field {
			t.Errorf("%s: %v, want field %s", q, err, field)
		}
	}
}

func TestBindingOutLag(t *testing.T) {
	b := meta.Binding{ID: ids.New(), StartSequence: 5, From: "5"}
	out := bindingOut(b, "q", "t", nil, 9)
	if out.Sequence != 4 || out.Lag != 5 || string(out.Filter) != "null" || out.LastFailure != nil {
		t.Fatalf("%+v", out)
	}
	out = bindingOut(b, "q", "t", &engine.Binding{Sequence: 9, Copied: 3, Failed: 1, LastError: "full"}, 9)
	if out.Sequence != 9 || out.Lag != 0 || out.Copied != 3 || out.LastFailure == nil || out.LastFailure.Reason != "full" {
		t.Fatalf("%+v", out)
	}
}

// FuzzPublishRequest drives a publish's decoder: a request is refused whole with
// invalid_argument, or each message is published or failed with a code and a field inside
// messages[i]; a published one has a non-empty valid body or deletes a key's state.
func FuzzPublishRequest(f *testing.F) {
	for _, s := range []string{
		`{"messages":[{"body":"hi","attributes":{"a":"b"},"key":"k","merge":"patch"}]}`,
		`{"messages":[{"body":null,"key":"k"},{"body":"x","groupId":"g","dedupId":"d"}]}`,
		`{"messages":[{"body":"{\"a\":1}","key":"k","merge":"patch","delaySeconds":1}]}`, `[]`, `{`, `{"messages":null}`,
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, fifo bool) {
		msgs, index, failed, err := parsePublish(data, fifo)
		if err != nil {
			if err.Code != apierr.InvalidArgument {
				t.Fatalf("bad error %v", err)
			}
			return
		}
		if len(msgs) != len(index) || len(msgs)+len(failed) < 1 || len(msgs)+len(failed) > engine.MaxBatch {
			t.Fatalf("%d published, %d indexes, %d failed", len(msgs), len(index), len(failed))
		}
		for _, fm := range failed {
			field, _ := fm.Error.Details["field"].(string)
			if (fm.Error.Code != apierr.InvalidArgument && fm.Error.Code != apierr.PayloadTooLarge) ||
				!strings.HasPrefix(field, "messages["+strconv.Itoa(fm.Index)+"]") {
				t.Fatalf("message %d failed with %+v", fm.Index, fm.Error)
			}
		}
		for _, m := range msgs {
			if m.Delete != (m.Body == "") || (m.Delete && m.Key == "") || !utf8.ValidString(m.Body) || (fifo != (m.GroupID != "")) {
				t.Fatalf("accepted %+v", m)
			}
		}
	})
}

// logOnly is an engine.Topics whose log holds entries 1..n, each with a body of size bytes
// and attribute c "red" on every 7th; reads counts the entries ReadLog returned.
type logOnly struct {
	engine.Topics
	n, size int
	reads   int
}

func (l *logOnly) ReadLog(_ context.Context, _ engine.Topic, from uint64, limit int) ([]engine.LogEntry, error) {
	var out []engine.LogEntry
	var bytes int
	for seq := from; seq <= uint64(l.n) && len(out) < min(limit, engine.MaxLogRead); seq++ {
		e := engine.LogEntry{Sequence: seq, Body: strings.Repeat("x", l.size)}
		if seq%7 == 0 {
			e.Attributes = map[string]string{"c": "red"}
		}
		out = append(out, e)
		if bytes += l.size; bytes >= engine.MaxLogReadBytes {
			break
		}
	}
	l.reads += len(out)
	return out, nil
}

// TestScanLogBounds: a page examines at most MaxLogRead entries and MaxLogReadBytes, ending
// with a cursor there; a range's end ends it without one.
func TestScanLogBounds(t *testing.T) {
	red := &filter.Filter{Attributes: map[string][]string{"c": {"red"}}}
	for _, c := range []struct {
		name    string
		n, size int
		r       logRange
		got     int
		next    uint64
		maxRead int
	}{
		{"plain page", 50, 10, logRange{from: 1, to: 50, limit: 20}, 20, 21, 20},
		{"range end", 50, 10, logRange{from: 41, to: 45, limit: 20}, 5, 0, 10},
		{"log end", 50, 10, logRange{from: 41, to: 100, limit: 20}, 10, 0, 10},
		{"filter, entry cap", 5000, 10, logRange{from: 1, to: 5000, limit: 1000, flt: red}, 1000 / 7, 1001, 1000},
		{"filter, all found", 100, 10, logRange{from: 1, to: 100, limit: 1000, flt: red}, 100 / 7, 0, 100},
		{"byte cap", 100, 1 << 20, logRange{from: 1, to: 100, limit: 100}, 4, 5, 4},
	} {
		l := &logOnly{n: c.n, size: c.size}
		s := &Server{cfg: Config{TopicEngine: l}}
		out, next, err := s.scanLog(context.Background(), engine.Topic{}, c.r)
		if err != nil || len(out) != c.got || next != c.next || l.reads > c.maxRead {
			t.Errorf("%s: %d entries, next %d, %d read, %v; want %d, %d, at most %d", c.name, len(out), next, l.reads, err, c.got, c.next, c.maxRead)
		}
	}
}
