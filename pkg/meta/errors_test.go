package meta_test

import (
	"errors"
	"fmt"
	"testing"

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
