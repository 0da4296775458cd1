package engine

import (
	"errors"
	"fmt"
	"time"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/ids"
)

// ErrInvalidState is a browse of a state other than visible, inFlight and delayed. The API
// checks the state before it asks (and names the query parameter in its answer); an engine
// answers this when asked anyway.
var ErrInvalidState error = refused("unknown message state")

// Valid reports whether s is one of the message states.
func (s State) Valid() bool {
	return s == StateVisible || s == StateInFlight || s == StateDelayed
}

// Failures: the store did not do what was asked. They read as their API code (apierr.CodeOf)
// with a message naming only the operation, keep the store's own error as their cause (for
// logs and errors.As), and are never refusals.
var (
	// ErrUnavailable is a store that did not answer, or that asks callers to come back (a
	// full store, a skewed clock, lasting contention): worth a retry.
	ErrUnavailable error = &failed{code: apierr.Unavailable, text: "storage unavailable"}
	// ErrFault is a store that answered with a failure no retry mends (a script or data
	// error).
	ErrFault error = &failed{code: apierr.Internal, text: "storage error"}
)

// failed is the type of the failures' sentinels.
type failed struct {
	code apierr.Code
	text string
}

func (f *failed) Error() string { return "engine: " + f.text }

// Is makes errors.Is(err, apierr.ErrUnavailable) match an unavailable store.
func (f *failed) Is(target error) bool {
	t, ok := target.(*apierr.Error)
	return ok && t.Code == f.code
}

// Failure is a failure while doing Op: Err is ErrUnavailable or ErrFault, Cause the store's
// own error (nil when the engine itself gave up), RetryAfter how long callers should wait
// where the engine knows.
type Failure struct {
	Err        error
	Op         string
	Cause      error
	RetryAfter time.Duration
}

func (f *Failure) Error() string {
	if f.Cause == nil {
		return fmt.Sprintf("%s: %v", f.Op, f.Err)
	}
	return fmt.Sprintf("%s: %v: %v", f.Op, f.Err, f.Cause)
}

// Unwrap returns the sentinel and the cause.
func (f *Failure) Unwrap() []error {
	if f.Cause == nil {
		return []error{f.Err}
	}
	return []error{f.Err, f.Cause}
}

// As lets apierr.As read the failure's code and RetryAfter; the message names the operation
// only, so no store detail (addresses, paths, script text) can reach a client.
func (f *Failure) As(target any) bool {
	t, ok := target.(**apierr.Error)
	if ok {
		fe, _ := f.Err.(*failed)
		*t = &apierr.Error{Code: apierr.CodeOf(f.Err), Message: f.Op + ": " + fe.text, RetryAfter: f.RetryAfter}
	}
	return ok
}

// As lets apierr.CodeOf read a bare failure sentinel's code.
func (f *failed) As(target any) bool {
	t, ok := target.(**apierr.Error)
	if ok {
		*t = &apierr.Error{Code: f.code, Message: f.text}
	}
	return ok
}

// StoreUnavailable is ErrUnavailable while doing op, caused by cause.
func StoreUnavailable(op string, cause error) error {
	return &Failure{Err: ErrUnavailable, Op: op, Cause: cause}
}

// StoreFault is ErrFault while doing op, caused by cause.
func StoreFault(op string, cause error) error {
	return &Failure{Err: ErrFault, Op: op, Cause: cause}
}

// Refusals: an engine's answers to a request it will not carry out. They are sentinels for
// errors.Is, with no API code, field name or client text: pkg/api (refusals.go) gives each
// its answer, naming the field at fault, and the SQS door reads that answer.
var (
	// ErrBadCursor is a browse, group-list or move cursor the engine did not issue (or one
	// of another state).
	ErrBadCursor error = refused("malformed cursor")
	// ErrBadConsumerCursor is a consumer-list cursor that is not one.
	ErrBadConsumerCursor error = refused("not a consumer-list cursor")
	// ErrNoGroups is a group operation on a standard queue.
	ErrNoGroups error = refused("groups exist only on fifo queues")
	// ErrNoSuchGroup is a group operation on a group the queue does not know (no message,
	// not parked).
	ErrNoSuchGroup error = refused("no such group")
	// ErrGroupNotParked is a release of a group that is not parked.
	ErrGroupNotParked error = refused("the group is not parked")
	// ErrBadGroupID is a group id outside 1–128 characters from ! to ~.
	ErrBadGroupID error = refused("malformed group id")
	// ErrGroupRequired is a message without a group id sent to a fifo queue (Refusal.Index
	// names it).
	ErrGroupRequired error = refused("a fifo message needs a group id")
	// ErrBadQueueType is a queue type other than Standard and FIFO.
	ErrBadQueueType error = refused("unknown queue type")
	// ErrBadVisibility is a visibility change outside 0..MaxVisibility.
	ErrBadVisibility error = refused("visibility out of range")
	// ErrContended is a keyed send that lost every race to other sends of its key (worth a
	// retry).
	ErrContended error = refused("concurrent sends kept changing the key's message")
	// ErrPatchNotObject is a "patch" send whose own body is not a JSON object;
	// ErrPatchWaitingNotObject one whose waiting message's body is not.
	ErrPatchNotObject        error = refused("a patch body is not a JSON object")
	ErrPatchWaitingNotObject error = refused("the waiting message's body is not a JSON object")
	// ErrPatchTooDeep is a "patch" send whose own body nests deeper than MaxPatchDepth;
	// ErrPatchWaitingTooDeep one whose waiting message's body does (stored by a "replace").
	ErrPatchTooDeep        error = refused("a patch body nests too deep")
	ErrPatchWaitingTooDeep error = refused("the waiting message's body nests too deep")
	// ErrMergeBudget is a patch merge past its send's MergeBudgetBytes (Refusal.N is the
	// merge work the send would have reached).
	ErrMergeBudget error = refused("the send's merges passed their budget")
	// ErrMergedAttributes and ErrMergedTooLarge are merges past MaxAttributes and the
	// queue's MessageLimit (Refusal.N is the merged count or size, Refusal.Limit the limit).
	ErrMergedAttributes error = refused("the merged message has too many attributes")
	ErrMergedTooLarge   error = refused("the merged message is too large")
)

// Refusals whose answers quote figures the engine alone knows at the time (a message's size,
// the project's byte limit, a copy's dedup id): the engines return the typed errors below,
// which carry those figures and match these sentinels through errors.Is. Like the sentinels
// above they have no API code or client text: pkg/service words them for both doors and for
// the fan-out's binding records.
var (
	// ErrTooLarge is a message over its queue's MessageLimit (*TooLarge).
	ErrTooLarge error = refused("the message is over the queue's size limit")
	// ErrStoredBytesExceeded is a store that would take the project's stored bytes past its
	// MaxStoredBytes; nothing of the refused send, publish or copied message was stored
	// (*StoredBytesExceeded).
	ErrStoredBytesExceeded error = refused("the project's stored bytes would pass its limit")
	// ErrDedupTaken is a fifo copy whose dedup id the queue's deduplication window holds for
	// another message (*DedupTaken).
	ErrDedupTaken error = refused("the dedup id is held for another message")
)

// TooLarge is ErrTooLarge about a message of Bytes (PayloadBytes) in a queue whose
// MessageLimit is Limit.
type TooLarge struct{ Bytes, Limit int64 }

func (e *TooLarge) Error() string {
	return fmt.Sprintf("%v (%d bytes, limit %d)", ErrTooLarge, e.Bytes, e.Limit)
}

// Unwrap returns ErrTooLarge.
func (e *TooLarge) Unwrap() error { return ErrTooLarge }

// StoredBytesExceeded is ErrStoredBytesExceeded in a project whose MaxStoredBytes is Limit.
type StoredBytesExceeded struct{ Limit int64 }

func (e *StoredBytesExceeded) Error() string {
	return fmt.Sprintf("%v (limit %d)", ErrStoredBytesExceeded, e.Limit)
}

// Unwrap returns ErrStoredBytesExceeded.
func (e *StoredBytesExceeded) Unwrap() error { return ErrStoredBytesExceeded }

// DedupTaken is ErrDedupTaken about dedup id DedupID.
type DedupTaken struct{ DedupID string }

func (e *DedupTaken) Error() string { return fmt.Sprintf("%v (%q)", ErrDedupTaken, e.DedupID) }

// Unwrap returns ErrDedupTaken.
func (e *DedupTaken) Unwrap() error { return ErrDedupTaken }

// Refusals that callers outside the doors tell apart by their API code (a stale handle, a
// message or binding not found, a purge too soon): they read as that code through
// apierr.CodeOf and errors.Is(err, &apierr.Error{Code: …}), with no client text either.
var (
	// ErrStale is a receipt handle of a delivery that is over (the message was received
	// again, acknowledged, dead-lettered, purged or expired).
	ErrStale error = refusedAs(apierr.ReceiptHandleStale, "stale receipt handle")
	// ErrNoMessage is a delete by id of a message the queue does not hold (unknown, or
	// acknowledged, expired, purged, dead-lettered).
	ErrNoMessage error = refusedAs(apierr.NotFound, "no such message")
	// ErrMessageInFlight is a delete by id of a message a consumer holds.
	ErrMessageInFlight error = refusedAs(apierr.MessageInFlight, "the message is in flight")
	// ErrNoState is a keyed state read of a key without state (Refusal.Key names it).
	ErrNoState error = refusedAs(apierr.NotFound, "no state for the key")
	// ErrNoBinding is a change of a binding the topic does not have (Refusal.Binding names
	// it where the engine does).
	ErrNoBinding error = refusedAs(apierr.NotFound, "no such binding")
	// ErrPurgeTooSoon is a purge within PurgeInterval of the last (Refusal.Wait is the time
	// until the next may run).
	ErrPurgeTooSoon error = refusedAs(apierr.PurgeTooSoon, "purged too recently")
	// ErrVisibilityLimit is a visibility change that would end the delivery more than
	// MaxInFlight after the message was received.
	ErrVisibilityLimit error = refusedAs(apierr.VisibilityLimitExceeded, "the deadline would pass the in-flight limit")
)

// NoState is ErrNoState about key.
func NoState(key string) error { return &Refusal{Err: ErrNoState, Key: key} }

// refusal is the type of the refusals, so IsRefusal can tell them from failures. Those with
// a code read as it (as the *apierr.Error values the engines returned before); the others
// read as none.
type refusal struct {
	code apierr.Code
	text string
}

func refused(text string) *refusal { return &refusal{text: text} }

func refusedAs(code apierr.Code, text string) *refusal { return &refusal{code: code, text: text} }

func (r *refusal) Error() string { return "engine: " + r.text }

// As lets apierr.CodeOf read a coded refusal's code (a fresh error each time).
func (r *refusal) As(target any) bool {
	t, ok := target.(**apierr.Error)
	if ok && r.code != "" {
		*t = &apierr.Error{Code: r.code, Message: r.Error()}
		return true
	}
	return false
}

// Is makes errors.Is(err, apierr.ErrStale) and the like match a refusal of that code.
func (r *refusal) Is(target error) bool {
	t, ok := target.(*apierr.Error)
	return ok && r.code != "" && t.Code == r.code
}

// IsRefusal reports whether err is one of the refusals above (a Refusal included): an answer
// about the request, not a failure of the store.
func IsRefusal(err error) bool {
	var r *refusal
	return errors.As(err, &r)
}

// Refusal is a refusal with the figures its answer quotes: Err is one of the sentinels above,
// Index the message of the call it is about, N the figure (a merged count or size).
type Refusal struct {
	Err   error
	Index int
	N     int64
	// Limit is the limit N passed, where the answer quotes one (ErrMergedTooLarge: the
	// queue's maxMessageBytes).
	Limit int64
	// Key is the key of ErrNoState, Binding the binding of ErrNoBinding, Wait the time
	// until ErrPurgeTooSoon's next purge.
	Key     string
	Binding ids.ID
	Wait    time.Duration
}

func (r *Refusal) Error() string { return fmt.Sprintf("%v (message %d, %d)", r.Err, r.Index, r.N) }

// Unwrap returns the sentinel.
func (r *Refusal) Unwrap() error { return r.Err }
