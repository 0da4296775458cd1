package api

import (
	"errors"
	"fmt"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

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
	bindingID := ids.New()
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
		{engine.ErrStale, apierr.ReceiptHandleStale, "", "the receipt handle is stale: the message was received again, acknowledged, dead-lettered, purged or expired"},
		{engine.ErrNoMessage, apierr.NotFound, "", "the queue holds no such message (unknown, or acknowledged, expired, purged or dead-lettered)"},
		{engine.ErrMessageInFlight, apierr.MessageInFlight, "", "the message is in flight: a consumer holds it; settle it with its receipt handle"},
		{engine.NoState("k1"), apierr.NotFound, "", `the topic holds no state for key "k1"`},
		{engine.ErrNoBinding, apierr.NotFound, "", "the topic has no such binding"},
		{&engine.Refusal{Err: engine.ErrNoBinding, Binding: bindingID}, apierr.NotFound, "", "the topic has no binding " + bindingID.String()},
		{engine.ErrVisibilityLimit, apierr.VisibilityLimitExceeded, "", "the new deadline would be more than 12h0m0s after the message was received"},
		{&engine.Refusal{Err: engine.ErrPurgeTooSoon, Wait: 40400 * time.Millisecond}, apierr.PurgeTooSoon, "", "a queue can be purged once every 1m0s; the next purge is possible in 40s"},
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
	if ae := asAPI(&engine.Refusal{Err: engine.ErrPurgeTooSoon, Wait: 40400 * time.Millisecond}); ae.RetryAfter != 40400*time.Millisecond {
		t.Fatalf("a purge too soon answers Retry-After %s", ae.RetryAfter)
	}
	for _, f := range []error{engine.StoreUnavailable("ack", errors.New("dial tcp 10.1.2.3:6379")), &engine.Failure{Err: engine.ErrUnavailable, Op: "send", RetryAfter: 3 * time.Second}} {
		if got := httpAnswer(f); !strings.HasPrefix(got, "503 ") || strings.Contains(got, "10.1.2.3") || strings.Contains(got, "send") {
			t.Fatalf("%v: over HTTP %s", f, got)
		}
	}
	if ae := asAPI(&engine.Failure{Err: engine.ErrUnavailable, Op: "send", RetryAfter: 3 * time.Second}); ae.Code != apierr.Unavailable || ae.RetryAfter != 3*time.Second {
		t.Fatalf("a full store answers %s, Retry-After %s", ae.Code, ae.RetryAfter)
	}
	if ae := service.Answer(apierr.ErrStale); ae != apierr.ErrStale {
		t.Fatalf("Answer changed an API error: %v", ae)
	}
}

// TestFigureRefusalAnswers: the engines' refusals that carry figures (a message over its
// queue's size, the project's byte quota, a fifo copy's taken dedup id) get, byte for byte,
// the answers the engines built themselves with package apierr before the service worded
// them: over HTTP, as answered for the SQS door (Answer), bare, wrapped, and inside a
// *engine.Refusal naming a message.
func TestFigureRefusalAnswers(t *testing.T) {
	t.Parallel()
	quota := apierr.New(apierr.QuotaExceeded, "the send would take the project's stored bytes past its limit of %d bytes "+
		"(maxStoredBytes); consume or purge messages first", 1000)
	quota.Details = map[string]any{"limit": "maxStoredBytes"}
	for _, c := range []struct {
		err      error
		sentinel error
		before   *apierr.Error
	}{
		{&engine.TooLarge{Bytes: 300, Limit: 256}, engine.ErrTooLarge,
			apierr.New(apierr.PayloadTooLarge, "the message is %d bytes (body and attributes); the queue's maxMessageBytes is %d", 300, 256)},
		{&engine.StoredBytesExceeded{Limit: 1000}, engine.ErrStoredBytesExceeded, quota},
		{&engine.DedupTaken{DedupID: `d "1"`}, engine.ErrDedupTaken,
			apierr.New(apierr.InvalidArgument, "the queue's deduplication window holds dedup id %q for another message", `d "1"`)},
	} {
		for _, err := range []error{c.err, fmt.Errorf("send: %w", c.err), &engine.Refusal{Err: c.err, Index: 2}} {
			if !errors.Is(err, c.sentinel) || !engine.IsRefusal(err) {
				t.Errorf("%v: not a refusal of %v", err, c.sentinel)
			}
			if ae, want := asAPI(err), c.before; !reflect.DeepEqual(ae, want) {
				t.Errorf("%v: answered %+v, want %+v", err, ae, want)
			}
			if got, before := httpAnswer(err), httpAnswer(c.before); got != before {
				t.Errorf("%v: over HTTP %s, before %s", err, got, before)
			}
			if sa := apierr.As(service.Answer(err)); !reflect.DeepEqual(sa, c.before) {
				t.Errorf("%v: the SQS door reads %+v", err, sa)
			}
		}
	}
	// Bare sentinels (no engine returns one) still read as their code.
	for sentinel, code := range map[error]apierr.Code{engine.ErrTooLarge: apierr.PayloadTooLarge,
		engine.ErrStoredBytesExceeded: apierr.QuotaExceeded, engine.ErrDedupTaken: apierr.InvalidArgument} {
		if ae := asAPI(sentinel); ae.Code != code {
			t.Errorf("%v: answered %s, want %s", sentinel, ae.Code, code)
		}
	}
}

// TestMetaRefusalAnswers: every metadata-store refusal gets the answer clients had when the
// stores named the field themselves (code, field and text, each given here as the store built
// it), on the HTTP error path byte for byte, also wrapped, and for the SQS door (Answer).
func TestMetaRefusalAnswers(t *testing.T) {
	t.Parallel()
	dlq, id := ids.New(), ids.New()
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
		{meta.ErrNotFound, apierr.ErrNotFound},
		{meta.NotFound(meta.KindProject, id), apierr.New(apierr.NotFound, "project %s not found", id)},
		{meta.NotFound(meta.KindToken, id), apierr.New(apierr.NotFound, "token %s not found", id)},
		{meta.NotFound(meta.KindQueue, id), apierr.New(apierr.NotFound, "queue %s not found", id)},
		{meta.NameNotFound(meta.KindQueue, "orders"), apierr.New(apierr.NotFound, "queue %q not found", "orders")},
		{meta.NotFound(meta.KindTopic, id), apierr.New(apierr.NotFound, "topic %s not found", id)},
		{meta.NameNotFound(meta.KindTopic, "events"), apierr.New(apierr.NotFound, "topic %q not found", "events")},
		{meta.NotFound(meta.KindBinding, id), apierr.New(apierr.NotFound, "binding %s not found", id)},
		{meta.NotFound(meta.KindMoveTask, id), apierr.New(apierr.NotFound, "move task %s not found", id)},
		{meta.NotFound(meta.KindSubscription, id), apierr.New(apierr.NotFound, "queue %s has no subscription", id)},
		{meta.IDTaken(meta.KindProject, id), apierr.New(apierr.Internal, "project %s already exists", id)},
		{meta.IDTaken(meta.KindToken, id), apierr.New(apierr.Internal, "token %s already exists", id)},
		{meta.IDTaken(meta.KindQueue, id), apierr.New(apierr.Internal, "queue id %s already exists", id)},
		{meta.IDTaken(meta.KindTopic, id), apierr.New(apierr.Internal, "topic id %s already exists", id)},
		{meta.IDTaken(meta.KindBinding, id), apierr.New(apierr.Internal, "binding id %s already exists", id)},
		{meta.QueueInUse(id), apierr.New(apierr.QueueInUse, "queue %s is the dead-letter queue of another queue", id)},
		{meta.SubscriptionExists(id), apierr.New(apierr.SubscriptionExists, "queue %s already has a subscription", id)},
		{meta.MoveTaskRunning(id, ids.ID{}), apierr.New(apierr.MoveTaskRunning, "queue %s has a running move task", id)},
		{meta.MoveTaskRunning(id, dlq), apierr.New(apierr.MoveTaskRunning, "queue %s has a running move task (%s)", id, dlq)},
		{meta.TopicNameTaken("events"), apierr.New(apierr.TopicExists, "topic name %q is taken in this project", "events")},
		{meta.BindingTaken(id, dlq), apierr.New(apierr.BindingExists, "queue %s is bound to topic %s already; change that binding's filter instead", id, dlq)},
		{meta.QuotaReached(meta.LimitMaxQueues, 5), apierr.Quota(meta.LimitMaxQueues, 5, "delete a queue or ask for a higher limit")},
		{meta.QuotaReached(meta.LimitMaxSubscriptions, 5), apierr.Quota(meta.LimitMaxSubscriptions, 5, "delete a subscription or ask for a higher limit")},
		{meta.TopicQuota(7), apierr.Quota(meta.LimitMaxTopics, 7, "delete a topic or ask for a higher limit")},
		{meta.RunningQuota(), apierr.Quota(meta.LimitRunningMoveTasks, meta.MaxRunningMoveTasks, "cancel one of its running move tasks or wait for one to end")},
		{meta.SourcesQuota(), &apierr.Error{Code: apierr.QuotaExceeded, Details: map[string]any{"limit": meta.LimitSourcesPerQueue},
			Message: fmt.Sprintf("a queue has at most %d sources: unbind one first", meta.MaxSourcesPerQueue)}},
		{meta.BindingsQuota(), &apierr.Error{Code: apierr.QuotaExceeded, Details: map[string]any{"limit": meta.LimitBindingsPerTopic},
			Message: fmt.Sprintf("a topic has at most %d bindings: unbind a queue first", meta.MaxBindingsPerTopic)}},
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
