package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/service"
	"github.com/queueshq/queues/sdk/go/jsonscan"
)

// jsonSpace is JSON's whitespace (narrower than unicode.IsSpace).
const jsonSpace = " \t\n\r"

// object is a decoded JSON object whose fields are still raw, so each field is decoded on its
// own and an error names exactly that field.
type object struct {
	prefix string
	fields map[string]json.RawMessage
	// valid: the fast path split it out of a body already checked whole by json.Valid, so
	// its values need no second check.
	valid bool
}

// join builds a field path: join("messages[2]", "body") = "messages[2].body".
func join(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

// parseObject decodes data as one JSON object with only the allowed keys (any key when none
// are given). An empty body is an empty object when emptyOK.
func parseObject(data []byte, prefix string, emptyOK bool, allowed ...string) (*object, *apierr.Error) {
	return parseObjectIn(data, false, prefix, emptyOK, allowed...)
}

// parseObjectIn is parseObject of a value of an object checked whole (validated: the value
// was split out of it by the fast path, so it is valid JSON).
func parseObjectIn(data []byte, validated bool, prefix string, emptyOK bool, allowed ...string) (*object, *apierr.Error) {
	if len(bytes.TrimSpace(data)) == 0 {
		if emptyOK {
			return &object{prefix: prefix, fields: map[string]json.RawMessage{}}, nil
		}
		return nil, apierr.Invalid(prefix, "a JSON object is required")
	}
	if fields, ok := fastObject(data, validated); ok {
		for k := range fields {
			if allowed != nil && !slices.Contains(allowed, k) {
				return nil, apierr.Invalid(join(prefix, k), "unknown field %q", k)
			}
		}
		return &object{prefix: prefix, fields: fields, valid: true}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var fields map[string]json.RawMessage
	if err := dec.Decode(&fields); err != nil || fields == nil {
		what := "not a JSON object"
		var se *json.SyntaxError
		if errorsAs(err, &se) {
			what = fmt.Sprintf("not valid JSON (at byte %d)", se.Offset)
		}
		return nil, apierr.Invalid(prefix, "%s", what)
	}
	if dec.More() {
		return nil, apierr.Invalid(prefix, "unexpected data after the JSON object")
	}
	for k := range fields {
		if allowed != nil && !slices.Contains(allowed, k) {
			return nil, apierr.Invalid(join(prefix, k), "unknown field %q", k)
		}
	}
	return &object{prefix: prefix, fields: fields}, nil
}

func errorsAs(err error, se **json.SyntaxError) bool {
	s, ok := err.(*json.SyntaxError)
	if ok {
		*se = s
	}
	return ok
}

func (o *object) has(name string) bool {
	_, ok := o.fields[name]
	return ok
}

func (o *object) isNull(name string) bool {
	return string(bytes.TrimSpace(o.fields[name])) == "null"
}

func (o *object) path(name string) string { return join(o.prefix, name) }

// integer reads an optional integer field within [lo, hi]; ok is false when absent.
func (o *object) integer(name string, lo, hi int64) (v int64, ok bool, err *apierr.Error) {
	raw, present := o.fields[name]
	if !present {
		return 0, false, nil
	}
	v, err = parseInteger(raw, o.path(name), lo, hi)
	return v, err == nil, err
}

func parseInteger(raw json.RawMessage, path string, lo, hi int64) (int64, *apierr.Error) {
	raw = bytes.Trim(raw, jsonSpace)
	if len(raw) == 0 || (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) {
		// json.Number would also take a quoted number; the API takes numbers only.
		return 0, apierr.Invalid(path, "must be an integer from %d to %d", lo, hi)
	}
	// raw is one valid JSON value: plain digits are an integer as written (the common case,
	// without a decoder's allocations); fractions and exponents take the general path.
	if len(raw) <= 16 && bytes.IndexFunc(raw[1:], func(r rune) bool { return r < '0' || r > '9' }) < 0 {
		if v, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
			if v < lo || v > hi {
				return 0, apierr.Invalid(path, "must be an integer from %d to %d", lo, hi)
			}
			return v, nil
		}
	}
	var n json.Number
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&n); err != nil {
		return 0, apierr.Invalid(path, "must be an integer from %d to %d", lo, hi)
	}
	f, err := n.Float64()
	if err != nil || f != math.Trunc(f) || f < float64(lo) || f > float64(hi) {
		return 0, apierr.Invalid(path, "must be an integer from %d to %d", lo, hi)
	}
	return int64(f), nil
}

// boolean reads an optional boolean field.
func (o *object) boolean(name string) (v, ok bool, err *apierr.Error) {
	raw, present := o.fields[name]
	if !present {
		return false, false, nil
	}
	if e := json.Unmarshal(raw, &v); e != nil || o.isNull(name) {
		return false, false, apierr.Invalid(o.path(name), "must be true or false")
	}
	return v, true, nil
}

// str reads an optional string field, rejecting invalid UTF-8 and unpaired surrogates.
func (o *object) str(name string) (v string, ok bool, err *apierr.Error) {
	raw, present := o.fields[name]
	if !present {
		return "", false, nil
	}
	v, err = parseString(raw, o.path(name))
	return v, err == nil, err
}

// parseString decodes a JSON string literal. Go's decoder silently turns invalid UTF-8 and
// unpaired surrogate escapes into U+FFFD; the API must reject them instead, so the literal is
// decoded here.
func parseString(raw json.RawMessage, path string) (string, *apierr.Error) {
	raw = bytes.Trim(raw, jsonSpace)
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", apierr.Invalid(path, "must be a string")
	}
	s, why := jsonscan.Unquote(raw[1 : len(raw)-1])
	if why != "" {
		return "", apierr.Invalid(path, "%s", why)
	}
	return s, nil
}

// array reads an optional JSON array field into raw elements with 1..max items.
func (o *object) array(name string, lo, hi int) (items []json.RawMessage, ok bool, err *apierr.Error) {
	raw, present := o.fields[name]
	if !present {
		return nil, false, nil
	}
	if fast, ok := fastArray(raw, o.valid); ok {
		items = fast
	} else if e := json.Unmarshal(raw, &items); e != nil || o.isNull(name) {
		return nil, false, apierr.Invalid(o.path(name), "must be an array")
	}
	if len(items) < lo || len(items) > hi {
		return nil, false, apierr.Invalid(o.path(name), "must have %d to %d items, has %d", lo, hi, len(items))
	}
	return items, true, nil
}

// child parses a nested object field.
func (o *object) child(name string, allowed ...string) (*object, *apierr.Error) {
	return parseObjectIn(o.fields[name], o.valid, o.path(name), false, allowed...)
}

// looksLikeQueueName reports whether s has a queue name's shape (service.LooksLikeQueueName).
func looksLikeQueueName(s string) bool { return service.LooksLikeQueueName(s) }

var (
	prefixPattern   = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,80}$`)
	attrNamePattern = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,256}$`)
	groupIDPattern  = regexp.MustCompile(`^[!-~]{1,128}$`)
)
