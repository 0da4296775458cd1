package api

import (
	"errors"
	"fmt"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/engine"
)

// The engines refuse requests with sentinels (package engine's refusals) that carry no code,
// field name or text; this is the one place that gives each its answer.

// refusalAnswers maps the refusals whose answer quotes no figure.
var refusalAnswers = map[error]*apierr.Error{
	engine.ErrInvalidState:          errInvalidState,
	engine.ErrBadCursor:             apierr.Invalid("cursor", "malformed cursor"),
	engine.ErrBadConsumerCursor:     apierr.Invalid("cursor", "is not a cursor of this list"),
	engine.ErrNoGroups:              apierr.Invalid("", "groups exist only on fifo queues"),
	engine.ErrBadGroupID:            apierr.Invalid("groupId", "must be 1 to 128 characters from ! to ~ (no spaces)"),
	engine.ErrBadQueueType:          apierr.Invalid("type", "must be \"standard\" or \"fifo\""),
	engine.ErrBadVisibility:         apierr.Invalid("visibilityTimeoutSeconds", "must be between 0 and %d", int(engine.MaxVisibility.Seconds())),
	engine.ErrContended:             apierr.New(apierr.Unavailable, "concurrent sends kept changing this key's message; retry"),
	engine.ErrPatchNotObject:        apierr.Invalid("body", "merge \"patch\" needs JSON objects; the new body is not one"),
	engine.ErrPatchWaitingNotObject: apierr.Invalid("body", "merge \"patch\" needs JSON objects; the waiting message's body is not one"),
}

// refusal is the API's answer to an engine refusal, nil when err is not one.
func refusal(err error) *apierr.Error {
	if err == nil || !engine.IsRefusal(err) {
		return nil
	}
	var r *engine.Refusal
	if errors.As(err, &r) {
		switch r.Err {
		case engine.ErrGroupRequired:
			return apierr.Invalid(fmt.Sprintf("messages[%d].groupId", r.Index), "is required on a fifo queue")
		case engine.ErrMergedAttributes:
			return apierr.Invalid("attributes", "the merged message would have %d attributes; the limit is %d", r.N, engine.MaxAttributes)
		case engine.ErrMergedTooLarge:
			return apierr.Field(apierr.PayloadTooLarge, "", "the merged message would be %d bytes (body and attributes); the limit is %d", r.N, engine.MaxMessageBytes)
		}
	}
	for sentinel, ae := range refusalAnswers {
		if errors.Is(err, sentinel) {
			c := *ae // callers may prefix the copy's field
			return &c
		}
	}
	return apierr.New(apierr.InvalidArgument, "the request was refused")
}

// asAPI is apierr.As with the engine refusals answered.
func asAPI(err error) *apierr.Error {
	if ae := refusal(err); ae != nil {
		return ae
	}
	return apierr.As(err)
}

// EngineError returns err with an engine refusal replaced by the API's answer to it, for the
// other door (pkg/sqs), which words its answers from the API's.
func EngineError(err error) error {
	if ae := refusal(err); ae != nil {
		return ae
	}
	return err
}
