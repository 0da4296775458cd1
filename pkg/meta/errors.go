package meta

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/ids"
)

// Refusals: a store's answers to a request it will not carry out. They are sentinels for
// errors.Is with an API code (apierr.CodeOf answers it, so callers that switch on codes need
// not know them) but no field name or client text: pkg/api (refusals.go) gives each its
// answer, naming the field at fault, and the SQS door reads that answer.
var (
	// ErrBadCursor is a listing cursor the store did not issue for this listing (another
	// listing's, another project's or prefix's, or not a cursor at all).
	ErrBadCursor error = refused(apierr.InvalidArgument, "cursor not issued by this listing")
	// ErrZeroID is a record to create whose id (or whose queue's id) is zero; Refusal.Record
	// names the kind of record.
	ErrZeroID error = refused(apierr.InvalidArgument, "zero id")
	// ErrEmptyName is a queue to create without a name.
	ErrEmptyName error = refused(apierr.InvalidArgument, "empty queue name")
	// ErrSelfDeadLetter is a redrive naming the queue itself as its dead-letter queue.
	ErrSelfDeadLetter error = refused(apierr.InvalidArgument, "a queue cannot be its own dead-letter queue")
	// ErrDeadLetterNotFound is a redrive naming a queue that is not in the project (never
	// created, deleted, or another project's); Refusal.Queue is that queue.
	ErrDeadLetterNotFound error = refused(apierr.NotFound, "dead-letter queue not found")
	// ErrQueueNameTaken is a queue to create under a name the project already has;
	// Refusal.Name is the name.
	ErrQueueNameTaken error = refused(apierr.QueueExists, "queue name taken")
)

// refusal is the type of the refusals, so IsRefusal can tell them from failures. It is not
// an *apierr.Error: apierr.Error.Is matches on the code alone, which would make every
// invalid_argument error "be" each invalid_argument refusal.
type refusal struct {
	code apierr.Code
	text string
}

func refused(code apierr.Code, text string) *refusal { return &refusal{code: code, text: text} }

func (r *refusal) Error() string { return "meta: " + r.text }

// As lets apierr.CodeOf and apierr.As read the refusal's code (a fresh error each time, so a
// caller changing it changes nothing here).
func (r *refusal) As(target any) bool {
	t, ok := target.(**apierr.Error)
	if ok {
		*t = &apierr.Error{Code: r.code, Message: r.Error()}
	}
	return ok
}

// Is makes errors.Is(err, apierr.ErrNotFound) and the like match a refusal of that code, as
// they matched the *apierr.Error values the stores returned before.
func (r *refusal) Is(target error) bool {
	t, ok := target.(*apierr.Error)
	return ok && t.Code == r.code
}

// IsRefusal reports whether err is one of the refusals above (a Refusal included): an answer
// about the request, not a failure of the store.
func IsRefusal(err error) bool { return Refused(err) != nil }

// Refused returns the refusal sentinel in err's chain, nil when there is none.
func Refused(err error) error {
	var r *refusal
	if errors.As(err, &r) {
		return r
	}
	return nil
}

// Failures and refusals about records: the stores' words for what happened, with the record's
// kind and id in a Refusal; pkg/api (refusals.go) words the client's answer.
var (
	// ErrNotFound is a record that is not in the store (never created, deleted, or another
	// project's); a Refusal names its kind and id or name. KindSubscription's id is its queue's.
	ErrNotFound error = refused(apierr.NotFound, "not found")
	// ErrIDTaken is a record to create under an id the store holds already (ids are random,
	// so this is a caller's fault, not the client's); a Refusal names its kind and id.
	ErrIDTaken error = refused(apierr.Internal, "id taken")
	// ErrQueueInUse is a delete of a queue that another queue's redrive names as its
	// dead-letter queue; Refusal.ID is the queue.
	ErrQueueInUse error = refused(apierr.QueueInUse, "the queue is another queue's dead-letter queue")
	// ErrSubscriptionExists is a second subscription of one queue; Refusal.ID is the queue.
	ErrSubscriptionExists error = refused(apierr.SubscriptionExists, "the queue has a subscription")
	// ErrMoveTaskRunning is a move task of a queue that has one running; Refusal.ID is the
	// queue, Refusal.Other the running task where the store knows it.
	ErrMoveTaskRunning error = refused(apierr.MoveTaskRunning, "the queue has a running move task")
	// ErrTopicNameTaken is a topic to create under a name the project's topics use;
	// Refusal.Name is the name.
	ErrTopicNameTaken error = refused(apierr.TopicExists, "topic name taken")
	// ErrBindingExists is a second binding of one queue to one topic; Refusal.ID is the
	// queue, Refusal.Other the topic.
	ErrBindingExists error = refused(apierr.BindingExists, "the queue is bound to the topic already")
	// ErrQuota is a create past a limit; Refusal.Name is the limit (the Limit* names),
	// Refusal.N its value.
	ErrQuota error = refused(apierr.QuotaExceeded, "limit reached")
)

// Kinds of record, as the answers about them name them.
const (
	KindProject      = "project"
	KindToken        = "token"
	KindQueue        = "queue"
	KindTopic        = "topic"
	KindBinding      = "binding"
	KindMoveTask     = "move task"
	KindSubscription = "subscription"
)

// Refusal is a refusal with what its answer quotes: Err is one of the sentinels above, Record
// the kind of record (ErrZeroID: "queue", "task or queue"; ErrNotFound, ErrIDTaken: a Kind),
// ID the record or queue it is about, Other a second record (a topic, a task), Name a name
// or a limit, N a limit's value.
type Refusal struct {
	Err    error
	Record string
	ID     ids.ID
	Other  ids.ID
	Name   string
	N      int64
}

func (r *Refusal) Error() string {
	s := r.Err.Error() + " ("
	if r.Record != "" {
		s += r.Record + " "
	}
	switch {
	case r.Name != "" && r.N != 0:
		s += fmt.Sprintf("%s %d", r.Name, r.N)
	case r.Name != "":
		s += fmt.Sprintf("%q", r.Name)
	case !r.ID.IsZero():
		s += r.ID.String()
	}
	if !r.Other.IsZero() {
		s += ", " + r.Other.String()
	}
	return strings.TrimSuffix(s, " ") + ")"
}

// Unwrap returns the sentinel.
func (r *Refusal) Unwrap() error { return r.Err }

// ZeroID is ErrZeroID about a record of the kind named.
func ZeroID(record string) error { return &Refusal{Err: ErrZeroID, Record: record} }

// DeadLetterNotFound is ErrDeadLetterNotFound about queue id.
func DeadLetterNotFound(id ids.ID) error { return &Refusal{Err: ErrDeadLetterNotFound, ID: id} }

// QueueNameTaken is ErrQueueNameTaken about name.
func QueueNameTaken(name string) error { return &Refusal{Err: ErrQueueNameTaken, Name: name} }

// NotFound is ErrNotFound about the record of kind with id.
func NotFound(kind string, id ids.ID) error {
	return &Refusal{Err: ErrNotFound, Record: kind, ID: id}
}

// NameNotFound is ErrNotFound about the record of kind named name.
func NameNotFound(kind, name string) error {
	return &Refusal{Err: ErrNotFound, Record: kind, Name: name}
}

// IDTaken is ErrIDTaken about the record of kind with id.
func IDTaken(kind string, id ids.ID) error {
	return &Refusal{Err: ErrIDTaken, Record: kind, ID: id}
}

// QueueInUse is ErrQueueInUse about queue id.
func QueueInUse(id ids.ID) error { return &Refusal{Err: ErrQueueInUse, ID: id} }

// SubscriptionExists is ErrSubscriptionExists about queue id.
func SubscriptionExists(queue ids.ID) error {
	return &Refusal{Err: ErrSubscriptionExists, ID: queue}
}

// MoveTaskRunning is ErrMoveTaskRunning about queue, whose running task is task (zero when
// the store does not know it).
func MoveTaskRunning(queue, task ids.ID) error {
	return &Refusal{Err: ErrMoveTaskRunning, ID: queue, Other: task}
}

// QuotaReached is ErrQuota about the limit named, of value max.
func QuotaReached(limit string, max int64) error {
	return &Refusal{Err: ErrQuota, Name: limit, N: max}
}

// CheckNew is what every store refuses before creating q: a zero id, no name, or a redrive
// naming q itself.
func (q Queue) CheckNew() error {
	if q.ID.IsZero() {
		return ZeroID("queue")
	}
	if q.Name == "" {
		return ErrEmptyName
	}
	return q.CheckRedrive()
}

// CheckRedrive refuses a redrive naming q itself as its dead-letter queue.
func (q Queue) CheckRedrive() error {
	if q.Redrive != nil && q.Redrive.DeadLetterQueue == q.ID {
		return ErrSelfDeadLetter
	}
	return nil
}

// Failures: the store did not do what was asked. They are not refusals (IsRefusal is false)
// and carry no client text: the doors answer every one with their own words for a storage
// failure, and log the failure with its cause.
var (
	// ErrUnavailable is a store that did not answer, or kept losing races (worth a retry).
	ErrUnavailable error = &failed{code: apierr.Unavailable, text: "store unavailable"}
	// ErrFault is a store that answered with a failure no retry mends (a malformed item, a
	// request the store refused as malformed).
	ErrFault error = &failed{code: apierr.Internal, text: "store fault"}
)

// failed is the type of the failures, so they read as their code (apierr.CodeOf) but never
// as a refusal.
type failed struct {
	code apierr.Code
	text string
}

func (f *failed) Error() string { return "meta: " + f.text }

// As lets apierr.CodeOf read the failure's code, as it read the *apierr.Error values the
// stores returned before.
func (f *failed) As(target any) bool {
	t, ok := target.(**apierr.Error)
	if ok {
		*t = &apierr.Error{Code: f.code, Message: f.Error()}
	}
	return ok
}

// Is makes errors.Is(err, apierr.ErrUnavailable) match an unavailable store.
func (f *failed) Is(target error) bool {
	t, ok := target.(*apierr.Error)
	return ok && t.Code == f.code
}

// Failure is a failure with what the store was doing (Op), the store's own error (Cause,
// nil when there is none, as a row that keeps changing) and, when the store asked callers
// to back off (throttling), how long (RetryAfter).
type Failure struct {
	Err        error
	Op         string
	Cause      error
	RetryAfter time.Duration
}

// As lets apierr.As read the failure's code and RetryAfter.
func (f *Failure) As(target any) bool {
	t, ok := target.(**apierr.Error)
	if ok {
		*t = &apierr.Error{Code: apierr.CodeOf(f.Err), Message: f.Error(), RetryAfter: f.RetryAfter}
	}
	return ok
}

func (f *Failure) Error() string {
	if f.Cause == nil {
		return fmt.Sprintf("%v: %s", f.Err, f.Op)
	}
	return fmt.Sprintf("%v: %s: %v", f.Err, f.Op, f.Cause)
}

// Unwrap returns the sentinel and the cause. A context error stays out of the chain (it is
// in Error()): the doors answer a request whose own deadline passed differently from one
// whose store did not answer, and a store's timeout is the latter.
func (f *Failure) Unwrap() []error {
	if f.Cause == nil || errors.Is(f.Cause, context.Canceled) || errors.Is(f.Cause, context.DeadlineExceeded) {
		return []error{f.Err}
	}
	return []error{f.Err, f.Cause}
}

// Unavailable is ErrUnavailable while doing op, caused by cause (nil for none).
func Unavailable(op string, cause error) error {
	return &Failure{Err: ErrUnavailable, Op: op, Cause: cause}
}

// Fault is ErrFault while doing op, caused by cause (nil for none).
func Fault(op string, cause error) error { return &Failure{Err: ErrFault, Op: op, Cause: cause} }
