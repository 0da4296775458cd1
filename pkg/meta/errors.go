package meta

import (
	"errors"
	"fmt"

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

// Refusal is a refusal with what its answer quotes: Err is one of the sentinels above, Record
// the kind of record of ErrZeroID ("queue", "task or queue"), Queue the queue of
// ErrDeadLetterNotFound, Name the name of ErrQueueNameTaken.
type Refusal struct {
	Err    error
	Record string
	Queue  ids.ID
	Name   string
}

func (r *Refusal) Error() string {
	switch {
	case r.Record != "":
		return fmt.Sprintf("%v (%s)", r.Err, r.Record)
	case r.Name != "":
		return fmt.Sprintf("%v (%q)", r.Err, r.Name)
	default:
		return fmt.Sprintf("%v (%s)", r.Err, r.Queue)
	}
}

// Unwrap returns the sentinel.
func (r *Refusal) Unwrap() error { return r.Err }

// ZeroID is ErrZeroID about a record of the kind named.
func ZeroID(record string) error { return &Refusal{Err: ErrZeroID, Record: record} }

// DeadLetterNotFound is ErrDeadLetterNotFound about queue id.
func DeadLetterNotFound(id ids.ID) error { return &Refusal{Err: ErrDeadLetterNotFound, Queue: id} }

// QueueNameTaken is ErrQueueNameTaken about name.
func QueueNameTaken(name string) error { return &Refusal{Err: ErrQueueNameTaken, Name: name} }

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
