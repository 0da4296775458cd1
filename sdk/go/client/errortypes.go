package client

// The typed errors: one type per family of API error codes, named as the TypeScript and
// Python SDKs name their error classes, so code can branch on a kind of failure without
// listing codes:
//
//	var nf *client.NotFoundError
//	if errors.As(err, &nf) { … }
//	var rl *client.RateLimitedError
//	if errors.As(err, &rl) { time.Sleep(rl.RetryAfter) }
//
// A call that fails with an error answer returns one of these (an *Error when its code and
// status belong to no family). Each embeds the *Error, so its fields (Code, StatusCode,
// Message, Field, Details, RetryAfter, RequestID) read directly, and unwraps to it, so
// errors.As(err, &e) with e an *Error, errors.Is(err, client.ErrNotFound) and the Is…
// helpers work on every error as before. errors.As also finds the typed error of a bare
// *Error (FailedMessage.Err, say, or a test double's &client.Error{Code: client.CodeNotFound}),
// and a ForbiddenError is an AuthError, an InvalidReceiptError a ValidationError, as the other
// SDKs' subclasses are.

// apiError names the embedded *Error of the typed errors: embedded as Error, its field would
// hide the Error method, and the typed errors would not be errors.
type apiError = Error

// ValidationError: the service refused the request as malformed (400 invalid_argument,
// visibility_limit_exceeded, receipt_handle_invalid, 405, 413 payload_too_large, 415
// unsupported_media_type); Field names the request field at fault.
type ValidationError struct{ *apiError }

// AuthError: no token, an unknown, expired or revoked one (401 unauthenticated); and, as
// errors.As finds, a ForbiddenError.
type AuthError struct{ *apiError }

// ForbiddenError: the token is good but lacks the scope or the project (403
// permission_denied). errors.As also finds it as an *AuthError.
type ForbiddenError struct{ *apiError }

// NotFoundError: the queue, topic, message, task, project or route does not exist, or is
// another project's (404 not_found).
type NotFoundError struct{ *apiError }

// ConflictError: the state forbids the call (409): the name is taken (queue_exists,
// topic_exists, subscription_exists, binding_exists), the queue is in use, a move task runs,
// the message is in flight.
type ConflictError struct{ *apiError }

// StaleReceiptError: the receipt handle's delivery is over (410 receipt_handle_stale):
// received again, settled, dead-lettered, purged or expired; nothing changed.
type StaleReceiptError struct{ *apiError }

// InvalidReceiptError: the receipt handle is not one the service issued (400
// receipt_handle_invalid). errors.As also finds it as a *ValidationError.
type InvalidReceiptError struct{ *apiError }

// QuotaExceededError: the call would pass one of the project's limits (403 quota_exceeded);
// Limit names which.
type QuotaExceededError struct{ *apiError }

// Limit is the project limit the call would pass (details.limit: "maxQueues",
// "maxSubscriptions", "maxStoredBytes", "maxTopics", "sourcesPerQueue", "bindingsPerTopic",
// "runningMoveTasks"), or "".
func (e *QuotaExceededError) Limit() string {
	s, _ := e.Details["limit"].(string)
	return s
}

// RateLimitedError: too many calls (429 rate_limited, already retried by the client's
// RetryPolicy; or purge_too_soon); RetryAfter says when to try again.
type RateLimitedError struct{ *apiError }

// UnavailableError: the service cannot serve the call now (503 unavailable, or a proxy's
// 502/503/504); retried like rate_limited before it is returned.
type UnavailableError struct{ *apiError }

// InternalError: the service failed (500 internal, or another 5xx); RequestID identifies the
// call for support.
type InternalError struct{ *apiError }

// Unwrap returns the *Error.
func (e *ValidationError) Unwrap() error { return e.apiError }

// Unwrap returns the *Error.
func (e *AuthError) Unwrap() error { return e.apiError }

// Unwrap returns the *Error.
func (e *ForbiddenError) Unwrap() error { return e.apiError }

// Unwrap returns the *Error.
func (e *NotFoundError) Unwrap() error { return e.apiError }

// Unwrap returns the *Error.
func (e *ConflictError) Unwrap() error { return e.apiError }

// Unwrap returns the *Error.
func (e *StaleReceiptError) Unwrap() error { return e.apiError }

// Unwrap returns the *Error.
func (e *InvalidReceiptError) Unwrap() error { return e.apiError }

// Unwrap returns the *Error.
func (e *QuotaExceededError) Unwrap() error { return e.apiError }

// Unwrap returns the *Error.
func (e *RateLimitedError) Unwrap() error { return e.apiError }

// Unwrap returns the *Error.
func (e *UnavailableError) Unwrap() error { return e.apiError }

// Unwrap returns the *Error.
func (e *InternalError) Unwrap() error { return e.apiError }

// family is the kind of failure a code belongs to; each has its typed error.
type family int

const (
	famNone family = iota
	famValidation
	famAuth
	famForbidden
	famNotFound
	famConflict
	famStale
	famInvalidReceipt
	famQuota
	famRateLimited
	famUnavailable
	famInternal
)

// codeFamily is the family of each code the SDK knows, as the other SDKs class them.
var codeFamily = map[Code]family{
	CodeInvalidArgument: famValidation, CodePayloadTooLarge: famValidation, CodeUnsupportedMediaType: famValidation,
	CodeMethodNotAllowed: famValidation, CodeVisibilityLimitExceeded: famValidation,
	CodeReceiptHandleInvalid: famInvalidReceipt,
	CodeUnauthenticated:      famAuth, CodePermissionDenied: famForbidden, CodeQuotaExceeded: famQuota,
	CodeNotFound:    famNotFound,
	CodeQueueExists: famConflict, CodeQueueInUse: famConflict, CodeSubscriptionExists: famConflict,
	CodeMessageInFlight: famConflict, CodeMoveTaskRunning: famConflict, CodeTopicExists: famConflict,
	CodeBindingExists: famConflict, CodeGroupNotParked: famConflict,
	CodeReceiptHandleStale: famStale,
	CodeRateLimited:        famRateLimited, CodePurgeTooSoon: famRateLimited,
	CodeUnavailable: famUnavailable, CodeInternal: famInternal,
}

// statusFamily classes a code this SDK does not know yet by its HTTP status, so a new 404
// code of a later server is still a NotFoundError.
var statusFamily = map[int]family{
	400: famValidation, 401: famAuth, 403: famForbidden, 404: famNotFound, 405: famValidation,
	409: famConflict, 410: famStale, 413: famValidation, 415: famValidation, 429: famRateLimited,
	502: famUnavailable, 503: famUnavailable, 504: famUnavailable,
}

func (e *Error) family() family {
	if f, ok := codeFamily[e.Code]; ok {
		return f
	}
	if f, ok := statusFamily[e.StatusCode]; ok {
		return f
	}
	if e.StatusCode >= 500 {
		return famInternal
	}
	return famNone
}

// typed returns e as the typed error of its family (e itself when it has none).
func (e *Error) typed() error {
	switch e.family() {
	case famValidation:
		return &ValidationError{e}
	case famAuth:
		return &AuthError{e}
	case famForbidden:
		return &ForbiddenError{e}
	case famNotFound:
		return &NotFoundError{e}
	case famConflict:
		return &ConflictError{e}
	case famStale:
		return &StaleReceiptError{e}
	case famInvalidReceipt:
		return &InvalidReceiptError{e}
	case famQuota:
		return &QuotaExceededError{e}
	case famRateLimited:
		return &RateLimitedError{e}
	case famUnavailable:
		return &UnavailableError{e}
	case famInternal:
		return &InternalError{e}
	}
	return e
}

// As lets errors.As find the typed error of e's family (for a bare *Error, or a typed error
// asked for its parent: an *AuthError of a ForbiddenError, a *ValidationError of an
// InvalidReceiptError). The typed errors embed *Error, so they have this method too.
func (e *Error) As(target any) bool {
	f := e.family()
	switch t := target.(type) {
	case **ValidationError:
		return (f == famValidation || f == famInvalidReceipt) && set(t, &ValidationError{e})
	case **AuthError:
		return (f == famAuth || f == famForbidden) && set(t, &AuthError{e})
	case **ForbiddenError:
		return f == famForbidden && set(t, &ForbiddenError{e})
	case **NotFoundError:
		return f == famNotFound && set(t, &NotFoundError{e})
	case **ConflictError:
		return f == famConflict && set(t, &ConflictError{e})
	case **StaleReceiptError:
		return f == famStale && set(t, &StaleReceiptError{e})
	case **InvalidReceiptError:
		return f == famInvalidReceipt && set(t, &InvalidReceiptError{e})
	case **QuotaExceededError:
		return f == famQuota && set(t, &QuotaExceededError{e})
	case **RateLimitedError:
		return f == famRateLimited && set(t, &RateLimitedError{e})
	case **UnavailableError:
		return f == famUnavailable && set(t, &UnavailableError{e})
	case **InternalError:
		return f == famInternal && set(t, &InternalError{e})
	}
	return false
}

// set stores v in *p and reports true: As's cases store only once their family matched.
func set[T any](p *T, v T) bool {
	*p = v
	return true
}
