// Package apierr defines the error values the service answers with. Each Code maps one-to-one
// to an error code of the HTTP API and to one HTTP status. The engines and the metadata stores
// return their own sentinels (package engine's and package meta's errors.go), which read as a
// Code for callers that switch on codes but carry no client text: pkg/api (refusals.go) words
// each as an *Error, and the SQS door reads that answer.
package apierr

import (
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Code is a stable, snake_case API error code.
type Code string

// The API's error codes. openapi.yaml enumerates the same list.
const (
	InvalidArgument         Code = "invalid_argument"
	PayloadTooLarge         Code = "payload_too_large"
	UnsupportedMediaType    Code = "unsupported_media_type"
	Unauthenticated         Code = "unauthenticated"
	PermissionDenied        Code = "permission_denied"
	NotFound                Code = "not_found"
	MethodNotAllowed        Code = "method_not_allowed"
	QueueExists             Code = "queue_exists"
	QueueInUse              Code = "queue_in_use"
	SubscriptionExists      Code = "subscription_exists"
	MoveTaskRunning         Code = "move_task_running"
	ReceiptHandleInvalid    Code = "receipt_handle_invalid"
	ReceiptHandleStale      Code = "receipt_handle_stale"
	VisibilityLimitExceeded Code = "visibility_limit_exceeded"
	PurgeTooSoon            Code = "purge_too_soon"
	QuotaExceeded           Code = "quota_exceeded"
	RateLimited             Code = "rate_limited"
	Unavailable             Code = "unavailable"
	Internal                Code = "internal"
	// MessageInFlight refuses deleting a message by id while a consumer holds it
	// (docs/lifecycle.md#delete-a-waiting-message): settle it with its receipt handle instead.
	MessageInFlight Code = "message_in_flight"
	// TopicExists refuses creating a topic under a name the project already uses (docs/topics.md).
	TopicExists Code = "topic_exists"
	// BindingExists refuses binding a queue to a topic it is already bound to (docs/topics.md):
	// a second binding would copy every message twice; change the filter instead.
	BindingExists Code = "binding_exists"
	// GroupNotParked refuses releasing a fifo group that no poison policy parked
	// (docs/fifo.md).
	GroupNotParked Code = "group_not_parked"
)

var statuses = map[Code]int{
	InvalidArgument:         http.StatusBadRequest,
	PayloadTooLarge:         http.StatusRequestEntityTooLarge,
	UnsupportedMediaType:    http.StatusUnsupportedMediaType,
	Unauthenticated:         http.StatusUnauthorized,
	PermissionDenied:        http.StatusForbidden,
	NotFound:                http.StatusNotFound,
	MethodNotAllowed:        http.StatusMethodNotAllowed,
	QueueExists:             http.StatusConflict,
	QueueInUse:              http.StatusConflict,
	SubscriptionExists:      http.StatusConflict,
	MoveTaskRunning:         http.StatusConflict,
	ReceiptHandleInvalid:    http.StatusBadRequest,
	ReceiptHandleStale:      http.StatusGone,
	VisibilityLimitExceeded: http.StatusBadRequest,
	PurgeTooSoon:            http.StatusTooManyRequests,
	QuotaExceeded:           http.StatusForbidden,
	RateLimited:             http.StatusTooManyRequests,
	Unavailable:             http.StatusServiceUnavailable,
	Internal:                http.StatusInternalServerError,
	MessageInFlight:         http.StatusConflict,
	TopicExists:             http.StatusConflict,
	BindingExists:           http.StatusConflict,
	GroupNotParked:          http.StatusConflict,
}

// Codes lists every code, for documentation checks.
func Codes() []Code {
	out := make([]Code, 0, len(statuses))
	for c := range statuses {
		out = append(out, c)
	}
	return out
}

// Status is the HTTP status the code is answered with.
func (c Code) Status() int {
	if s, ok := statuses[c]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// Error is a failure with an API code. Field, when set, names the request field at fault as a
// path such as "messages[2].delaySeconds".
type Error struct {
	Code       Code
	Message    string
	Field      string
	RetryAfter time.Duration
	Details    map[string]any
	// Cause is the failure behind the error (a store's own error): it is in Error() and
	// reachable by errors.As for logs and retries, never in Message, which clients may see.
	Cause error
}

func (e *Error) Error() string {
	msg := e.Message
	if e.Cause != nil {
		msg += ": " + e.Cause.Error()
	}
	if e.Field != "" {
		return fmt.Sprintf("%s: %s (%s)", e.Code, msg, e.Field)
	}
	return fmt.Sprintf("%s: %s", e.Code, msg)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Cause }

// Is makes errors.Is(err, &Error{Code: X}) match any error with code X. The target must be an
// *Error itself: a sentinel that only reads as one through errors.As (package meta's refusals,
// which carry a code) is matched by identity, else every error of its code would be it.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// New returns an error with a code and a message.
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Field returns an error about one field of the request.
func Field(code Code, field, format string, args ...any) *Error {
	return &Error{Code: code, Field: field, Message: fmt.Sprintf(format, args...)}
}

// Invalid is shorthand for an invalid_argument error naming a field.
func Invalid(field, format string, args ...any) *Error {
	return Field(InvalidArgument, field, format, args...)
}

// WithRetryAfter sets the Retry-After the answer carries.
func (e *Error) WithRetryAfter(d time.Duration) *Error {
	e.RetryAfter = d
	return e
}

// WithPrefix returns a copy whose field path is prefixed, e.g. "messages[2]" + ".body".
func (e *Error) WithPrefix(prefix string) *Error {
	c := *e
	switch {
	case c.Field == "":
		c.Field = prefix
	case c.Field[0] == '[':
		c.Field = prefix + c.Field
	default:
		c.Field = prefix + "." + c.Field
	}
	return &c
}

// CodeOf returns the code of err, Internal for errors without one.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return Internal
}

// As returns err as an *Error, wrapping unknown errors as Internal.
func As(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Code: Internal, Message: "internal error"}
}

// Quota returns a quota_exceeded error naming the project limit (details.limit) it would pass.
func Quota(limit string, max int64, what string) *Error {
	return &Error{
		Code:    QuotaExceeded,
		Message: fmt.Sprintf("the project's %s limit (%d) is reached: %s", limit, max, what),
		Details: map[string]any{"limit": limit},
	}
}

// Sentinels for comparisons with errors.Is.
var (
	ErrNotFound    = &Error{Code: NotFound, Message: "not found"}
	ErrStale       = &Error{Code: ReceiptHandleStale, Message: "the receipt handle is stale: the message was received again, acknowledged, dead-lettered, purged or expired"}
	ErrUnavailable = &Error{Code: Unavailable, Message: "a storage backend is unavailable; retry"}
)
