package engine

import "errors"

// MergeState is what keyed publish message i makes of its key's state (docs/topics.md): cur is the
// state before it (nil when the key has none). It returns the new state's body and
// attributes, which are also what the log holds; deleted is true when the message deletes
// the state. A patch merges into the state as a keyed send into its waiting message
// (Merged); a patch of a key without state is merged into {} (RFC 7396: its nulls remove
// nothing and are dropped; a state is a document, not a message waiting in a queue). Both
// engines call it, so a state merges the same whichever keeps it. A refused merge is a *Refusal of
// Merged's sentinels with Index i (pkg/api names messages[i]'s field).
func MergeState(budget *MergeBudget, i int, cur *StateEntry, m PublishMessage) (body string, attrs map[string]string, deleted bool, err error) {
	if m.Delete {
		return "", m.Attributes, true, nil
	}
	if m.Merge != MergePatch {
		return m.Body, m.Attributes, false, nil
	}
	base, baseAttrs := "{}", map[string]string(nil) // RFC 7396: a target that is not there is {}
	if cur != nil {
		base, baseAttrs = cur.Body, cur.Attributes
	}
	body, attrs, err = Merged(budget, base, baseAttrs, m.Message)
	if err != nil {
		var r *Refusal
		if errors.As(err, &r) {
			return "", nil, false, &Refusal{Err: r.Err, Index: i, N: r.N}
		}
		return "", nil, false, &Refusal{Err: err, Index: i}
	}
	return body, attrs, false, nil
}
