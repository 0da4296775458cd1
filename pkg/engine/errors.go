package engine

import (
	"errors"
	"fmt"

	"github.com/queueshq/queues/pkg/apierr"
)

// ErrInvalidState is a browse of a state other than visible, inFlight and delayed. The API
// checks the state before it asks (and names the query parameter in its answer); an engine
// answers this when asked anyway.
var ErrInvalidState error = refused("unknown message state")

// Valid reports whether s is one of the message states.
func (s State) Valid() bool {
	return s == StateVisible || s == StateInFlight || s == StateDelayed
}

// StoreUnavailable is the error of a store that did not answer (worth a retry): op names the
// operation and cause is the store's own error, kept for logs and errors.As but out of the
// message, so no store detail (addresses, paths, script text) can reach a client.
func StoreUnavailable(op string, cause error) error {
	return &apierr.Error{Code: apierr.Unavailable, Message: op + ": storage unavailable", Cause: cause}
}

// StoreFault is the error of a store that answered with a failure no retry mends (a script or
// data error); as StoreUnavailable, the cause stays out of the message.
func StoreFault(op string, cause error) error {
	return &apierr.Error{Code: apierr.Internal, Message: op + ": storage error", Cause: cause}
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

// refused is the type of the refusals, so IsRefusal can tell them from failures.
type refused string

func (r refused) Error() string { return "engine: " + string(r) }

// IsRefusal reports whether err is one of the refusals above (a Refusal included): an answer
// about the request, not a failure of the store.
func IsRefusal(err error) bool {
	var r refused
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
}

func (r *Refusal) Error() string { return fmt.Sprintf("%v (message %d, %d)", r.Err, r.Index, r.N) }

// Unwrap returns the sentinel.
func (r *Refusal) Unwrap() error { return r.Err }
