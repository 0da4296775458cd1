package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Code is an API error code (openapi.yaml's ErrorCode).
type Code string

// The API's error codes.
const (
	CodeInvalidArgument         Code = "invalid_argument"
	CodePayloadTooLarge         Code = "payload_too_large"
	CodeUnsupportedMediaType    Code = "unsupported_media_type"
	CodeUnauthenticated         Code = "unauthenticated"
	CodePermissionDenied        Code = "permission_denied"
	CodeNotFound                Code = "not_found"
	CodeMethodNotAllowed        Code = "method_not_allowed"
	CodeQueueExists             Code = "queue_exists"
	CodeQueueInUse              Code = "queue_in_use"
	CodeSubscriptionExists      Code = "subscription_exists"
	CodeReceiptHandleInvalid    Code = "receipt_handle_invalid"
	CodeReceiptHandleStale      Code = "receipt_handle_stale"
	CodeVisibilityLimitExceeded Code = "visibility_limit_exceeded"
	CodePurgeTooSoon            Code = "purge_too_soon"
	CodeQuotaExceeded           Code = "quota_exceeded"
	CodeRateLimited             Code = "rate_limited"
	CodeUnavailable             Code = "unavailable"
	CodeInternal                Code = "internal"
	CodeMessageInFlight         Code = "message_in_flight"
	CodeMoveTaskRunning         Code = "move_task_running"
	CodeTopicExists             Code = "topic_exists"
	CodeBindingExists           Code = "binding_exists"
	CodeGroupNotParked          Code = "group_not_parked"
)

// codeStatus is the HTTP status of each code, for errors that arrive inside a 200 answer
// (a failed message of a send, a failed entry of a batch receipt call).
var codeStatus = map[Code]int{
	CodeInvalidArgument: 400, CodePayloadTooLarge: 413, CodeUnsupportedMediaType: 415,
	CodeUnauthenticated: 401, CodePermissionDenied: 403, CodeNotFound: 404, CodeMethodNotAllowed: 405,
	CodeQueueExists: 409, CodeQueueInUse: 409, CodeSubscriptionExists: 409, CodeMessageInFlight: 409, CodeMoveTaskRunning: 409,
	CodeTopicExists: 409, CodeBindingExists: 409, CodeGroupNotParked: 409,
	CodeReceiptHandleInvalid: 400, CodeReceiptHandleStale: 410, CodeVisibilityLimitExceeded: 400,
	CodePurgeTooSoon: 429, CodeQuotaExceeded: 403, CodeRateLimited: 429, CodeUnavailable: 503, CodeInternal: 500,
}

// Error is an error answer of the API: {"error": {"code", "message", "details"}}. A call
// returns it inside the typed error of its code's family (NotFoundError, ConflictError,
// RateLimitedError, …; see errortypes.go), which unwraps to it. Use errors.As to get at either,
// or the Is… helpers:
//
//	var e *client.Error
//	if errors.As(err, &e) && e.Field != "" { … }
//	var nf *client.NotFoundError
//	if errors.As(err, &nf) { … }
//	if client.IsNotFound(err) { … }
//
// errors.Is(err, client.ErrNotFound) (and the other Err… values) matches by code.
type Error struct {
	// StatusCode is the HTTP status (for a per-message or per-entry error inside a 200
	// answer, the status its code maps to).
	StatusCode int
	Code       Code
	Message    string
	// Field names the request field at fault (details.field), such as "messages[2].delaySeconds".
	Field string
	// Details is the whole details object.
	Details map[string]any
	// RetryAfter is the answer's Retry-After, when it had one.
	RetryAfter time.Duration
	// RequestID is the answer's X-Request-Id, for support.
	RequestID string
}

func (e *Error) Error() string {
	s := fmt.Sprintf("queues: %s", e.Code)
	if e.StatusCode != 0 {
		s += fmt.Sprintf(" (%d)", e.StatusCode)
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.Field != "" {
		s += " [" + e.Field + "]"
	}
	return s
}

// Is reports whether target is an *Error with the same code (so the Err… sentinels match).
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Sentinels for errors.Is; they match any *Error with their code.
var (
	ErrNotFound           = &Error{Code: CodeNotFound}
	ErrStale              = &Error{Code: CodeReceiptHandleStale}
	ErrReceiptInvalid     = &Error{Code: CodeReceiptHandleInvalid}
	ErrInvalidArgument    = &Error{Code: CodeInvalidArgument}
	ErrUnauthenticated    = &Error{Code: CodeUnauthenticated}
	ErrPermissionDenied   = &Error{Code: CodePermissionDenied}
	ErrQueueExists        = &Error{Code: CodeQueueExists}
	ErrQueueInUse         = &Error{Code: CodeQueueInUse}
	ErrSubscriptionExists = &Error{Code: CodeSubscriptionExists}
	ErrMessageInFlight    = &Error{Code: CodeMessageInFlight}
	ErrMoveTaskRunning    = &Error{Code: CodeMoveTaskRunning}
	ErrTopicExists        = &Error{Code: CodeTopicExists}
	ErrBindingExists      = &Error{Code: CodeBindingExists}
	ErrGroupNotParked     = &Error{Code: CodeGroupNotParked}
	ErrRateLimited        = &Error{Code: CodeRateLimited}
	ErrPurgeTooSoon       = &Error{Code: CodePurgeTooSoon}
	ErrQuotaExceeded      = &Error{Code: CodeQuotaExceeded}
	ErrUnavailable        = &Error{Code: CodeUnavailable}
)

// CodeOf returns the API error code in err's chain, or "" when there is none (a network
// error, a cancelled context).
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// IsNotFound: the queue, project, token, subscription or route does not exist (or is
// another project's).
func IsNotFound(err error) bool { return CodeOf(err) == CodeNotFound }

// IsStale: the receipt handle's delivery is over (received again, acknowledged,
// dead-lettered, purged or expired); nothing changed.
func IsStale(err error) bool { return CodeOf(err) == CodeReceiptHandleStale }

// IsInvalid: the request was refused as malformed (invalid_argument, receipt_handle_invalid
// or visibility_limit_exceeded); see Error.Field.
func IsInvalid(err error) bool {
	switch CodeOf(err) {
	case CodeInvalidArgument, CodeReceiptHandleInvalid, CodeVisibilityLimitExceeded:
		return true
	}
	return false
}

// IsConflict: the resource exists already or is in use (queue_exists, queue_in_use,
// subscription_exists, message_in_flight, move_task_running, topic_exists, binding_exists,
// group_not_parked).
func IsConflict(err error) bool {
	switch CodeOf(err) {
	case CodeQueueExists, CodeQueueInUse, CodeSubscriptionExists, CodeMessageInFlight, CodeMoveTaskRunning,
		CodeTopicExists, CodeBindingExists, CodeGroupNotParked:
		return true
	}
	return false
}

// IsQuotaExceeded: the call would pass one of the project's limits (quota_exceeded); QuotaLimit
// names which.
func IsQuotaExceeded(err error) bool { return CodeOf(err) == CodeQuotaExceeded }

// QuotaLimit is the project limit a quota_exceeded error names (details.limit: "maxQueues",
// "maxSubscriptions", "maxStoredBytes", "maxTopics", "sourcesPerQueue", "bindingsPerTopic"
// or "runningMoveTasks": at most 10 move tasks of the project run at once), or "".
func QuotaLimit(err error) string {
	var e *Error
	if errors.As(err, &e) && e.Code == CodeQuotaExceeded {
		s, _ := e.Details["limit"].(string)
		return s
	}
	return ""
}

// IsAuth: no, a bad or an insufficient credential (unauthenticated, permission_denied).
func IsAuth(err error) bool {
	c := CodeOf(err)
	return c == CodeUnauthenticated || c == CodePermissionDenied
}

// IsTemporary: trying again later may succeed (rate_limited, purge_too_soon, unavailable).
func IsTemporary(err error) bool {
	switch CodeOf(err) {
	case CodeRateLimited, CodePurgeTooSoon, CodeUnavailable:
		return true
	}
	return false
}

// errorBody is the wire form of an error.
type errorBody struct {
	Code    Code           `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
}

func (b errorBody) toError(status int) *Error {
	e := &Error{StatusCode: status, Code: b.Code, Message: b.Message, Details: b.Details}
	if e.StatusCode == 0 {
		e.StatusCode = codeStatus[b.Code]
	}
	if f, ok := b.Details["field"].(string); ok {
		e.Field = f
	}
	return e
}

// decodeError turns an error answer into the typed error of its code (an *Error when the code
// has no family). An answer without the API's error body (a proxy's page, say) still becomes
// one, with a code from its status.
func decodeError(resp *http.Response, raw []byte, retryAfter time.Duration) error {
	var body struct {
		Error *errorBody `json:"error"`
	}
	var e *Error
	if json.Unmarshal(raw, &body) == nil && body.Error != nil && body.Error.Code != "" {
		e = body.Error.toError(resp.StatusCode)
	} else {
		e = &Error{StatusCode: resp.StatusCode, Code: codeForStatus(resp.StatusCode), Message: http.StatusText(resp.StatusCode)}
		if len(raw) > 0 && len(raw) <= 200 {
			e.Message += ": " + string(raw)
		}
	}
	e.RetryAfter = retryAfter
	e.RequestID = resp.Header.Get("X-Request-Id")
	return e.typed()
}

func codeForStatus(status int) Code {
	switch status {
	case 400:
		return CodeInvalidArgument
	case 401:
		return CodeUnauthenticated
	case 403:
		return CodePermissionDenied
	case 404:
		return CodeNotFound
	case 405:
		return CodeMethodNotAllowed
	case 413:
		return CodePayloadTooLarge
	case 415:
		return CodeUnsupportedMediaType
	case 429:
		return CodeRateLimited
	case 502, 503, 504:
		return CodeUnavailable
	}
	return CodeInternal
}
