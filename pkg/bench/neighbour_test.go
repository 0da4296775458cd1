package bench

import (
	"context"
	"errors"
	"strings"
	"testing"
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
