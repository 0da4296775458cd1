package api

import (
	"fmt"
	"testing"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/engine"
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
		{&engine.Refusal{Err: engine.ErrGroupRequired, Index: 3}, apierr.InvalidArgument, "messages[3].groupId", "is required on a fifo queue"},
		{&engine.Refusal{Err: engine.ErrMergedAttributes, N: 11}, apierr.InvalidArgument, "attributes", "the merged message would have 11 attributes; the limit is 10"},
		{&engine.Refusal{Err: engine.ErrMergedTooLarge, N: 300000}, apierr.PayloadTooLarge, "", "the merged message would be 300000 bytes (body and attributes); the limit is 262144"},
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
	if ae := EngineError(apierr.ErrStale); ae != apierr.ErrStale {
		t.Fatalf("EngineError changed an API error: %v", ae)
	}
}
