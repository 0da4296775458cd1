package bench

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestNeighbourNeedsOperator: the phase refuses to start without the operator credential,
// before creating anything.
func TestNeighbourNeedsOperator(t *testing.T) {
	_, err := Run(context.Background(), Config{URL: "http://127.0.0.1:1", Phases: []string{PhaseNeighbour}})
	if err == nil || !strings.Contains(err.Error(), "operator credential") {
		t.Fatalf("err = %v", err)
	}
}

// TestErrKey: refusals are counted by status, code and quota limit.
func TestErrKey(t *testing.T) {
	for err, want := range map[error]string{
		&apiError{Status: 403, Code: "quota_exceeded", Limit: "maxStoredBytes"}: "403 quota_exceeded maxStoredBytes",
		&apiError{Status: 429, Code: "rate_limited"}:                            "429 rate_limited",
		errors.New("dial tcp: refused"):                                         "error: dial tcp: refused",
	} {
		if got := errKey(err); got != want {
			t.Errorf("errKey(%v) = %q, want %q", err, got, want)
		}
	}
	if got := quotaLimit([]byte(`{"error":{"code":"quota_exceeded","details":{"limit":"maxQueues"}}}`)); got != "maxQueues" {
		t.Errorf("quotaLimit = %q", got)
	}
}

const aChildEnv = "BENCH_TEST_A_CHILD"

// TestAInItsOwnProcess: A's load runs in a child process (here the test binary, as
// `queues bench -neighbour-a-child` in the command), takes its spec on stdin, stops when
// stdin closes and reports what it did: its requests, refusals by code, its parked polls
// and the CPU it used. The server refuses A's sends (429) and creates (403 maxQueues).
func TestAInItsOwnProcess(t *testing.T) {
	var sends, polls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.HasSuffix(r.URL.Path, "/messages"):
			sends.Add(1)
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write([]byte(`{"error":{"code":"rate_limited","message":"slow down"}}`))
		case strings.HasSuffix(r.URL.Path, "/receive"):
			polls.Add(1)
			_, _ = w.Write([]byte(`{"messages":[]}`))
		default: // queue creates
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`{"error":{"code":"quota_exceeded","message":"full","details":{"limit":"maxQueues"}}}`))
		}
	}))
	defer srv.Close()
	t.Setenv(aChildEnv, "1")
	spec := aSpec{URL: srv.URL, Token: "t", SendQ: "s", WaitQ: "w", ChurnPrefix: "c-", RequestsPerSecond: 40, MaxWaitingReceives: 2, ExtraPolls: 1}
	run, err := startAChild(t.Context(), []string{os.Args[0], "-test.run=^$"}, spec)
	if err != nil {
		t.Fatal(err)
	}
	// Each of A's senders sends its next request only after counting the last answer, so
	// once the server has seen 5 sends more than there are senders, A has counted 5 refusals.
	for sends.Load() < 5+aSenders || polls.Load() < 2 {
		pause(t.Context(), 10*time.Millisecond)
	}
	res, err := run.stop()
	if err != nil {
		t.Fatal(err)
	}
	if res.Refusals["429 rate_limited"] < 5 || res.Refusals["403 quota_exceeded maxQueues"] == 0 || res.Requests < 7 {
		t.Errorf("A's process reported %+v; the server answered %d sends, %d polls", res, sends.Load(), polls.Load())
	}
	if res.CPUSeconds <= 0 {
		t.Errorf("no CPU figure for A's process: %+v", res)
	}
}
