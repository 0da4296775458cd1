package queuemetrics_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/queuemetrics"
	"github.com/queueshq/queues/services/queues/embedded"
)

type fixture struct {
	t        *testing.T
	n        *embedded.Node
	url      string
	attempts chan meta.Attempt
}

func open(t *testing.T) *fixture {
	attempts := make(chan meta.Attempt, 100)
	n, err := embedded.Open(context.Background(), embedded.Options{DataDir: t.TempDir(), SweepEvery: -1, BacklogTopN: -1,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Push:   embedded.PushOptions{AllowPrivate: true, Grace: time.Second, OnAttempt: func(_ ids.ID, a meta.Attempt) { attempts <- a }}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(n.Handler())
	t.Cleanup(func() { srv.Close(); _ = n.Close() })
	return &fixture{t: t, n: n, url: srv.URL, attempts: attempts}
}

func (f *fixture) do(method, path string, body any) {
	f.t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, f.url+path, bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+f.n.Token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	raw, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode >= 300 {
		f.t.Fatalf("%s %s: %d %s", method, path, res.StatusCode, raw)
	}
}

func (f *fixture) send(queue string, n int, delay int) {
	var msgs []any
	for range n {
		msgs = append(msgs, map[string]any{"body": "x", "delaySeconds": delay})
	}
	f.do("POST", "/v1/queues/"+queue+"/messages", map[string]any{"messages": msgs})
}

// gathered is one scrape: metric name -> label signature -> value.
type gathered map[string]map[string]float64

func scrape(t *testing.T, s *queuemetrics.Sampler) gathered {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(s)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := gathered{}
	for _, mf := range mfs {
		out[mf.GetName()] = map[string]float64{}
		for _, m := range mf.GetMetric() {
			out[mf.GetName()][labelsOf(m)] = m.GetGauge().GetValue()
		}
	}
	return out
}

func labelsOf(m *dto.Metric) string {
	var b bytes.Buffer
	for _, l := range m.GetLabel() {
		if l.GetName() == "project" {
			continue
		}
		b.WriteString(l.GetName() + "=" + l.GetValue() + ",")
	}
	return b.String()
}

func TestSampler(t *testing.T) {
	f := open(t)
	for _, q := range []string{"a", "b", "c", "d"} {
		f.do("POST", "/v1/queues", map[string]any{"name": q})
	}
	f.send("a", 5, 0)
	f.send("b", 2, 0)
	f.do("POST", "/v1/queues/b/receive", map[string]any{"maxMessages": 1})
	f.send("c", 1, 60)

	s := queuemetrics.New(queuemetrics.Config{Meta: f.n.Store, Subscriptions: f.n.Store, Attempts: f.n.Attempts, Engine: f.n.Engine, TopN: 2})
	if got := scrape(t, s); len(got) != 0 {
		t.Fatalf("before the first round: %v", got)
	}
	if err := s.Sample(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := scrape(t, s)
	want := map[string]float64{
		"queue=a,state=visible,": 5, "queue=a,state=inFlight,": 0, "queue=a,state=delayed,": 0,
		"queue=b,state=visible,": 1, "queue=b,state=inFlight,": 1, "queue=b,state=delayed,": 0,
	}
	if m := got["queues_backlog_messages"]; len(m) != len(want) {
		t.Fatalf("labelled series %v, want the top 2 queues only: %v", m, want)
	}
	for k, v := range want {
		if got["queues_backlog_messages"][k] != v {
			t.Errorf("queues_backlog_messages{%s} = %v, want %v", k, got["queues_backlog_messages"][k], v)
		}
	}
	for k, v := range map[string]float64{"state=visible,": 6, "state=inFlight,": 1, "state=delayed,": 1} {
		if got["queues_backlog_messages_all"][k] != v {
			t.Errorf("queues_backlog_messages_all{%s} = %v, want %v", k, got["queues_backlog_messages_all"][k], v)
		}
	}
	if got["queues_backlog_queues"][""] != 4 || got["queues_backlog_truncated"][""] != 0 {
		t.Errorf("queues %v truncated %v", got["queues_backlog_queues"], got["queues_backlog_truncated"])
	}
	if _, ok := got["queues_backlog_oldest_message_age_seconds"]["queue=a,"]; !ok {
		t.Errorf("no oldest age for a: %v", got["queues_backlog_oldest_message_age_seconds"])
	}

	// A subscription on a whose endpoint fails: push health shows it, a's backlog is unchanged
	// (its messages are in flight, waiting for their retry).
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusInternalServerError) }))
	defer hook.Close()
	f.do("POST", "/v1/queues/a/subscription", map[string]any{"endpoint": hook.URL})
	f.do("POST", "/v1/queues/c/subscription", map[string]any{"endpoint": hook.URL, "paused": true})
	select {
	case a := <-f.attempts:
		if a.Outcome != meta.AttemptFailed {
			t.Fatalf("attempt %+v", a)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no push attempt")
	}
	if err := s.Sample(context.Background()); err != nil {
		t.Fatal(err)
	}
	got = scrape(t, s)
	var total float64
	for _, st := range []string{"visible", "inFlight", "delayed"} {
		total += got["queues_backlog_messages"]["queue=a,state="+st+","]
	}
	if total != 5 {
		t.Errorf("a's backlog %v, want 5", total)
	}
	if got["queues_push_subscription_failing"]["queue=a,"] != 1 || got["queues_push_subscription_failure_ratio"]["queue=a,"] != 1 {
		t.Errorf("a's push health: failing %v ratio %v", got["queues_push_subscription_failing"], got["queues_push_subscription_failure_ratio"])
	}
	if _, ok := got["queues_push_subscription_seconds_since_success"]["queue=a,"]; ok {
		t.Error("a seconds since success, with no success")
	}
	if _, ok := got["queues_push_subscription_failing"]["queue=c,"]; ok {
		t.Error("c is not among the top queues but has a labelled series")
	}
	for k, v := range map[string]float64{"state=active,": 1, "state=paused,": 1, "state=failing,": 1} {
		if got["queues_push_subscriptions"][k] != v {
			t.Errorf("queues_push_subscriptions{%s} = %v, want %v", k, got["queues_push_subscriptions"][k], v)
		}
	}

	// A round stops at MaxQueues and says so.
	small := queuemetrics.New(queuemetrics.Config{Meta: f.n.Store, Engine: f.n.Engine, MaxQueues: 2})
	if err := small.Sample(context.Background()); err != nil {
		t.Fatal(err)
	}
	got = scrape(t, small)
	if got["queues_backlog_queues"][""] != 2 || got["queues_backlog_truncated"][""] != 1 {
		t.Errorf("MaxQueues 2: queues %v truncated %v", got["queues_backlog_queues"], got["queues_backlog_truncated"])
	}
	// Every exported name is listed in MetricNames (the dashboard check relies on it).
	for name := range scrape(t, s) {
		if !contains(queuemetrics.MetricNames, name) {
			t.Errorf("%s is exported but not in MetricNames", name)
		}
	}
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}
