package mergepatch

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"testing"
)

var diffCases = []struct{ old, new, want string }{
	{`{"a":1,"b":2}`, `{"a":1,"b":3}`, `{"b":3}`},
	{`{"a":1,"b":2}`, `{"a":1}`, `{"b":null}`},
	{`{"a":1}`, `{"a":1,"c":[1,{"x":null}]}`, `{"c":[1,{"x":null}]}`},
	{`{"a":{"b":1,"c":2}}`, `{"a":{"b":1,"c":3}}`, `{"a":{"c":3}}`},
	{`{"a":{"b":1}}`, `{"a":{"b":1}}`, `{}`},
	{`{"a":{"b":1},"z":0}`, `{"a":{"b":1}}`, `{"z":null}`},
	{`{"a":{"b":1}}`, `{"a":"flat"}`, `{"a":"flat"}`},
	{`{"a":"flat"}`, `{"a":{"b":1}}`, `{"a":{"b":1}}`},
	{`{"a":null}`, `{"a":null,"b":1}`, `{"b":1}`},
	{`{"a":null}`, `{}`, `{"a":null}`},
	{`{"é\n":1}`, `{"é\n":2}`, `{"é\n":2}`},
	{`[1,2]`, `{"a":1}`, `{"a":1}`},
	{`"text"`, `{"a":{"b":[]}}`, `{"a":{"b":[]}}`},
	{`{"a":1}`, ` [1] `, `[1]`},
	{`{"a":1}`, `"whole"`, `"whole"`},
	{`not json`, `3`, `3`},
	// RFC 7396 §3's example, backwards.
	{`{"title":"Goodbye!","author":{"givenName":"John","familyName":"Doe"},"tags":["example","sample"],"content":"This will be unchanged"}`,
		`{"title":"Hello!","author":{"givenName":"John"},"tags":["example"],"content":"This will be unchanged","phoneNumber":"+01-123-456-7890"}`,
		`{"title":"Hello!","author":{"familyName":null},"tags":["example"],"phoneNumber":"+01-123-456-7890"}`},
}

func TestDiff(t *testing.T) {
	t.Parallel()
	for _, c := range diffCases {
		got, err := Diff([]byte(c.old), []byte(c.new))
		if err != nil {
			t.Fatalf("Diff(%s, %s): %v", c.old, c.new, err)
		}
		if string(got) != c.want {
			t.Errorf("Diff(%s, %s) = %s, want %s", c.old, c.new, got, c.want)
		}
		if IsObject([]byte(c.old)) && IsObject(got) {
			merged, err := Apply([]byte(c.old), got)
			if err != nil || !sameJSON(merged, []byte(c.new)) {
				t.Errorf("Apply(%s, Diff) = %s, %v; want %s", c.old, merged, err, c.new)
			}
		}
	}
}

// TestDiffRefuses: what no merge patch can express, or no JSON at all.
func TestDiffRefuses(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		old, new string
		want     error
	}{
		{`{}`, `{"a":null}`, ErrNullMember},
		{`{"a":1}`, `{"a":null}`, ErrNullMember},
		{`{"a":{}}`, `{"a":{"b":null}}`, ErrNullMember},
		{`{"a":1}`, `{"a":{"b":{"c":null}}}`, ErrNullMember},
		{`"x"`, `{"a":null}`, ErrNullMember},
		{`{}`, `{"a":`, ErrNotJSON},
		{`{}`, `plain text`, ErrNotJSON},
		{`{}`, string(bytes.Repeat([]byte(`{"a":`), MaxDepth+1)) + "1" + string(bytes.Repeat([]byte(`}`), MaxDepth+1)), ErrTooDeep},
	} {
		if got, err := Diff([]byte(c.old), []byte(c.new)); !errors.Is(err, c.want) {
			t.Errorf("Diff(%.40s, %.40s) = %s, %v; want %v", c.old, c.new, got, err, c.want)
		}
	}
}

// FuzzDiff: whatever the two values, a patch Diff answers turns old into new under Apply (and
// under the RFC's reference algorithm), and Diff refuses only what it must.
func FuzzDiff(f *testing.F) {
	for _, c := range diffCases {
		f.Add(c.old, c.new)
	}
	for _, c := range rfcAppendixA {
		f.Add(c.target, c.want)
	}
	f.Fuzz(func(t *testing.T, old, new string) {
		patch, err := Diff([]byte(old), []byte(new))
		var nv any
		if decodeJSON([]byte(new), &nv) != nil {
			if err == nil && !tooDeep([]byte(new)) {
				t.Fatalf("Diff(%q, %q) = %q for a new value that is not JSON", old, new, patch)
			}
			return
		}
		if err != nil {
			if errors.Is(err, ErrNullMember) && !hasNullMember(nv) {
				t.Fatalf("Diff(%q, %q): %v, but new has no null member", old, new, err)
			}
			if !errors.Is(err, ErrNullMember) && !tooDeep([]byte(new)) && !tooDeep([]byte(old)) {
				t.Fatalf("Diff(%q, %q): %v", old, new, err)
			}
			return
		}
		var pv, ov any
		if err := decodeJSON(patch, &pv); err != nil {
			t.Fatalf("Diff(%q, %q) = %q: not JSON: %v", old, new, patch, err)
		}
		if decodeJSON([]byte(old), &ov) != nil {
			ov = nil
		}
		if got := reference(ov, pv); !reflect.DeepEqual(got, nv) {
			t.Fatalf("Diff(%q, %q) = %q, which makes %v of old, want %v", old, new, patch, got, nv)
		}
		if IsObject([]byte(old)) && IsObject(patch) {
			merged, err := Apply([]byte(old), patch)
			if err != nil || !sameJSON(merged, []byte(new)) {
				t.Fatalf("Apply(%q, Diff = %q) = %q, %v; want %q", old, patch, merged, err, new)
			}
		}
	})
}

// hasNullMember reports whether v has an object member whose value is null, outside arrays.
func hasNullMember(v any) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	for _, x := range m {
		if x == nil || hasNullMember(x) {
			return true
		}
	}
	return false
}

func sameJSON(a, b []byte) bool {
	var av, bv any
	return decodeJSON(a, &av) == nil && decodeJSON(b, &bv) == nil && reflect.DeepEqual(av, bv)
}

// decodeJSON reads one JSON value, numbers as written (a float64 overflows where JSON does
// not).
func decodeJSON(b []byte, v *any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(v); err != nil {
		return err
	}
	if _, err := d.Token(); err != io.EOF {
		return errors.New("trailing data")
	}
	return nil
}
