package engine_test

import (
	"errors"
	"strings"
	"testing"

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
