// Package mergepatch applies RFC 7396 JSON Merge Patches to JSON objects, for conflated sends
// with "merge": "patch" (SPEC §13). Both engines use it, so a patch merges the same way
// whichever engine stores the message.
//
// Values the patch does not change are copied byte for byte (numbers keep every digit, arrays
// and strings their escapes), members keep the target's order, and members the patch adds
// follow in the patch's order. Only a JSON object is a valid target or patch: the service
// patches whole message bodies, and SPEC §13 refuses a patch whose body, new or waiting, is
// anything else.
package mergepatch

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// ErrNotObject is returned when the target or the patch is not a JSON object.
var ErrNotObject = errors.New("mergepatch: not a JSON object")

// member is one name/value pair of an object, the value as written.
type member struct {
	name string
	raw  json.RawMessage
}

// IsObject reports whether b is one valid JSON object (surrounding whitespace allowed).
func IsObject(b []byte) bool {
	_, err := parseObject(b)
	return err == nil
}

// Apply returns target with patch merged into it (RFC 7396 §2, MergePatch(target, patch)).
func Apply(target, patch []byte) ([]byte, error) {
	t, err := parseObject(target)
	if err != nil {
		return nil, err
	}
	p, err := parseObject(patch)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	out.Grow(len(target) + len(patch))
	if err := write(&out, merge(t, p)); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// merge merges patch members into target members.
func merge(target, patch []member) []member {
	out := make([]member, len(target), len(target)+len(patch))
	copy(out, target)
	for _, pm := range patch {
		i := find(out, pm.name)
		if isNull(pm.raw) {
			if i >= 0 {
				out = append(out[:i], out[i+1:]...)
			}
			continue
		}
		pobj, perr := parseObject(pm.raw)
		if perr != nil { // not an object: the patch value replaces whatever was there
			if i >= 0 {
				out[i].raw = pm.raw
			} else {
				out = append(out, pm)
			}
			continue
		}
		var tobj []member
		if i >= 0 {
			tobj, _ = parseObject(out[i].raw) // a non-object target value merges as {}
		}
		v, _ := encode(merge(tobj, pobj))
		if i >= 0 {
			out[i].raw = v
		} else {
			out = append(out, member{pm.name, v})
		}
	}
	return out
}

func find(ms []member, name string) int {
	for i, m := range ms {
		if m.name == name {
			return i
		}
	}
	return -1
}

func isNull(raw json.RawMessage) bool { return string(bytes.Trim(raw, jsonSpace)) == "null" }

// jsonSpace is the whitespace JSON allows around values (RFC 8259 §2).
const jsonSpace = " \t\r\n"

// parseObject reads a JSON object's members in order; a repeated name keeps its last value
// (as encoding/json reads it) in its first place.
func parseObject(b []byte) ([]member, error) {
	// JSON's whitespace only: bytes.TrimSpace also drops \f, \v and Unicode spaces, which
	// made "{}\f" a valid patch (FuzzApply's ten-minute run; kept in testdata/fuzz).
	b = bytes.Trim(b, jsonSpace)
	if len(b) == 0 || b[0] != '{' || !json.Valid(b) {
		return nil, ErrNotObject
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if _, err := dec.Token(); err != nil { // {
		return nil, ErrNotObject
	}
	var ms []member
	for dec.More() {
		tok, err := dec.Token()
		name, ok := tok.(string)
		if err != nil || !ok {
			return nil, ErrNotObject
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, ErrNotObject
		}
		if i := find(ms, name); i >= 0 {
			ms[i].raw = raw
			continue
		}
		ms = append(ms, member{name, raw})
	}
	if _, err := dec.Token(); err != nil && err != io.EOF { // }
		return nil, ErrNotObject
	}
	return ms, nil
}

func encode(ms []member) (json.RawMessage, error) {
	var b bytes.Buffer
	err := write(&b, ms)
	return b.Bytes(), err
}

// write writes an object; names are re-encoded without HTML escaping, values as they were.
func write(b *bytes.Buffer, ms []member) error {
	b.WriteByte('{')
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	for i, m := range ms {
		if i > 0 {
			b.WriteByte(',')
		}
		if err := enc.Encode(m.name); err != nil {
			return err
		}
		b.Truncate(b.Len() - 1) // Encode's newline
		b.WriteByte(':')
		b.Write(m.raw)
	}
	b.WriteByte('}')
	return nil
}
