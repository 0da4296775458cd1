package api

import (
	"encoding/json"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/filter"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
)

// Fuzz targets of the topics feature's request parsers (issue 30): bodies and queries never
// panic, a refusal is invalid_argument naming the field or parameter, and what is accepted
// reads back the same when written out again.

// bodyLevel reports whether a refusal without a field is one of the whole body's.
func bodyLevel(ae *apierr.Error) bool {
	return ae.Field == "" && (ae.Message == "a JSON object is required" || strings.HasPrefix(ae.Message, "not ") ||
		strings.HasPrefix(ae.Message, "unexpected data"))
}

// checkRefusal fails unless err is invalid_argument naming one of fields, a filter's field
// (under "filter"), an unknown field by name, or the whole body.
func checkRefusal(t *testing.T, in string, err error, fields ...string) {
	t.Helper()
	ae := apierr.As(err)
	if ae == nil || ae.Code != apierr.InvalidArgument {
		t.Fatalf("%q: %v, want invalid_argument", in, err)
	}
	switch {
	case bodyLevel(ae), slices.Contains(fields, ae.Field), strings.HasPrefix(ae.Message, "unknown field"):
	case slices.Contains(fields, "filter") && (strings.HasPrefix(ae.Field, "filter.") || strings.HasPrefix(ae.Field, "filter[")):
	case strings.HasPrefix(ae.Field, filterQueryPrefix) && slices.Contains(fields, filterQueryPrefix):
	default:
		t.Fatalf("%q: refusal %v names %q, want one of %v", in, ae, ae.Field, fields)
	}
}

// sameFilter reports whether a and b filter alike (nil and empty alike).
func sameFilter(a, b *filter.Filter) bool {
	if a.Empty() || b.Empty() {
		return a.Empty() == b.Empty()
	}
	return maps.EqualFunc(a.Attributes, b.Attributes, slices.Equal)
}

func FuzzBindingRequest(f *testing.F) {
	for _, s := range []string{
		`{"topic":"orders"}`, `{"topic":"top_x","from":"earliest"}`, `{"topic":"t","from":"now","filter":null}`,
		`{"topic":"t","from":12}`, `{"topic":"t","from":"12"}`, `{"topic":"t","from":"2026-01-02T15:04:05.123Z"}`,
		`{"topic":"t","filter":{"attributes":{"c":["red","blue"]}},"from":1}`, `{"topic":"t","from":0}`,
		`{"topic":"t","from":"0"}`, `{"topic":"t","from":-1}`, `{"topic":"t","from":1.5}`, `{"topic":"t","from":9007199254740993}`,
		`{"topic":"t","from":"yesterday"}`, `{"topic":"t","from":true}`, `{"topic":""}`, `{"from":"now"}`, `{"topic":1}`,
		`{"topic":"t","x":1}`, `{"topic":"t","filter":{"attributes":{"c":[]}}}`, `[]`, ``, `{`, `{"topic":"t"} {}`,
		`{"topic":"t","from":"+1"}`, `{"topic":"t","from":"18446744073709551616"}`, `{"topic":"t","from":" 1"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ref, flt, from, err := parseNewBinding(data)
		if err != nil {
			checkRefusal(t, string(data), err, "topic", "filter", "from")
			return
		}
		if ref == "" || (from.seq > 0 && !from.at.IsZero()) {
			t.Fatalf("%q: accepted topic %q, from %+v", data, ref, from)
		}
		if flt != nil {
			again, perr := filter.Parse([]byte(filterJSON(flt)))
			if perr != nil || !sameFilter(flt, again) {
				t.Fatalf("%q: stored filter %s reads back as %v, %v", data, filterJSON(flt), again, perr)
			}
		}
		// The stored "from" (asked) read again starts the binding at the same place.
		asked, _ := json.Marshal(from.asked)
		_, _, again, err := parseNewBinding([]byte(`{"topic":"t","from":` + string(asked) + `}`))
		if err != nil || again.asked != from.asked || again.seq != from.seq || !again.at.Equal(from.at) {
			t.Fatalf("%q: from %+v reads back as %+v, %v", data, from, again, err)
		}
	})
}

// queryContext is an echo context of a GET with the raw query, read as the server reads it
// (pairs that do not parse are dropped).
func queryContext(raw string) echo.Context {
	req := &http.Request{Method: http.MethodGet, URL: &url.URL{Path: "/", RawQuery: raw}, Header: http.Header{}}
	return echo.New().NewContext(req, nil)
}

// boundAgain writes a parsed sequence or time out and reads it back.
func boundAgain(seq uint64, at time.Time) string {
	if seq > 0 {
		return strconv.FormatUint(seq, 10)
	}
	return at.Format(time.RFC3339Nano)
}

func FuzzLogQuery(f *testing.F) {
	for _, s := range []string{
		"", "from=1&to=10&limit=5", "from=2026-01-02T15:04:05Z&to=2026-01-02T16:00:00.5%2B02:00",
		"cursor=" + encodeLogCursor(7), "cursor=" + encodeLogCursor(0), "cursor=AQ", "cursor=%%%", "limit=0", "limit=1001",
		"limit=-1", "limit=1e3", "from=0", "from=-1", "from=yesterday", "to=18446744073709551616", "attribute.c=red&from=3",
		"attribute.=x", "attribute.c=%ff", "from=1&from=x", "to=2026-13-01T00:00:00Z",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		c := queryContext(raw)
		from, to, limit, cursor, flt, err := parseLogQuery(c)
		if err != nil {
			checkRefusal(t, raw, err, "limit", "cursor", "from", "to", filterQueryPrefix)
			return
		}
		if limit < 1 || limit > engine.MaxLogRead || (flt != nil && flt.Validate() != nil) {
			t.Fatalf("%q: accepted limit %d, filter %v", raw, limit, flt)
		}
		if c.QueryParam("cursor") != "" {
			if again, ok := decodeLogCursor(encodeLogCursor(cursor)); !ok || again != cursor || cursor < 1 {
				t.Fatalf("%q: cursor %d reads back as %d, %v", raw, cursor, again, ok)
			}
		}
		for name, b := range map[string]logBound{"from": from, "to": to} {
			if b.set != (c.QueryParam(name) != "") || (b.set && (b.seq == 0) == b.at.IsZero()) {
				t.Fatalf("%q: %s read as %+v", raw, name, b)
			}
			if !b.set {
				continue
			}
			again, err := parseLogBound(queryContext(name+"="+url.QueryEscape(boundAgain(b.seq, b.at))), name)
			if err != nil || again.seq != b.seq || !again.at.Equal(b.at) {
				t.Fatalf("%q: %s %+v reads back as %+v, %v", raw, name, b, again, err)
			}
		}
	})
}

func FuzzTopicStreamQuery(f *testing.F) {
	for _, s := range []string{
		"", "from=now", "from=earliest&maxMessages=1000&delta=true", "from=5&delta=false", "from=2026-01-02T15:04:05.999999999Z",
		"from=0", "from=-3", "from=later", "maxMessages=0", "maxMessages=1001", "maxMessages=x", "maxMessages=+5", "delta=1",
		"delta=TRUE", "from=1&from=2", "maxMessages=9223372036854775808",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		c := queryContext(raw)
		from, maxN, _, err := topicStreamParams(c)
		if err != nil {
			checkRefusal(t, raw, err, "from", "maxMessages", "delta")
			return
		}
		if maxN < 1 || maxN > maxTopicFrame || (from.seq > 0 && !from.at.IsZero()) {
			t.Fatalf("%q: accepted from %+v, maxMessages %d", raw, from, maxN)
		}
		if from.seq == 0 && from.at.IsZero() {
			if from.asked != "now" && from.asked != "earliest" {
				t.Fatalf("%q: from %+v", raw, from)
			}
			return
		}
		again, _, _, err := topicStreamParams(queryContext("from=" + url.QueryEscape(boundAgain(from.seq, from.at))))
		if err != nil || again.seq != from.seq || !again.at.Equal(from.at) {
			t.Fatalf("%q: from %+v reads back as %+v, %v", raw, from, again, err)
		}
	})
}

var replayFields = []string{"queue", "from", "to", "filter", "maxMessagesPerSecond", "dryRun"}

func FuzzReplayRequest(f *testing.F) {
	for _, s := range []string{
		`{"queue":"q","from":1}`, `{"queue":"q","from":"1","to":"20","maxMessagesPerSecond":50,"dryRun":true}`,
		`{"queue":"q","from":"2026-01-02T15:04:05Z","to":"2026-01-03T00:00:00+01:00","filter":{"attributes":{"c":["red"]}}}`,
		`{"queue":"q"}`, `{"from":1}`, `{"queue":"","from":1}`, `{"queue":"q","from":0}`, `{"queue":"q","from":"0"}`,
		`{"queue":"q","from":1.5}`, `{"queue":"q","from":1e3}`, `{"queue":"q","from":null}`, `{"queue":"q","from":1,"to":"x"}`,
		`{"queue":"q","from":1,"maxMessagesPerSecond":0}`, `{"queue":"q","from":1,"dryRun":"yes"}`, `{"queue":"q","from":1,"y":2}`,
		`{"queue":"q","from":1,"filter":[]}`, `[]`, ``, `{"queue":"q","from":[1]}`, `{"queue":"q","from":9007199254740992}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := parseReplayRequest(data)
		if err != nil {
			checkRefusal(t, string(data), err, replayFields...)
			return
		}
		if r.queue == "" || !r.from.set || r.rate < 1 || r.rate > maxMoveRate || (r.flt != nil && r.flt.Validate() != nil) {
			t.Fatalf("%q: accepted %+v", data, r)
		}
		body := map[string]any{"queue": r.queue, "from": boundAgain(r.from.seq, r.from.at),
			"maxMessagesPerSecond": r.rate, "dryRun": r.dryRun}
		if r.to.set {
			body["to"] = boundAgain(r.to.seq, r.to.at)
		}
		if r.flt != nil {
			body["filter"] = json.RawMessage(filterJSON(r.flt))
		}
		enc, _ := json.Marshal(body)
		again, err := parseReplayRequest(enc)
		if err != nil || again.queue != r.queue || again.from.seq != r.from.seq || !again.from.at.Equal(r.from.at) ||
			again.to != r.to && !(again.to.seq == r.to.seq && again.to.at.Equal(r.to.at)) ||
			again.rate != r.rate || again.dryRun != r.dryRun || !sameFilter(again.flt, r.flt) {
			t.Fatalf("%q: %+v reads back (%s) as %+v, %v", data, r, enc, again, err)
		}
	})
}

func FuzzTopicRequest(f *testing.F) {
	for _, s := range []string{
		`{"name":"orders"}`, `{"name":"orders.fifo","type":"fifo","retentionSeconds":86400}`, `{"name":"o","retentionSeconds":0}`,
		`{"name":"orders.fifo"}`, `{"name":"top_x"}`, `{"name":""}`, `{"name":"a b"}`, `{"type":"queue","name":"x"}`,
		`{"name":"x","retentionSeconds":-1}`, `{"name":"x","retentionSeconds":1e99}`, `{"name":"x","retentionSeconds":"1"}`,
		`{"retentionSeconds":60}`, `{"name":"x","z":1}`, `[]`, ``, `null`, `{"name":"x"}x`,
	} {
		f.Add([]byte(s))
	}
	s := New(Config{Registry: prometheus.NewRegistry()})
	project := ids.New()
	f.Fuzz(func(t *testing.T, data []byte) {
		if ret, ok, err := parseTopicPatch(data); err != nil {
			checkRefusal(t, string(data), err, "name", "type", "retentionSeconds")
		} else if ok && (ret < 0 || ret > meta.MaxTopicRetentionSeconds) {
			t.Fatalf("%q: patch accepted retention %d", data, ret)
		}
		tp, err := s.parseNewTopic(data, project)
		if err != nil {
			checkRefusal(t, string(data), err, "name", "type", "retentionSeconds")
			return
		}
		fifo := tp.Type == string(engine.FIFO)
		if (!fifo && tp.Type != string(engine.Standard)) || ValidateTopicName(tp.Name, fifo) != nil ||
			tp.RetentionSeconds < 0 || tp.RetentionSeconds > meta.MaxTopicRetentionSeconds || tp.ProjectID != project {
			t.Fatalf("%q: accepted %+v", data, tp)
		}
		enc, _ := json.Marshal(map[string]any{"name": tp.Name, "type": tp.Type, "retentionSeconds": tp.RetentionSeconds})
		again, err := s.parseNewTopic(enc, project)
		if err != nil || again.Name != tp.Name || again.Type != tp.Type || again.RetentionSeconds != tp.RetentionSeconds {
			t.Fatalf("%q: %+v reads back as %+v, %v", data, tp, again, err)
		}
	})
}
