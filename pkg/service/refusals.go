package service

import (
	"cmp"
	"errors"
	"fmt"
	"time"

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
	engine.ErrStale:                 apierr.ErrStale,
	engine.ErrNoMessage:             apierr.New(apierr.NotFound, "the queue holds no such message (unknown, or acknowledged, expired, purged or dead-lettered)"),
	engine.ErrMessageInFlight:       apierr.New(apierr.MessageInFlight, "the message is in flight: a consumer holds it; settle it with its receipt handle"),
	engine.ErrNoBinding:             apierr.New(apierr.NotFound, "the topic has no such binding"),
	engine.ErrTooLarge:              apierr.New(apierr.PayloadTooLarge, "the message is over the queue's maxMessageBytes"),
	engine.ErrStoredBytesExceeded:   storedBytesUnquoted,
	engine.ErrDedupTaken:            apierr.New(apierr.InvalidArgument, "the queue's deduplication window holds the dedup id for another message"),
	engine.ErrVisibilityLimit:       apierr.New(apierr.VisibilityLimitExceeded, "the new deadline would be more than %s after the message was received", engine.MaxInFlight),
}

// storedBytesUnquoted answers a bare engine.ErrStoredBytesExceeded (the engines return a
// *engine.StoredBytesExceeded quoting the limit, which figuresAnswer words).
var storedBytesUnquoted = &apierr.Error{Code: apierr.QuotaExceeded, Details: map[string]any{"limit": meta.LimitMaxStoredBytes},
	Message: "the send would take the project's stored bytes past its limit (maxStoredBytes); consume or purge messages first"}

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

// metaRefusal answers a metadata store's refusal as the stores did when they wrote the
// answers themselves.
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
		return apierr.Field(apierr.NotFound, "redrive.deadLetterQueue", "dead-letter queue %s not found", r.ID)
	case meta.ErrQueueNameTaken:
		return apierr.Field(apierr.QueueExists, "name", "a queue named %q already exists", r.Name)
	case meta.ErrNotFound:
		return notFoundAnswer(r)
	case meta.ErrIDTaken:
		return idTakenAnswer(r)
	case meta.ErrQuota:
		return quotaAnswer(r.Name, r.N)
	}
	if ae := recordAnswer(sentinel, r); ae != nil {
		return ae
	}
	if ae, ok := metaAnswers[sentinel]; ok {
		c := *ae // callers may prefix the copy's field
		return &c
	}
	return apierr.New(apierr.CodeOf(sentinel), "the request was refused")
}

// recordAnswer answers the refusals about one record that a create or delete ran into, nil
// for the others.
func recordAnswer(sentinel error, r meta.Refusal) *apierr.Error {
	switch sentinel {
	case meta.ErrQueueInUse:
		return apierr.New(apierr.QueueInUse, "queue %s is the dead-letter queue of another queue", r.ID)
	case meta.ErrSubscriptionExists:
		return apierr.New(apierr.SubscriptionExists, "queue %s already has a subscription", r.ID)
	case meta.ErrMoveTaskRunning:
		if r.Other.IsZero() {
			return apierr.New(apierr.MoveTaskRunning, "queue %s has a running move task", r.ID)
		}
		return apierr.New(apierr.MoveTaskRunning, "queue %s has a running move task (%s)", r.ID, r.Other)
	case meta.ErrTopicNameTaken:
		return apierr.New(apierr.TopicExists, "topic name %q is taken in this project", r.Name)
	case meta.ErrBindingExists:
		return apierr.New(apierr.BindingExists, "queue %s is bound to topic %s already; change that binding's filter instead", r.ID, r.Other)
	}
	return nil
}

// notFoundAnswer answers meta.ErrNotFound: the record by kind and id or name ("not found"
// alone when the refusal names none).
func notFoundAnswer(r meta.Refusal) *apierr.Error {
	switch {
	case r.Record == meta.KindSubscription:
		return apierr.New(apierr.NotFound, "queue %s has no subscription", r.ID)
	case r.Record == "":
		return apierr.New(apierr.NotFound, "not found")
	case r.Name != "":
		return apierr.New(apierr.NotFound, "%s %q not found", r.Record, r.Name)
	}
	return apierr.New(apierr.NotFound, "%s %s not found", r.Record, r.ID)
}

// idTakenAnswer answers meta.ErrIDTaken (an internal error: ids are the service's, not the
// client's).
func idTakenAnswer(r meta.Refusal) *apierr.Error {
	if r.Record == meta.KindProject || r.Record == meta.KindToken {
		return apierr.New(apierr.Internal, "%s %s already exists", r.Record, r.ID)
	}
	return apierr.New(apierr.Internal, "%s id %s already exists", r.Record, r.ID)
}

// quotaHints is what a project past each limit can do, as its answer says.
var quotaHints = map[string]string{
	meta.LimitMaxQueues:        "delete a queue or ask for a higher limit",
	meta.LimitMaxSubscriptions: "delete a subscription or ask for a higher limit",
	meta.LimitMaxTopics:        "delete a topic or ask for a higher limit",
	meta.LimitRunningMoveTasks: "cancel one of its running move tasks or wait for one to end",
}

// quotaAnswer answers meta.ErrQuota about the limit named, of value max.
func quotaAnswer(limit string, max int64) *apierr.Error {
	switch limit {
	case meta.LimitSourcesPerQueue:
		return &apierr.Error{Code: apierr.QuotaExceeded, Details: map[string]any{"limit": limit},
			Message: fmt.Sprintf("a queue has at most %d sources: unbind one first", max)}
	case meta.LimitBindingsPerTopic:
		return &apierr.Error{Code: apierr.QuotaExceeded, Details: map[string]any{"limit": limit},
			Message: fmt.Sprintf("a topic has at most %d bindings: unbind a queue first", max)}
	}
	return apierr.Quota(limit, max, quotaHints[limit])
}

// EngineRefusal answers an engine's refusal.
func EngineRefusal(err error) *apierr.Error {
	if ae := figuresAnswer(err); ae != nil {
		return ae
	}
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
		case engine.ErrNoState:
			return apierr.New(apierr.NotFound, "the topic holds no state for key %q", r.Key)
		case engine.ErrNoBinding:
			if !r.Binding.IsZero() {
				return apierr.New(apierr.NotFound, "the topic has no binding %s", r.Binding)
			}
		case engine.ErrPurgeTooSoon:
			return apierr.New(apierr.PurgeTooSoon, "a queue can be purged once every %s; the next purge is possible in %s",
				engine.PurgeInterval, r.Wait.Round(time.Second)).WithRetryAfter(r.Wait)
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

// figuresAnswer answers the engines' typed refusals, which carry the figures their answers
// quote (found through any wrapping, a *engine.Refusal's included), nil for the others.
func figuresAnswer(err error) *apierr.Error {
	var tl *engine.TooLarge
	var sb *engine.StoredBytesExceeded
	var dt *engine.DedupTaken
	switch {
	case errors.As(err, &tl):
		return apierr.New(apierr.PayloadTooLarge, "the message is %d bytes (body and attributes); the queue's maxMessageBytes is %d", tl.Bytes, tl.Limit)
	case errors.As(err, &sb):
		return storedBytesAnswer(sb.Limit)
	case errors.As(err, &dt):
		return apierr.New(apierr.InvalidArgument, "the queue's deduplication window holds dedup id %q for another message", dt.DedupID)
	}
	return nil
}

// storedBytesAnswer answers a store past the project's maxStoredBytes, limit.
func storedBytesAnswer(limit int64) *apierr.Error {
	return &apierr.Error{Code: apierr.QuotaExceeded, Details: map[string]any{"limit": meta.LimitMaxStoredBytes},
		Message: fmt.Sprintf("the send would take the project's stored bytes past its limit of %d bytes "+
			"(maxStoredBytes); consume or purge messages first", limit)}
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
