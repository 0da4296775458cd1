package engine

import (
	"errors"
	"maps"

	"github.com/queueshq/queues/pkg/engine/internal/mergepatch"
)

// MaxKeyLength is the longest conflation key (docs/lifecycle.md#conflation-and-delta-publish: 1–128
// characters from ! to ~).
const MaxKeyLength = 128

// MaxPatchDepth is how deep a "patch" body, new or waiting, may nest objects and arrays ({}
// is 1 deep): the merge recurses once per level.
const MaxPatchDepth = mergepatch.MaxDepth

// MergeBudgetBytes bounds the merge work of one send call: the bytes of waiting bodies and
// patches its patch merges read, summed over every merge of the call. A Redis send merges
// again each time a concurrent send changed the key (up to 32 tries), so without a bound one
// send of ten 1 MiB patches could cost 32 × 10 × 2 MiB = 640 MiB of merging. A send's first
// try reads at most its request (3 MiB of patches) and MaxBatch waiting bodies of at most
// MaxMessageBytes (10 MiB), so the bound only refuses retries.
const MergeBudgetBytes = 16 << 20

// MergeBudget is what one send call may still spend on merges (see MergeBudgetBytes), and
// the largest message a merge may make (the queue's MessageLimit; 0: MaxMessageBytes). The
// zero value is a spent budget; NewMergeBudget makes a full one.
type MergeBudget struct {
	spent, limit int64
	msgLimit     int
}

// NewMergeBudget returns a budget of MergeBudgetBytes, for one send call.
func NewMergeBudget() *MergeBudget { return &MergeBudget{limit: MergeBudgetBytes} }

// For sets the largest message the budget's merges may make to q's MessageLimit and returns b.
func (b *MergeBudget) For(q Queue) *MergeBudget {
	b.msgLimit = q.MessageLimit()
	return b
}

// charge spends n bytes, or refuses when that would pass the limit (spending nothing).
func (b *MergeBudget) charge(n int64) error {
	if b.spent+n > b.limit {
		return &Refusal{Err: ErrMergeBudget, N: b.spent + n}
	}
	b.spent += n
	return nil
}

// Merged is what a keyed send makes of the waiting message of its key
// (docs/lifecycle.md#conflation-and-delta-publish): with MergeReplace the new body and attributes;
// with MergePatch the waiting body merged with the new one as an RFC 7396 JSON Merge Patch, and the
// attributes merged, the new values winning. Both engines call it, so a merge is the same whichever
// stores the message. A patch merge is charged to budget (the send call's). The error, for that
// message only, is ErrPatchNotObject or ErrPatchWaitingNotObject when a patch's body (new or
// waiting) is not a JSON object, ErrPatchTooDeep or ErrPatchWaitingTooDeep when it nests past
// MaxPatchDepth, and a Refusal of ErrMergeBudget past the budget, of ErrMergedAttributes or
// ErrMergedTooLarge when the result passes MaxAttributes or the budget's message limit.
func Merged(budget *MergeBudget, body string, attrs map[string]string, m Message) (string, map[string]string, error) {
	if m.Merge != MergePatch {
		return m.Body, m.Attributes, nil
	}
	if err := budget.charge(int64(len(body) + len(m.Body))); err != nil {
		return "", nil, err
	}
	switch err := mergepatch.Check([]byte(m.Body)); {
	case errors.Is(err, mergepatch.ErrTooDeep):
		return "", nil, ErrPatchTooDeep
	case err != nil:
		return "", nil, ErrPatchNotObject
	}
	b, err := mergepatch.Apply([]byte(body), []byte(m.Body))
	switch {
	case errors.Is(err, mergepatch.ErrTooDeep):
		return "", nil, ErrPatchWaitingTooDeep
	case err != nil:
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
	for k := range out {
		if reservedAttribute(k) {
			n-- // the service's own, not counted (PayloadBytes)
		}
	}
	if n > MaxAttributes {
		return "", nil, &Refusal{Err: ErrMergedAttributes, N: int64(n)}
	}
	limit := MaxMessageBytes
	if budget.msgLimit > 0 {
		limit = budget.msgLimit
	}
	if n := PayloadBytes(string(b), out); n > int64(limit) {
		return "", nil, &Refusal{Err: ErrMergedTooLarge, N: n, Limit: int64(limit)}
	}
	return string(b), out, nil
}

// MergeRefused reports whether err is Merged's refusal of one message (not a failure of the
// call the message came in).
func MergeRefused(err error) bool {
	for _, e := range []error{ErrPatchNotObject, ErrPatchWaitingNotObject, ErrPatchTooDeep, ErrPatchWaitingTooDeep,
		ErrMergeBudget, ErrMergedAttributes, ErrMergedTooLarge} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// CheckPatch returns nil when body is one JSON object nesting at most MaxPatchDepth deep, as
// a "patch" send's body must be, else ErrPatchNotObject or ErrPatchTooDeep.
func CheckPatch(body string) error {
	switch err := mergepatch.Check([]byte(body)); {
	case errors.Is(err, mergepatch.ErrTooDeep):
		return ErrPatchTooDeep
	case err != nil:
		return ErrPatchNotObject
	}
	return nil
}
