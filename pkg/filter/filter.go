// Package filter is the attribute filter of filtered receive and browse
// (docs/delivery-options.md#filtered-receive-and-browse) and of move tasks (docs/redrive.md):
// {"attributes": {"<name>": "<value>" | ["<value>", …]}}. Every named attribute must be present
// with one of its values; a list matches any of its values.
//
// The package parses and validates the JSON form with errors that name the field at fault
// (relative to the filter object: "attributes.color[1]"; callers add their own prefix with
// apierr's WithPrefix) and matches a message's attributes. It knows nothing of engines or
// HTTP beyond the apierr vocabulary every layer shares.
package filter

import (
	"bytes"
	"encoding/json"
	"regexp"
	"sort"
	"unicode/utf8"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/sdk/go/jsonscan"
)

// Limits of a filter. A message has at most 10 attributes, so a filter naming more can never
// match: it is refused rather than answered with nothing forever.
const (
	MaxAttributes = 10         // attribute names per filter
	MaxValues     = 100        // values per attribute
	MaxValueBytes = 256 * 1024 // one value, in UTF-8 bytes (a message's whole payload limit)
	// MaxCandidates is how many messages a filtered receive or browse examines per call
	// (docs/delivery-options.md#filtered-receive-and-browse).
	MaxCandidates = 1000
	// MaxScanBytes is how many bytes of stored messages a filtered receive reads per call to
	// match candidates (one message more at most: the one that crosses it), and how many
	// bytes of messages a browse page holds at most (docs/delivery-options.md). Without it a call
	// could read MaxCandidates messages of 256 KiB: 256 MiB.
	MaxScanBytes = 4 << 20
)

var namePattern = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,256}$`)

// Filter selects messages by their attributes. The nil *Filter (and one with no attributes)
// matches every message.
type Filter struct {
	// Attributes maps an attribute name to the values it may have (at least one each).
	Attributes map[string][]string
}

// Empty reports whether f selects every message.
func (f *Filter) Empty() bool { return f == nil || len(f.Attributes) == 0 }

// Match reports whether a message with these attributes is selected.
func (f *Filter) Match(attrs map[string]string) bool {
	if f == nil {
		return true
	}
	for name, values := range f.Attributes {
		v, ok := attrs[name]
		if !ok || !contains(values, v) {
			return false
		}
	}
	return true
}

func contains(values []string, v string) bool {
	for _, w := range values {
		if w == v {
			return true
		}
	}
	return false
}

// Names are the filter's attribute names in sorted order (a stable form for encodings and
// logs).
func (f *Filter) Names() []string {
	if f == nil {
		return nil
	}
	out := make([]string, 0, len(f.Attributes))
	for n := range f.Attributes {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Validate checks a filter built in code (an SDK, a test) against the same rules Parse
// applies; field paths are relative to the filter object.
func (f *Filter) Validate() *apierr.Error {
	if f == nil {
		return nil
	}
	if len(f.Attributes) > MaxAttributes {
		return apierr.Invalid("attributes", "may name at most %d attributes, names %d", MaxAttributes, len(f.Attributes))
	}
	for _, name := range f.Names() {
		if err := validName(name); err != nil {
			return err
		}
		values := f.Attributes[name]
		if len(values) < 1 || len(values) > MaxValues {
			return apierr.Invalid("attributes."+name, "must list 1 to %d values, lists %d", MaxValues, len(values))
		}
		for i, v := range values {
			if err := validValue(v); err != nil {
				return err.WithPrefix("attributes." + name + "[" + itoa(i) + "]")
			}
		}
	}
	return nil
}

func validName(name string) *apierr.Error {
	if !utf8.ValidString(name) || !namePattern.MatchString(name) {
		return apierr.Invalid("attributes", "attribute name %q must be 1 to 256 of [A-Za-z0-9_.-]", name)
	}
	return nil
}

func validValue(v string) *apierr.Error {
	if !utf8.ValidString(v) {
		return apierr.Invalid("", "is not valid UTF-8")
	}
	if len(v) > MaxValueBytes {
		return apierr.Invalid("", "is %d bytes, more than %d", len(v), MaxValueBytes)
	}
	return nil
}

// Parse reads a filter object: {"attributes": {…}}. null or an absent filter is the caller's
// business (it means no filter); here null is refused. Unknown fields are refused by name.
func Parse(data []byte) (*Filter, *apierr.Error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil || fields == nil {
		return nil, apierr.Invalid("", "must be an object like {\"attributes\": {\"name\": \"value\"}}")
	}
	for name := range fields {
		if name != "attributes" {
			return nil, apierr.Invalid(name, "is not a filter field (only \"attributes\")")
		}
	}
	f := &Filter{}
	if raw, ok := fields["attributes"]; ok {
		attrs, err := ParseAttributes(raw)
		if err != nil {
			return nil, err.WithPrefix("attributes")
		}
		f.Attributes = attrs
	}
	return f, nil
}

// ParseAttributes reads the attributes part of a filter: {"<name>": "<value>" | [values]}.
// Field paths in its errors are relative to that object ("color[1]"). Move tasks, whose
// filter has further fields, parse this part with it.
func ParseAttributes(data []byte) (map[string][]string, *apierr.Error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil || raw == nil {
		return nil, apierr.Invalid("", "must be an object of attribute names to a value or a list of values")
	}
	if len(raw) > MaxAttributes {
		return nil, apierr.Invalid("", "may name at most %d attributes, names %d", MaxAttributes, len(raw))
	}
	names := make([]string, 0, len(raw))
	for name := range raw {
		names = append(names, name)
	}
	sort.Strings(names) // the first bad field in a stable order
	out := make(map[string][]string, len(raw))
	for _, name := range names {
		v := raw[name]
		if err := validName(name); err != nil {
			err.Field = ""
			return nil, err
		}
		values, err := parseValues(bytes.TrimSpace(v))
		if err != nil {
			return nil, err.WithPrefix(name)
		}
		out[name] = values
	}
	return out, nil
}

// parseValues reads "value" or ["value", …].
func parseValues(v []byte) ([]string, *apierr.Error) {
	if len(v) > 0 && v[0] == '"' {
		s, err := parseString(v)
		if err != nil {
			return nil, err
		}
		return []string{s}, nil
	}
	var items []json.RawMessage
	if len(v) == 0 || v[0] != '[' || json.Unmarshal(v, &items) != nil {
		return nil, apierr.Invalid("", "must be a string or a list of strings")
	}
	if len(items) < 1 || len(items) > MaxValues {
		return nil, apierr.Invalid("", "must list 1 to %d values, lists %d", MaxValues, len(items))
	}
	out := make([]string, len(items))
	for i, item := range items {
		s, err := parseString(bytes.TrimSpace(item))
		if err != nil {
			return nil, err.WithPrefix("[" + itoa(i) + "]")
		}
		out[i] = s
	}
	return out, nil
}

// parseString decodes a JSON string literal, refusing what encoding/json would silently turn
// into U+FFFD (invalid UTF-8, unpaired surrogate escapes): such a value could never equal a
// stored attribute, and the API refuses them everywhere.
func parseString(raw []byte) (string, *apierr.Error) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", apierr.Invalid("", "must be a string")
	}
	s, why := jsonscan.Unquote(raw[1 : len(raw)-1])
	if why != "" {
		return "", apierr.Invalid("", "%s", why)
	}
	if err := validValue(s); err != nil {
		return "", err
	}
	return s, nil
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}
