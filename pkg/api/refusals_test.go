package api

import (
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/service"
)

// TestRefusalAnswers: every engine refusal gets the answer clients had when the engines wrote
// it themselves (code, field and text), also wrapped, and the Refusal figures land in the text.
func TestRefusalAnswers(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		err   error
		code  apierr.Code
		field string
		msg   string
	}{
		{engine.ErrInvalidState, apierr.InvalidArgument, "state", "must be visible, inFlight or delayed"},
		{engine.ErrBadCursor, apierr.InvalidArgument, "cursor", "malformed cursor"},
		{engine.ErrBadConsumerCursor, apierr.InvalidArgument, "cursor", "is not a cursor of this list"},
		{engine.ErrNoGroups, apierr.InvalidArgument, "", "groups exist only on fifo queues"},
		{engine.ErrBadGroupID, apierr.InvalidArgument, "groupId", "must be 1 to 128 characters from ! to ~ (no spaces)"},
		{engine.ErrBadQueueType, apierr.InvalidArgument, "type", `must be "standard" or "fifo"`},
		{engine.ErrBadVisibility, apierr.InvalidArgument, "visibilityTimeoutSeconds", "must be between 0 and 43200"},
		{engine.ErrContended, apierr.Unavailable, "", "concurrent sends kept changing this key's message; retry"},
		{engine.ErrPatchNotObject, apierr.InvalidArgument, "body", `merge "patch" needs JSON objects; the new body is not one`},
		{engine.ErrPatchWaitingNotObject, apierr.InvalidArgument, "body", `merge "patch" needs JSON objects; the waiting message's body is not one`},
		{engine.ErrPatchTooDeep, apierr.InvalidArgument, "body", `merge "patch" needs JSON objects nesting at most 100 deep; the new body nests deeper`},
		{engine.ErrPatchWaitingTooDeep, apierr.InvalidArgument, "body", `merge "patch" needs JSON objects nesting at most 100 deep; the waiting message's body nests deeper`},
		{&engine.Refusal{Err: engine.ErrMergeBudget, N: 16800336}, apierr.PayloadTooLarge, "body", "this send's patch merges would read 16800336 bytes of waiting bodies and patches; the limit is 16777216 a send (merges are made again when concurrent sends change the key): send fewer or smaller patches, or retry"},
		{&engine.Refusal{Err: engine.ErrGroupRequired, Index: 3}, apierr.InvalidArgument, "messages[3].groupId", "is required on a fifo queue"},
		{&engine.Refusal{Err: engine.ErrMergedAttributes, N: 11}, apierr.InvalidArgument, "attributes", "the merged message would have 11 attributes; the limit is 10"},
		{&engine.Refusal{Err: engine.ErrMergedTooLarge, N: 300000, Limit: 262144}, apierr.PayloadTooLarge, "", "the merged message would be 300000 bytes (body and attributes); the queue's maxMessageBytes is 262144"},
	} {
		for _, err := range []error{c.err, fmt.Errorf("browse: %w", c.err)} {
			ae := asAPI(err)
			if ae.Code != c.code || ae.Field != c.field || ae.Message != c.msg {
				t.Errorf("%v: answered %s %q %q, want %s %q %q", err, ae.Code, ae.Field, ae.Message, c.code, c.field, c.msg)
			}
		}
	}
	// The answer is a copy: prefixing one (a batch entry's field) leaves the next intact.
	_ = asAPI(engine.ErrBadCursor).WithPrefix("entries[0]")
	if f := asAPI(engine.ErrBadCursor).Field; f != "cursor" {
		t.Fatalf("after a prefix the next answer names %q", f)
	}
	if ae := service.Answer(apierr.ErrStale); ae != apierr.ErrStale {
		t.Fatalf("Answer changed an API error: %v", ae)
	}
}

// TestMetaRefusalAnswers: every metadata-store refusal gets the answer clients had when the
// stores named the field themselves (code, field and text, each given here as the store built
// it), on the HTTP error path byte for byte, also wrapped, and for the SQS door (Answer).
func TestMetaRefusalAnswers(t *testing.T) {
	t.Parallel()
	dlq := ids.New()
	for _, c := range []struct {
		err    error
		before *apierr.Error
	}{
		{meta.ErrBadCursor, apierr.Invalid("cursor", "the cursor is not one this listing returned")},
		{meta.ZeroID("project"), apierr.Invalid("id", "project id is zero")},
		{meta.ZeroID("token"), apierr.Invalid("id", "token id is zero")},
		{meta.ZeroID("queue"), apierr.Invalid("id", "queue id is zero")},
		{meta.ZeroID("subscription or queue"), apierr.Invalid("id", "subscription or queue id is zero")},
		{meta.ZeroID("task or queue"), apierr.Invalid("id", "task or queue id is zero")},
		{meta.ErrEmptyName, apierr.Invalid("name", "queue name is empty")},
		{meta.ErrSelfDeadLetter, apierr.Invalid("redrive.deadLetterQueue", "a queue cannot be its own dead-letter queue")},
		{meta.DeadLetterNotFound(dlq), apierr.Field(apierr.NotFound, "redrive.deadLetterQueue", "dead-letter queue %s not found", dlq)},
		{meta.QueueNameTaken("orders"), apierr.Field(apierr.QueueExists, "name", "a queue named %q already exists", "orders")},
	} {
		for _, err := range []error{c.err, fmt.Errorf("list queues: %w", c.err)} {
			ae, want := asAPI(err), c.before
			if ae.Code != want.Code || ae.Field != want.Field || ae.Message != want.Message {
				t.Errorf("%v: answered %s %q %q, want %s %q %q", err, ae.Code, ae.Field, ae.Message, want.Code, want.Field, want.Message)
			}
			if got, before := httpAnswer(err), httpAnswer(want); got != before {
				t.Errorf("%v: over HTTP %s, before %s", err, got, before)
			}
			if sa := apierr.As(service.Answer(err)); sa.Code != want.Code || sa.Message != want.Message {
				t.Errorf("%v: the SQS door reads %s %q", err, sa.Code, sa.Message)
			}
		}
	}
	_ = asAPI(meta.ErrBadCursor).WithPrefix("entries[0]")
	if f := asAPI(meta.ErrBadCursor).Field; f != "cursor" {
		t.Fatalf("after a prefix the next answer names %q", f)
	}
}

// httpAnswer is the status and body the API's error handler writes for err.
func httpAnswer(err error) string {
	s := New(Config{Registry: prometheus.NewRegistry()})
	rec := httptest.NewRecorder()
	s.handleError(err, s.e.NewContext(httptest.NewRequest("GET", "/v1/queues", nil), rec))
	return fmt.Sprintf("%d %s", rec.Code, rec.Body.String())
}
