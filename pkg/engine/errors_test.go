package engine_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/engine"
)

// A store failure keeps its cause for logs and errors.Is, and out of the message a client
// may read.
func TestStoreErrorsKeepCausesOutOfMessages(t *testing.T) {
	t.Parallel()
	cause := errors.New("dial tcp 10.1.2.3:6379: connection refused")
	for _, tc := range []struct {
		err  error
		code apierr.Code
	}{{engine.StoreUnavailable("ack", cause), apierr.Unavailable}, {engine.StoreFault("ack", cause), apierr.Internal}} {
		ae := apierr.As(tc.err)
		if ae.Code != tc.code || strings.Contains(ae.Message, "10.1.2.3") {
			t.Errorf("%v: code %s, message %q", tc.err, ae.Code, ae.Message)
		}
		if !errors.Is(tc.err, cause) || !strings.Contains(tc.err.Error(), "10.1.2.3") {
			t.Errorf("%v: the cause is lost", tc.err)
		}
	}
}

// TestCodedRefusals: the refusals callers tell apart by code read as it (wrapped or not),
// match errors.Is on their sentinel and on an *apierr.Error of the code, are refusals, and
// an *apierr.Error of the same code is not them; failures are no refusals.
func TestCodedRefusals(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		err, sentinel error
		code          apierr.Code
	}{
		{engine.ErrStale, engine.ErrStale, apierr.ReceiptHandleStale},
		{engine.ErrNoMessage, engine.ErrNoMessage, apierr.NotFound},
		{engine.ErrMessageInFlight, engine.ErrMessageInFlight, apierr.MessageInFlight},
		{engine.NoState("k"), engine.ErrNoState, apierr.NotFound},
		{&engine.Refusal{Err: engine.ErrNoBinding}, engine.ErrNoBinding, apierr.NotFound},
		{&engine.Refusal{Err: engine.ErrPurgeTooSoon, Wait: time.Second}, engine.ErrPurgeTooSoon, apierr.PurgeTooSoon},
		{engine.ErrVisibilityLimit, engine.ErrVisibilityLimit, apierr.VisibilityLimitExceeded},
	} {
		for _, err := range []error{c.err, fmt.Errorf("settle: %w", c.err)} {
			if apierr.CodeOf(err) != c.code || !errors.Is(err, c.sentinel) || !errors.Is(err, &apierr.Error{Code: c.code}) || !engine.IsRefusal(err) {
				t.Errorf("%v: code %s, is %v, refusal %v", err, apierr.CodeOf(err), errors.Is(err, c.sentinel), engine.IsRefusal(err))
			}
		}
		if errors.Is(apierr.New(c.code, "other"), c.sentinel) {
			t.Errorf("an *apierr.Error of code %s reads as %v", c.code, c.sentinel)
		}
	}
	if apierr.CodeOf(engine.ErrBadCursor) != apierr.Internal {
		t.Errorf("an uncoded refusal reads as %s", apierr.CodeOf(engine.ErrBadCursor))
	}
	if engine.IsRefusal(engine.StoreUnavailable("ack", nil)) || !errors.Is(engine.StoreUnavailable("ack", nil), engine.ErrUnavailable) {
		t.Errorf("a failure reads as a refusal, or not as ErrUnavailable")
	}
}

// TestFigureRefusals: CheckSize, the byte quota and a taken dedup id are refusals that carry
// their figures, found with errors.As and matched by their sentinel through any wrapping (a
// *engine.Refusal naming the message included), and with no API code or client text: the
// service words them.
func TestFigureRefusals(t *testing.T) {
	t.Parallel()
	q := engine.Queue{MaxMessageBytes: 8}
	if err := q.CheckSize("12345", map[string]string{"k": "vv"}); err != nil {
		t.Fatalf("8 bytes in a queue of 8: %v", err)
	}
	tooLarge := q.CheckSize("123456", map[string]string{"k": "vv"})
	var tl *engine.TooLarge
	if !errors.As(tooLarge, &tl) || *tl != (engine.TooLarge{Bytes: 9, Limit: 8}) {
		t.Fatalf("9 bytes in a queue of 8: %v, want *engine.TooLarge{9, 8}", tooLarge)
	}
	for _, c := range []struct{ err, sentinel error }{
		{tooLarge, engine.ErrTooLarge},
		{&engine.StoredBytesExceeded{Limit: 10}, engine.ErrStoredBytesExceeded},
		{&engine.DedupTaken{DedupID: "d"}, engine.ErrDedupTaken},
	} {
		for _, err := range []error{c.err, fmt.Errorf("copy: %w", c.err), &engine.Refusal{Err: c.err, Index: 3}} {
			if !errors.Is(err, c.sentinel) || !engine.IsRefusal(err) || apierr.CodeOf(err) != apierr.Internal {
				t.Errorf("%v: is %v, refusal %v, code %s", err, errors.Is(err, c.sentinel), engine.IsRefusal(err), apierr.CodeOf(err))
			}
		}
	}
	var sb *engine.StoredBytesExceeded
	if err := error(&engine.Refusal{Err: &engine.StoredBytesExceeded{Limit: 10}}); !errors.As(err, &sb) || sb.Limit != 10 {
		t.Errorf("%v: the limit is lost in a *engine.Refusal", err)
	}
	if errors.Is(&engine.StoredBytesExceeded{Limit: 10}, engine.ErrTooLarge) {
		t.Errorf("the byte quota reads as ErrTooLarge")
	}
}
