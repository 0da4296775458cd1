// Package mergepatch applies RFC 7396 JSON Merge Patches to JSON objects, for conflated sends
// with "merge": "patch" (docs/lifecycle.md#conflation-and-delta-publish). Both engines use it, so a
// patch merges the same way whichever engine stores the message.
//
// Values the patch does not change are copied byte for byte (numbers keep every digit, arrays
// and strings their escapes), members keep the target's order, and members the patch adds
// follow in the patch's order. Only a JSON object is a valid target or patch: the service
// patches whole message bodies, and refuses a patch whose body, new or waiting, is anything
// else (docs/lifecycle.md#conflation-and-delta-publish).
//
// The work is linear in the bytes of the target and the patch (issue 31: a lookup by scanning
// the members made a body of 20,000 names cost a billion name comparisons): each object is
// parsed once, in one pass over its bytes, and names are found through an index. Nesting is
// bounded by MaxDepth, so the parse's and the merge's recursion is too.
package mergepatch

import (
	"bytes"
	"encoding/json"
	"errors"
)

// MaxDepth is how deep a target or a patch may nest objects and arrays ({} is 1 deep): the
// parse and the merge recurse once per level of object, and no message body needs more.
const MaxDepth = 100

// ErrNotObject is returned when the target or the patch is not a JSON object.
var ErrNotObject = errors.New("mergepatch: not a JSON object")

// ErrTooDeep is returned when the target or the patch nests deeper than MaxDepth.
var ErrTooDeep = errors.New("mergepatch: nested deeper than MaxDepth")

// smallObject is the most members an object finds by scanning; past it, by a map (a map costs
// more than a scan of a few names).
const smallObject = 8

// countLookup, when set (tests), is called once per name comparison or index lookup.
var countLookup func()

// object is a parsed JSON object: its members in order, indexed by name once it is large.
type object struct {
	members []member
	index   map[string]int // name -> place in members; nil while len(members) <= smallObject
}

// member is one name/value pair of an object. raw is the value as written, nil once a merge
// changed an object value (obj then holds it); obj is the value parsed when it is an object.
type member struct {
	name string
	raw  []byte
	obj  *object
	gone bool // removed by the patch (a tombstone: removing in place would shift the index)
}

// Check returns nil when b is one valid JSON object (surrounding whitespace allowed) nesting
// at most MaxDepth deep, else ErrNotObject or ErrTooDeep.
func Check(b []byte) error {
	_, err := parse(b)
	return err
}

// IsObject reports whether b is one valid JSON object (surrounding whitespace allowed)
// nesting at most MaxDepth deep.
func IsObject(b []byte) bool { return Check(b) == nil }

// Apply returns target with patch merged into it (RFC 7396 §2, MergePatch(target, patch)).
func Apply(target, patch []byte) ([]byte, error) {
	t, err := parse(target)
	if err != nil {
		return nil, err
	}
	p, err := parse(patch)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	out.Grow(len(target) + len(patch))
	w := writer{b: &out, enc: json.NewEncoder(&out)}
	w.enc.SetEscapeHTML(false)
	if err := w.object(merge(t, p)); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// merge merges patch into target (changing target, which may be nil: an empty object).
func merge(target, patch *object) *object {
	if target == nil {
		target = &object{}
	}
	for _, pm := range patch.members {
		i := target.find(pm.name)
		switch {
		case isNull(pm.raw):
			if i >= 0 {
				target.members[i].gone = true
			}
		case pm.obj == nil: // not an object: the patch value replaces whatever was there
			if i >= 0 {
				target.members[i].raw, target.members[i].obj = pm.raw, nil
			} else {
				target.add(member{name: pm.name, raw: pm.raw})
			}
		case i >= 0: // a non-object target value merges as {}
			target.members[i].obj, target.members[i].raw = merge(target.members[i].obj, pm.obj), nil
		default:
			target.add(member{name: pm.name, obj: merge(nil, pm.obj)})
		}
	}
	return target
}

// find returns the place of the member named name, or -1.
func (o *object) find(name string) int {
	if o.index != nil {
		if countLookup != nil {
			countLookup()
		}
		if i, ok := o.index[name]; ok {
			return i
		}
		return -1
	}
	for i := range o.members {
		if countLookup != nil {
			countLookup()
		}
		if o.members[i].name == name {
			return i
		}
	}
	return -1
}

// add appends a member whose name the object does not have.
func (o *object) add(m member) {
	o.members = append(o.members, m)
	switch {
	case o.index != nil:
		o.index[m.name] = len(o.members) - 1
	case len(o.members) > smallObject:
		o.index = make(map[string]int, 2*len(o.members))
		for i := range o.members {
			o.index[o.members[i].name] = i
		}
	}
}

// set records a parsed member: a repeated name keeps its last value (as encoding/json reads
// it) in its first place.
func (o *object) set(name string, raw []byte, obj *object) {
	if i := o.find(name); i >= 0 {
		o.members[i].raw, o.members[i].obj = raw, obj
		return
	}
	o.add(member{name: name, raw: raw, obj: obj})
}

func isNull(raw []byte) bool { return string(raw) == "null" }

// jsonSpace is the whitespace JSON allows around values (RFC 8259 §2).
const jsonSpace = " \t\r\n"

// parse reads a JSON object, every object in it included.
func parse(b []byte) (*object, error) {
	// JSON's whitespace only: bytes.TrimSpace also drops \f, \v and Unicode spaces, which
	// made "{}\f" a valid patch (FuzzApply's ten-minute run; kept in testdata/fuzz).
	b = bytes.Trim(b, jsonSpace)
	if len(b) == 0 || b[0] != '{' {
		return nil, ErrNotObject
	}
	// Depth first: json.Valid refuses past its own bound (10,000) as if the text were not
	// JSON, and the answer should say why.
	if tooDeep(b) {
		return nil, ErrTooDeep
	}
	if !json.Valid(b) {
		return nil, ErrNotObject
	}
	p := parser{b: b}
	o, err := p.object()
	if err != nil || p.i != len(b) {
		return nil, ErrNotObject
	}
	return o, nil
}

// tooDeep reports whether b nests objects and arrays deeper than MaxDepth (any bytes: it
// only counts brackets outside strings).
func tooDeep(b []byte) bool {
	depth, inString := 0, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			depth++
			if depth > MaxDepth {
				return true
			}
		case '}', ']':
			depth--
		}
	}
	return false
}

// parser walks JSON that json.Valid accepted, so it only finds where things end.
type parser struct {
	b []byte
	i int
}

func (p *parser) space() {
	for p.i < len(p.b) && (p.b[p.i] == ' ' || p.b[p.i] == '\t' || p.b[p.i] == '\r' || p.b[p.i] == '\n') {
		p.i++
	}
}

// object reads the object at p.i, through its closing brace.
func (p *parser) object() (*object, error) {
	o := &object{}
	p.i++ // {
	p.space()
	if p.b[p.i] == '}' {
		p.i++
		return o, nil
	}
	for {
		p.space()
		name, err := p.name()
		if err != nil {
			return nil, err
		}
		p.space()
		p.i++ // :
		p.space()
		start := p.i
		var child *object
		if p.b[p.i] == '{' {
			if child, err = p.object(); err != nil {
				return nil, err
			}
		} else {
			p.skip()
		}
		o.set(name, p.b[start:p.i], child)
		p.space()
		p.i++ // , or }
		if p.b[p.i-1] == '}' {
			return o, nil
		}
	}
}

// name reads a member name: plain ASCII as it is, anything else decoded as encoding/json
// decodes it (escapes, and invalid UTF-8 as U+FFFD).
func (p *parser) name() (string, error) {
	start := p.i
	p.skipString()
	raw := p.b[start:p.i]
	plain := true
	for _, c := range raw[1 : len(raw)-1] {
		if c < 0x20 || c >= 0x7f || c == '\\' {
			plain = false
			break
		}
	}
	if plain {
		return string(raw[1 : len(raw)-1]), nil
	}
	var s string
	err := json.Unmarshal(raw, &s)
	return s, err
}

// skipString moves past the string at p.i.
func (p *parser) skipString() {
	p.i++ // "
	for p.b[p.i] != '"' {
		if p.b[p.i] == '\\' {
			p.i++
		}
		p.i++
	}
	p.i++
}

// skip moves past the value at p.i, which is not an object (an array may hold objects: they
// are passed over, not parsed).
func (p *parser) skip() {
	switch p.b[p.i] {
	case '"':
		p.skipString()
	case '[':
		depth := 0
		for {
			switch p.b[p.i] {
			case '"':
				p.skipString()
				continue
			case '[', '{':
				depth++
			case ']', '}':
				depth--
			}
			p.i++
			if depth == 0 {
				return
			}
		}
	default: // number, true, false, null
		for p.i < len(p.b) && !endsScalar(p.b[p.i]) {
			p.i++
		}
	}
}

// endsScalar reports whether c is the first byte after a number or a literal.
func endsScalar(c byte) bool {
	switch c {
	case ',', '}', ']', ' ', '\t', '\r', '\n':
		return true
	}
	return false
}

// writer writes merged objects.
type writer struct {
	b   *bytes.Buffer
	enc *json.Encoder // names that need escaping, without HTML escaping
}

// object writes o: names re-encoded, values as they were unless the merge changed them.
func (w *writer) object(o *object) error {
	w.b.WriteByte('{')
	first := true
	for i := range o.members {
		m := &o.members[i]
		if m.gone {
			continue
		}
		if !first {
			w.b.WriteByte(',')
		}
		first = false
		if err := w.name(m.name); err != nil {
			return err
		}
		w.b.WriteByte(':')
		if m.raw != nil {
			w.b.Write(m.raw)
		} else if err := w.object(m.obj); err != nil {
			return err
		}
	}
	w.b.WriteByte('}')
	return nil
}

// name writes a member name as a JSON string.
func (w *writer) name(s string) error {
	plain := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '\\' || c == '"' {
			plain = false
			break
		}
	}
	if plain {
		w.b.WriteByte('"')
		w.b.WriteString(s)
		w.b.WriteByte('"')
		return nil
	}
	if err := w.enc.Encode(s); err != nil {
		return err
	}
	w.b.Truncate(w.b.Len() - 1) // Encode's newline
	return nil
}
