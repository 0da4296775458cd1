package mergepatch

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

// rfcAppendixA is RFC 7396 Appendix A, every example whose target and patch are objects (the
// service merges only objects; the others are refused, see TestNotObject).
var rfcAppendixA = []struct{ target, patch, want string }{
	{`{"a":"b"}`, `{"a":"c"}`, `{"a":"c"}`},
	{`{"a":"b"}`, `{"b":"c"}`, `{"a":"b","b":"c"}`},
	{`{"a":"b"}`, `{"a":null}`, `{}`},
	{`{"a":"b","b":"c"}`, `{"a":null}`, `{"b":"c"}`},
	{`{"a":["b"]}`, `{"a":"c"}`, `{"a":"c"}`},
	{`{"a":"c"}`, `{"a":["b"]}`, `{"a":["b"]}`},
	{`{"a":{"b":"c"}}`, `{"a":{"b":"d","c":null}}`, `{"a":{"b":"d"}}`},
	{`{"a":[{"b":"c"}]}`, `{"a":[1]}`, `{"a":[1]}`},
	{`{"e":null}`, `{"a":1}`, `{"e":null,"a":1}`},
	{`{}`, `{"a":{"bb":{"ccc":null}}}`, `{"a":{"bb":{}}}`},
	// RFC 7396 §3's example.
	{`{"title":"Goodbye!","author":{"givenName":"John","familyName":"Doe"},"tags":["example","sample"],"content":"This will be unchanged"}`,
		`{"title":"Hello!","phoneNumber":"+01-123-456-7890","author":{"familyName":null},"tags":["example"]}`,
		`{"title":"Hello!","author":{"givenName":"John"},"tags":["example"],"content":"This will be unchanged","phoneNumber":"+01-123-456-7890"}`},
}

func TestRFC7396AppendixA(t *testing.T) {
	t.Parallel()
	for _, c := range rfcAppendixA {
		got, err := Apply([]byte(c.target), []byte(c.patch))
		if err != nil {
			t.Fatalf("Apply(%s, %s): %v", c.target, c.patch, err)
		}
		if string(got) != c.want {
			t.Errorf("Apply(%s, %s) = %s, want %s", c.target, c.patch, got, c.want)
		}
	}
}

// TestKeepsValues: values the patch leaves are copied as written (no float rounding, no
// re-escaping), and names given with escapes match their plain spelling.
func TestKeepsValues(t *testing.T) {
	t.Parallel()
	got, err := Apply([]byte(`{"n": 12345678901234567890123, "s": "<\u00e9>", "\u0061": 1}`), []byte(`{"a": 2.50e10, "x": "&"}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"n":12345678901234567890123,"s":"<\u00e9>","a":2.50e10,"x":"&"}`; string(got) != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

func TestNotObject(t *testing.T) {
	t.Parallel()
	for _, c := range [][2]string{{`["a"]`, `{"a":1}`}, {`{"a":1}`, `["c"]`}, {`{"a":1}`, `null`}, {`"x"`, `{}`}, {`{"a":`, `{}`}, {`{}`, `{} {}`}, {`hello`, `{}`}} {
		if _, err := Apply([]byte(c[0]), []byte(c[1])); !errors.Is(err, ErrNotObject) {
			t.Errorf("Apply(%s, %s): err %v, want ErrNotObject", c[0], c[1], err)
		}
	}
}

// FuzzApply checks Apply against a reference merge on decoded values: the result is valid
// JSON equal to MergePatch(target, patch) as RFC 7396 §2 writes it.
func FuzzApply(f *testing.F) {
	for _, c := range rfcAppendixA {
		f.Add(c.target, c.patch)
	}
	f.Fuzz(func(t *testing.T, target, patch string) {
		got, err := Apply([]byte(target), []byte(patch))
		var tv, pv any
		tok := json.Unmarshal([]byte(target), &tv) == nil
		pok := json.Unmarshal([]byte(patch), &pv) == nil
		_, tobj := tv.(map[string]any)
		_, pobj := pv.(map[string]any)
		if !(tok && pok && tobj && pobj) {
			if err == nil {
				t.Fatalf("Apply(%q, %q) = %s, want an error", target, patch, got)
			}
			return
		}
		if err != nil {
			t.Fatalf("Apply(%q, %q): %v", target, patch, err)
		}
		var gv any
		if err := json.Unmarshal(got, &gv); err != nil {
			t.Fatalf("Apply(%q, %q) = %q: not JSON: %v", target, patch, got, err)
		}
		if want := reference(tv, pv); !reflect.DeepEqual(gv, want) {
			t.Fatalf("Apply(%q, %q) = %s, want %v", target, patch, got, want)
		}
	})
}

// reference is RFC 7396 §2's pseudo-code on decoded values.
func reference(target, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	t, ok := target.(map[string]any)
	if !ok {
		t = map[string]any{}
	}
	out := map[string]any{}
	for k, v := range t {
		out[k] = v
	}
	for k, v := range p {
		if v == nil {
			delete(out, k)
			continue
		}
		out[k] = reference(out[k], v)
	}
	return out
}
