package meta_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
)

// TestRefusalsReadAsCodes: a refusal answers apierr.CodeOf with the code the stores gave
// before, wrapped or not, and errors.Is tells each refusal from the others and from any
// *apierr.Error of the same code (the API answers them differently).
func TestRefusalsReadAsCodes(t *testing.T) {
	t.Parallel()
	refusals := []struct {
		err, sentinel error
		code          apierr.Code
	}{
		{meta.ErrBadCursor, meta.ErrBadCursor, apierr.InvalidArgument},
		{meta.ZeroID("queue"), meta.ErrZeroID, apierr.InvalidArgument},
		{meta.ErrEmptyName, meta.ErrEmptyName, apierr.InvalidArgument},
		{meta.ErrSelfDeadLetter, meta.ErrSelfDeadLetter, apierr.InvalidArgument},
		{meta.DeadLetterNotFound(ids.New()), meta.ErrDeadLetterNotFound, apierr.NotFound},
		{meta.QueueNameTaken("q"), meta.ErrQueueNameTaken, apierr.QueueExists},
		{meta.NotFound(meta.KindToken, ids.New()), meta.ErrNotFound, apierr.NotFound},
		{meta.NameNotFound(meta.KindQueue, "q"), meta.ErrNotFound, apierr.NotFound},
		{meta.IDTaken(meta.KindQueue, ids.New()), meta.ErrIDTaken, apierr.Internal},
		{meta.QueueInUse(ids.New()), meta.ErrQueueInUse, apierr.QueueInUse},
		{meta.SubscriptionExists(ids.New()), meta.ErrSubscriptionExists, apierr.SubscriptionExists},
		{meta.MoveTaskRunning(ids.New(), ids.ID{}), meta.ErrMoveTaskRunning, apierr.MoveTaskRunning},
		{meta.TopicNameTaken("t"), meta.ErrTopicNameTaken, apierr.TopicExists},
		{meta.BindingTaken(ids.New(), ids.New()), meta.ErrBindingExists, apierr.BindingExists},
		{meta.QuotaReached(meta.LimitMaxQueues, 3), meta.ErrQuota, apierr.QuotaExceeded},
	}
	for _, c := range refusals {
		for _, err := range []error{c.err, fmt.Errorf("list: %w", c.err)} {
			if got := apierr.CodeOf(err); got != c.code {
				t.Errorf("%v: code %s, want %s", err, got, c.code)
			}
			if !meta.IsRefusal(err) || meta.Refused(err) != c.sentinel || !errors.Is(err, c.sentinel) {
				t.Errorf("%v: not refusal %v", err, c.sentinel)
			}
			if !errors.Is(err, &apierr.Error{Code: c.code}) {
				t.Errorf("%v: errors.Is does not match code %s", err, c.code)
			}
		}
		for _, o := range refusals {
			if o.sentinel != c.sentinel && errors.Is(c.err, o.sentinel) {
				t.Errorf("%v is also %v", c.err, o.sentinel)
			}
		}
		if errors.Is(apierr.New(c.code, "other"), c.sentinel) || meta.IsRefusal(apierr.New(c.code, "other")) {
			t.Errorf("an *apierr.Error of code %s reads as %v", c.code, c.sentinel)
		}
	}
}

// TestFailuresAreNoRefusals: a store failure reads as its code (and a throttled one with its
// Retry-After), keeps its cause for errors.As, and is never taken for a refusal.
func TestFailuresAreNoRefusals(t *testing.T) {
	t.Parallel()
	cause := errors.New("connection reset")
	for _, c := range []struct {
		err, sentinel error
		code          apierr.Code
	}{
		{meta.Unavailable("get queue", cause), meta.ErrUnavailable, apierr.Unavailable},
		{meta.Fault("malformed item", cause), meta.ErrFault, apierr.Internal},
	} {
		for _, err := range []error{c.err, fmt.Errorf("get: %w", c.err)} {
			if !errors.Is(err, c.sentinel) || !errors.Is(err, cause) || apierr.CodeOf(err) != c.code || meta.IsRefusal(err) {
				t.Errorf("%v: sentinel %v, cause %v, code %s, refusal %v", err, errors.Is(err, c.sentinel), errors.Is(err, cause), apierr.CodeOf(err), meta.IsRefusal(err))
			}
		}
	}
	slow := &meta.Failure{Err: meta.ErrUnavailable, Op: "get", RetryAfter: time.Second}
	if ae := apierr.As(slow); ae.Code != apierr.Unavailable || ae.RetryAfter != time.Second {
		t.Fatalf("throttled failure read as %v (retry after %s)", ae, ae.RetryAfter)
	}
	if err := meta.Unavailable("get", context.DeadlineExceeded); errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%v carries the context error: the doors would answer a request deadline", err)
	}
}
