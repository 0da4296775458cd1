package mergepatch

import (
	"bytes"
	"encoding/json"
	"errors"
)

// Diff is the other direction of Apply, for the topic stream's delta delivery
// (docs/streaming.md#the-topic-stream, "delta subscribe"): the patch that turns one version of a
// key's body into the next, so a subscriber that holds the last version receives only what changed.

// ErrNotJSON is returned by Diff when the new value is not JSON.
var ErrNotJSON = errors.New("mergepatch: not JSON")

// ErrNullMember is returned by Diff when the new value holds an object member whose value is
// null where the patch would have to set it: a merge patch's null removes a member, so no
// merge patch produces one (RFC 7396 §1). The caller sends the new value whole instead.
var ErrNullMember = errors.New("mergepatch: a member set to null cannot be expressed as a merge patch")

// Diff returns an RFC 7396 merge patch from old to new: Apply(old, patch) equals new (as
// JSON values: member order and number spelling aside). Objects are compared member by
// member, recursively; a member old has and new does not becomes null; a member whose value
// is the same bytes in both is left out; any other value (arrays included) is new's, whole.
// When new is not an object, or old is not one, the patch is new whole (a merge patch that
// is not an object replaces its target, and an object patch merges into a non-object target
// as into {}). Errors: ErrNotJSON, ErrTooDeep (new or old), ErrNullMember.
func Diff(old, new []byte) ([]byte, error) {
	n, err := parse(new)
	if err != nil {
		if errors.Is(err, ErrTooDeep) {
			return nil, err
		}
		whole := bytes.Trim(new, jsonSpace)
		if !json.Valid(whole) {
			return nil, ErrNotJSON
		}
		return whole, nil
	}
	o, err := parse(old)
	if errors.Is(err, ErrTooDeep) { // an object all the same: new whole would merge into it
		return nil, err
	}
	if err != nil { // not an object: new merges into {}, which drops its null members
		if n.hasNull() {
			return nil, ErrNullMember
		}
		return bytes.Trim(new, jsonSpace), nil
	}
	var out bytes.Buffer
	out.Grow(64)
	w := writer{b: &out, enc: json.NewEncoder(&out)}
	w.enc.SetEscapeHTML(false)
	if _, err := w.diff(o, n); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// diff writes the patch from object o to object n and returns how many members it holds.
func (w *writer) diff(o, n *object) (int, error) {
	w.b.WriteByte('{')
	count := 0
	member := func(name string) error {
		if count > 0 {
			w.b.WriteByte(',')
		}
		count++
		if err := w.name(name); err != nil {
			return err
		}
		w.b.WriteByte(':')
		return nil
	}
	for i := range o.members {
		if n.find(o.members[i].name) < 0 {
			if err := member(o.members[i].name); err != nil {
				return 0, err
			}
			w.b.WriteString("null")
		}
	}
	for i := range n.members {
		nm := &n.members[i]
		j := o.find(nm.name)
		if j >= 0 {
			om := &o.members[j]
			if om.obj != nil && nm.obj != nil {
				mark, before := w.b.Len(), count
				if err := member(nm.name); err != nil {
					return 0, err
				}
				k, err := w.diff(om.obj, nm.obj)
				if err != nil {
					return 0, err
				}
				if k == 0 { // nothing changed inside: leave the member out
					w.b.Truncate(mark)
					count = before
				}
				continue
			}
			if bytes.Equal(om.raw, nm.raw) {
				continue
			}
		}
		// Set whole: a null would remove the member, and an object merges into {} (or
		// into the old non-object value, as into {}), dropping null members inside it.
		if isNull(nm.raw) || (nm.obj != nil && nm.obj.hasNull()) {
			return 0, ErrNullMember
		}
		if err := member(nm.name); err != nil {
			return 0, err
		}
		w.b.Write(nm.raw)
	}
	w.b.WriteByte('}')
	return count, nil
}

// hasNull reports whether o, or an object inside it (not inside an array), has a member
// whose value is null.
func (o *object) hasNull() bool {
	for i := range o.members {
		m := &o.members[i]
		if isNull(m.raw) || (m.obj != nil && m.obj.hasNull()) {
			return true
		}
	}
	return false
}
