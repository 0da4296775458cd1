package service

import (
	"strings"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/ids"
)

// Queue setting defaults and ranges (docs/api-tour.md), for both doors.
const (
	DefaultVisibilitySeconds = 30
	MaxVisibilitySeconds     = 43200
	DefaultRetentionSeconds  = 345600
	MinRetentionSeconds      = 60
	MaxRetentionSeconds      = 1209600
	MaxDelaySeconds          = 900
	MaxReceiveWaitSeconds    = 20
)

// FIFOSuffix ends a fifo queue's name where it has one; no standard queue's name may.
const FIFOSuffix = ".fifo"

// ValidateQueueName checks a new queue's name (field "name"): 1 to 80 of A-Z, a-z, 0-9, _
// and -, or, on a fifo queue, such a name ending in ".fifo" (80 in all), not starting with
// the queue slug prefix. A name may look like a UUID (SQS code often names queues so, SPEC
// §2): a UUID-shaped reference is tried as an id and then as a name (pkg/api lookupQueue).
func ValidateQueueName(name string, fifo bool) *apierr.Error {
	switch {
	case !LooksLikeQueueName(name):
		return apierr.Invalid("name", "must be 1 to 80 of A-Z, a-z, 0-9, _ and - (a fifo queue's may end in %q)", FIFOSuffix)
	case strings.HasSuffix(name, FIFOSuffix) && !fifo:
		return apierr.Invalid("name", "only a fifo queue's name may end in %q", FIFOSuffix)
	case strings.HasPrefix(name, ids.QueuePrefix):
		return apierr.Invalid("name", "must not start with %q (it would be read as a queue slug)", ids.QueuePrefix)
	}
	return nil
}

// LooksLikeQueueName reports whether s has a queue name's shape,
// ^(?:[A-Za-z0-9_-]{1,80}|[A-Za-z0-9_-]{1,75}\.fifo)$: a name, which only a fifo queue may end
// in ".fifo" (ValidateQueueName checks that part). Every request naming a queue checks it, so
// it is a loop rather than a regexp.
func LooksLikeQueueName(s string) bool {
	if base, ok := strings.CutSuffix(s, FIFOSuffix); ok && len(base) >= 1 && len(base) <= 75 && nameChars(base) {
		return true
	}
	return len(s) >= 1 && len(s) <= 80 && nameChars(s)
}

// nameChars reports whether every byte of s is one of A-Z, a-z, 0-9, _ and -.
func nameChars(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
