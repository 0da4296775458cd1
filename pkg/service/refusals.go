package service

import (
	"cmp"
	"errors"
	"fmt"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/meta"
)

// The engines and the metadata stores refuse requests with sentinels (package engine's and
// package meta's refusals) that carry no field name or client text; this is the one place
// that gives each its answer, for both doors (pkg/api answers /v1 with it; pkg/sqs words its
// answers from it).

// ErrInvalidState answers a browse of an unknown state (the query parameter "state"): the one
// place that names it, whether the API's check or an engine's (engine.ErrInvalidState) caught it.
var ErrInvalidState = apierr.Invalid("state", "must be visible, inFlight or delayed")

// ErrConsumerRequired answers a receive of an exclusive queue that names no consumer.
var ErrConsumerRequired = apierr.Invalid("consumerId",
	"is required on this queue: its groupPolicy is \"exclusive\", which binds each message group to the consumer that receives it")

// refusalAnswers maps the refusals whose answer quotes no figure.
var refusalAnswers = map[error]*apierr.Error{
	engine.ErrInvalidState:          ErrInvalidState,
	engine.ErrBadCursor:             apierr.Invalid("cursor", "malformed cursor"),
	engine.ErrBadConsumerCursor:     apierr.Invalid("cursor", "is not a cursor of this list"),
	engine.ErrNoGroups:              apierr.Invalid("", "groups exist only on fifo queues"),
	engine.ErrConsumerRequired:      ErrConsumerRequired,
	engine.ErrBadGroupID:            apierr.Invalid("groupId", "must be 1 to 128 characters from ! to ~ (no spaces)"),
	engine.ErrNoSuchGroup:           apierr.Field(apierr.NotFound, "groupId", "the queue has no such group"),
	engine.ErrGroupNotParked:        apierr.Field(apierr.GroupNotParked, "groupId", "the group is not parked"),
	engine.ErrBadQueueType:          apierr.Invalid("type", "must be \"standard\" or \"fifo\""),
	engine.ErrBadVisibility:         apierr.Invalid("visibilityTimeoutSeconds", "must be between 0 and %d", int(engine.MaxVisibility.Seconds())),
	engine.ErrContended:             apierr.New(apierr.Unavailable, "concurrent sends kept changing this key's message; retry"),
	engine.ErrPatchNotObject:        apierr.Invalid("body", "merge \"patch\" needs JSON objects; the new body is not one"),
	engine.ErrPatchWaitingNotObject: apierr.Invalid("body", "merge \"patch\" needs JSON objects; the waiting message's body is not one"),
	engine.ErrPatchTooDeep:          apierr.Invalid("body", "merge \"patch\" needs JSON objects nesting at most %d deep; the new body nests deeper", engine.MaxPatchDepth),
	engine.ErrPatchWaitingTooDeep:   apierr.Invalid("body", "merge \"patch\" needs JSON objects nesting at most %d deep; the waiting message's body nests deeper", engine.MaxPatchDepth),
}

// metaAnswers maps the metadata stores' refusals whose answer quotes nothing.
var metaAnswers = map[error]*apierr.Error{
	meta.ErrBadCursor:      apierr.Invalid("cursor", "the cursor is not one this listing returned"),
	meta.ErrEmptyName:      apierr.Invalid("name", "queue name is empty"),
	meta.ErrSelfDeadLetter: apierr.Invalid("redrive.deadLetterQueue", "a queue cannot be its own dead-letter queue"),
}

// Refusal is the service's answer to an engine's or a metadata store's refusal, nil when err
// is not one.
func Refusal(err error) *apierr.Error {
	switch {
	case err == nil:
		return nil
	case engine.IsRefusal(err):
		return EngineRefusal(err)
	case meta.IsRefusal(err):
		return metaRefusal(err)
	}
	return nil
}

// metaRefusal answers a metadata store's refusal as the stores did when they named fields.
func metaRefusal(err error) *apierr.Error {
	var r meta.Refusal // the figures the answer quotes; a bare sentinel has none
	var with *meta.Refusal
	if errors.As(err, &with) {
		r = *with
	}
	sentinel := meta.Refused(err)
	switch sentinel {
	case meta.ErrZeroID:
		return apierr.Invalid("id", "%s id is zero", r.Record)
	case meta.ErrDeadLetterNotFound:
		return apierr.Field(apierr.NotFound, "redrive.deadLetterQueue", "dead-letter queue %s not found", r.Queue)
	case meta.ErrQueueNameTaken:
		return apierr.Field(apierr.QueueExists, "name", "a queue named %q already exists", r.Name)
	}
	if ae, ok := metaAnswers[sentinel]; ok {
		c := *ae // callers may prefix the copy's field
		return &c
	}
	return apierr.New(apierr.CodeOf(sentinel), "the request was refused")
}

// EngineRefusal answers an engine's refusal.
func EngineRefusal(err error) *apierr.Error {
	var r *engine.Refusal
	if errors.As(err, &r) {
		switch r.Err {
		case engine.ErrGroupRequired:
			return apierr.Invalid(fmt.Sprintf("messages[%d].groupId", r.Index), "is required on a fifo queue")
		case engine.ErrMergedAttributes:
			return apierr.Invalid("attributes", "the merged message would have %d attributes; the limit is %d", r.N, engine.MaxAttributes)
		case engine.ErrMergeBudget:
			return apierr.Field(apierr.PayloadTooLarge, "body", "this send's patch merges would read %d bytes of waiting bodies and patches; the limit is %d a send (merges are made again when concurrent sends change the key): send fewer or smaller patches, or retry", r.N, engine.MergeBudgetBytes)
		case engine.ErrMergedTooLarge:
			return apierr.Field(apierr.PayloadTooLarge, "", "the merged message would be %d bytes (body and attributes); the queue's maxMessageBytes is %d", r.N, cmp.Or(r.Limit, int64(engine.MaxMessageBytes)))
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

// AsAPI is apierr.As with the refusals answered.
func AsAPI(err error) *apierr.Error {
	if ae := Refusal(err); ae != nil {
		return ae
	}
	return apierr.As(err)
}

// Answer returns err with a refusal (an engine's or a metadata store's) replaced by the
// service's answer to it, for the SQS door (pkg/sqs), which words its answers from /v1's.
func Answer(err error) error {
	if ae := Refusal(err); ae != nil {
		return ae
	}
	return err
}
