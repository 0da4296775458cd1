package engine

import (
	"errors"
	"maps"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/engine/internal/mergepatch"
)

// MaxKeyLength is the longest conflation key (SPEC §13: 1–128 characters from ! to ~).
const MaxKeyLength = 128

// Merged is what a keyed send makes of the waiting message of its key (SPEC §13): with
// MergeReplace the new body and attributes; with MergePatch the waiting body merged with the
// new one as an RFC 7396 JSON Merge Patch, and the attributes merged, the new values winning.
// Both engines call it, so a merge is the same whichever stores the message. The error, for
// that message only, is ErrPatchNotObject or ErrPatchWaitingNotObject when a patch's body (new
// or waiting) is not a JSON object, and a Refusal of ErrMergedAttributes or ErrMergedTooLarge
// when the result passes MaxAttributes or MaxMessageBytes.
func Merged(body string, attrs map[string]string, m Message) (string, map[string]string, error) {
	if m.Merge != MergePatch {
		return m.Body, m.Attributes, nil
	}
	if !mergepatch.IsObject([]byte(m.Body)) {
		return "", nil, ErrPatchNotObject
	}
	b, err := mergepatch.Apply([]byte(body), []byte(m.Body))
	if err != nil {
		return "", nil, ErrPatchWaitingNotObject
	}
	var out map[string]string
	if len(attrs)+len(m.Attributes) > 0 {
		out = maps.Clone(attrs)
		if out == nil {
			out = map[string]string{}
		}
		maps.Copy(out, m.Attributes)
	}
	n := len(out)
	if _, ok := out[TraceparentAttribute]; ok {
		n-- // the service's own, not counted (PayloadBytes)
	}
	if n > MaxAttributes {
		return "", nil, &Refusal{Err: ErrMergedAttributes, N: int64(n)}
	}
	if n := PayloadBytes(string(b), out); n > MaxMessageBytes {
		return "", nil, &Refusal{Err: ErrMergedTooLarge, N: n}
	}
	return string(b), out, nil
}

// MergeRefused reports whether err is Merged's refusal of one message (not a failure of the
// call the message came in).
func MergeRefused(err error) bool {
	return errors.Is(err, ErrPatchNotObject) || errors.Is(err, ErrPatchWaitingNotObject) ||
		errors.Is(err, ErrMergedAttributes) || errors.Is(err, ErrMergedTooLarge)
}

// ErrNoMessage answers DeleteMessage for a message the queue does not hold: unknown, or gone
// (acknowledged, expired, purged, dead-lettered).
func ErrNoMessage() error {
	return apierr.New(apierr.NotFound, "the queue holds no such message (unknown, or acknowledged, expired, purged or dead-lettered)")
}

// ErrMessageInFlight answers DeleteMessage for a message a consumer holds.
func ErrMessageInFlight() error {
	return apierr.New(apierr.MessageInFlight, "the message is in flight: a consumer holds it; settle it with its receipt handle")
}

// IsJSONObject reports whether body is one JSON object, as a "patch" send's body must be.
func IsJSONObject(body string) bool { return mergepatch.IsObject([]byte(body)) }
