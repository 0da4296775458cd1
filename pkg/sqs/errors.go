package sqs

import (
	"context"
	"errors"
	"fmt"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/service"
)

// Error is an SQS error: its JSON-protocol name (the __type after '#'), the query protocol's
// code (also sent as x-amzn-query-error on the JSON protocol), the HTTP status and whether
// the caller is at fault.
type Error struct {
	Name      string // e.g. QueueDoesNotExist
	QueryCode string // e.g. AWS.SimpleQueueService.NonExistentQueue
	Status    int
	Sender    bool
	Message   string
	// model is true for errors of the SQS service model (namespace com.amazonaws.sqs); the
	// others are AWS's common errors.
	model bool
}

func (e *Error) Error() string { return e.Name + ": " + e.Message }

// typeName is the JSON protocol's __type.
func (e *Error) typeName() string {
	if e.model {
		return "com.amazonaws.sqs#" + e.Name
	}
	return "com.amazon.coral.service#" + e.Name
}

// fault is the query protocol's <Type> and the x-amzn-query-error suffix.
func (e *Error) fault() string {
	if e.Sender {
		return "Sender"
	}
	return "Receiver"
}

type errKind struct {
	name, query string
	status      int
	model       bool
}

// The errors the door answers (AWS's SQS API reference names, query codes and statuses).
var (
	errQueueDoesNotExist = errKind{"QueueDoesNotExist", "AWS.SimpleQueueService.NonExistentQueue", 400, true}
	errQueueNameExists   = errKind{"QueueNameExists", "QueueAlreadyExists", 400, true}
	errInvalidAttrName   = errKind{"InvalidAttributeName", "InvalidAttributeName", 400, true}
	errInvalidAttrValue  = errKind{"InvalidAttributeValue", "InvalidAttributeValue", 400, true}
	errPurgeInProgress   = errKind{"PurgeQueueInProgress", "AWS.SimpleQueueService.PurgeQueueInProgress", 403, true}
	errReceiptInvalid    = errKind{"ReceiptHandleIsInvalid", "ReceiptHandleIsInvalid", 400, true}
	errTooManyEntries    = errKind{"TooManyEntriesInBatchRequest", "AWS.SimpleQueueService.TooManyEntriesInBatchRequest", 400, true}
	errEmptyBatch        = errKind{"EmptyBatchRequest", "AWS.SimpleQueueService.EmptyBatchRequest", 400, true}
	errIDsNotDistinct    = errKind{"BatchEntryIdsNotDistinct", "AWS.SimpleQueueService.BatchEntryIdsNotDistinct", 400, true}
	errInvalidEntryID    = errKind{"InvalidBatchEntryId", "AWS.SimpleQueueService.InvalidBatchEntryId", 400, true}
	errBatchTooLong      = errKind{"BatchRequestTooLong", "AWS.SimpleQueueService.BatchRequestTooLong", 400, true}
	errInvalidContents   = errKind{"InvalidMessageContents", "InvalidMessageContents", 400, true}
	errThrottled         = errKind{"RequestThrottled", "RequestThrottled", 400, true}
	errOverLimit         = errKind{"OverLimit", "OverLimit", 403, true}

	errInvalidAction       = errKind{"InvalidAction", "InvalidAction", 400, false}
	errMissingAction       = errKind{"MissingAction", "MissingAction", 400, false}
	errInvalidParameter    = errKind{"InvalidParameterValue", "InvalidParameterValue", 400, false}
	errMissingParameter    = errKind{"MissingParameter", "MissingParameter", 400, false}
	errInvalidClientToken  = errKind{"InvalidClientTokenId", "InvalidClientTokenId", 403, false}
	errSignature           = errKind{"SignatureDoesNotMatch", "SignatureDoesNotMatch", 403, false}
	errIncompleteSignature = errKind{"IncompleteSignature", "IncompleteSignature", 400, false}
	errMissingAuth         = errKind{"MissingAuthenticationToken", "MissingAuthenticationToken", 403, false}
	errAccessDenied        = errKind{"AccessDenied", "AccessDenied", 403, false}
	errMalformedQuery      = errKind{"MalformedQueryString", "MalformedQueryString", 400, false}
	errSerialization       = errKind{"SerializationException", "SerializationException", 400, false}
	errInternal            = errKind{"InternalFailure", "InternalFailure", 500, false}
	errUnavailable         = errKind{"ServiceUnavailable", "ServiceUnavailable", 503, false}
)

func newErr(k errKind, format string, args ...any) *Error {
	return &Error{Name: k.name, QueryCode: k.query, Status: k.status, Sender: k.status < 500,
		Message: fmt.Sprintf(format, args...), model: k.model}
}

// invalidParam is SQS's answer to a parameter value out of range or malformed.
func invalidParam(name string, format string, args ...any) *Error {
	return newErr(errInvalidParameter, "Value for parameter %s is invalid. Reason: %s", name, fmt.Sprintf(format, args...))
}

// noQueueText is AWS's text for a queue that does not exist on the JSON protocol;
// noQueueQueryText is the query protocol's (writeError picks it).
const (
	noQueueText      = "The specified queue does not exist."
	noQueueQueryText = "The specified queue does not exist for this wsdl version."
)

func errNoQueue() *Error { return newErr(errQueueDoesNotExist, noQueueText) }

// invalidValue is SQS's answer naming a parameter's value and the reason it is refused.
func invalidValue(name string, value any, format string, args ...any) *Error {
	return newErr(errInvalidParameter, "Value %v for parameter %s is invalid. Reason: %s", value, name, fmt.Sprintf(format, args...))
}

func missingParam(name string) *Error {
	return newErr(errMissingParameter, "The request must contain the parameter %s.", name)
}

// fromAPI maps the shared operations' errors to SQS's.
func fromAPI(err error) *Error {
	err = service.Answer(err)
	var se *Error
	if errors.As(err, &se) {
		return se
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return newErr(errUnavailable, "storage did not answer in time; retry")
	}
	ae := apierr.As(err)
	switch ae.Code {
	case apierr.NotFound:
		return errNoQueue()
	case apierr.QueueExists:
		return newErr(errQueueNameExists, "A queue already exists with the same name and a different value for an attribute.")
	case apierr.InvalidArgument, apierr.VisibilityLimitExceeded, apierr.PayloadTooLarge, apierr.QueueInUse:
		return newErr(errInvalidParameter, "%s", ae.Message)
	case apierr.PurgeTooSoon:
		return newErr(errPurgeInProgress, "Only one PurgeQueue operation on a queue is allowed every 60 seconds.")
	case apierr.RateLimited:
		return newErr(errThrottled, "%s", ae.Message)
	case apierr.QuotaExceeded:
		// A project limit (maxQueues, maxStoredBytes): SQS's answer to an action past a limit.
		return newErr(errOverLimit, "%s", ae.Message)
	case apierr.ReceiptHandleInvalid:
		return newErr(errReceiptInvalid, "The input receipt handle is invalid.")
	case apierr.ReceiptHandleStale:
		return newErr(errInvalidParameter, "Value for parameter ReceiptHandle is invalid. Reason: Message does not exist or is not available for visibility timeout change.")
	case apierr.Unauthenticated:
		return newErr(errInvalidClientToken, "The security token included in the request is invalid.")
	case apierr.PermissionDenied:
		return newErr(errAccessDenied, "%s", ae.Message)
	case apierr.Unavailable:
		return newErr(errUnavailable, "the service is unavailable; retry")
	}
	return newErr(errInternal, "internal error")
}
