package mergepatch

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
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
		if tooDeep([]byte(target)) || tooDeep([]byte(patch)) {
			if !errors.Is(err, ErrTooDeep) && !errors.Is(err, ErrNotObject) {
				t.Fatalf("Apply(%q, %q) = %s, %v, want ErrTooDeep", target, patch, got, err)
			}
			return
		}
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

// wide is an object of n distinct names prefix0..prefix(n-1), each with value v.
func wide(prefix string, n int, v string) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"` + prefix + strconv.Itoa(i) + `":` + v)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// TestLinearWork: a merge of a 20,000-name patch into a 20,000-name target (each about
// 200 KB, under MaxMessageBytes) costs name lookups linear in the names. Before (a scan of
// the members per lookup): 999,970,000 comparisons in Apply, about 17 s; now at most
// smallObject per name parsed or merged.
func TestLinearWork(t *testing.T) {
	const n = 20000
	var lookups int
	countLookup = func() { lookups++ }
	defer func() { countLookup = nil }()
	target, patch := wide("t", n, "1"), wide("p", n, "2")
	got, err := Apply(target, patch)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Apply of %d names into %d: %d lookups (was 999,970,000)", n, n, lookups)
	if limit := 3 * n * smallObject; lookups > limit {
		t.Fatalf("%d lookups for %d names, want at most %d", lookups, 2*n, limit)
	}
	var v map[string]any
	if err := json.Unmarshal(got, &v); err != nil || len(v) != 2*n {
		t.Fatalf("merged: %d names, err %v; want %d", len(v), err, 2*n)
	}
	if !bytes.HasPrefix(got, []byte(`{"t0":1,"t1":1,`)) || !bytes.HasSuffix(got, []byte(`"p19999":2}`)) {
		t.Fatalf("merged members out of order: %.40s…%s", got, got[len(got)-40:])
	}
}

// TestRepeatedNames: a repeated name keeps its last value in its first place, in the target,
// the patch and objects large enough to be indexed.
func TestRepeatedNames(t *testing.T) {
	t.Parallel()
	big := strings.TrimSuffix(string(wide("k", 2*smallObject, "0")), "}")
	for _, c := range []struct{ target, patch, want string }{
		{`{"a":1,"b":2,"a":3}`, `{"c":4,"c":5}`, `{"a":3,"b":2,"c":5}`},
		{`{"a":{"x":1},"a":2}`, `{"a":{"y":1}}`, `{"a":{"y":1}}`},
		{big + `,"k0":9}`, `{"k1":null,"k3":7}`, strings.Replace(strings.Replace(strings.Replace(big, `"k0":0`, `"k0":9`, 1), `"k1":0,`, ``, 1), `"k3":0`, `"k3":7`, 1) + `}`},
	} {
		got, err := Apply([]byte(c.target), []byte(c.patch))
		if err != nil || string(got) != c.want {
			t.Errorf("Apply(%s, %s) = %s, %v; want %s", c.target, c.patch, got, err, c.want)
		}
	}
}

// TestTooDeep: nesting past MaxDepth is ErrTooDeep (not ErrNotObject, as json.Valid's own
// bound made it), in the patch or the target; MaxDepth itself merges.
func TestTooDeep(t *testing.T) {
	t.Parallel()
	nested := func(depth int) []byte {
		return []byte(strings.Repeat(`{"a":`, depth-1) + `{}` + strings.Repeat(`}`, depth-1))
	}
	if _, err := Apply(nested(MaxDepth), nested(MaxDepth)); err != nil {
		t.Fatalf("depth %d: %v", MaxDepth, err)
	}
	for _, depth := range []int{MaxDepth + 1, 20000} {
		if _, err := Apply([]byte(`{}`), nested(depth)); !errors.Is(err, ErrTooDeep) {
			t.Errorf("patch of depth %d: %v, want ErrTooDeep", depth, err)
		}
		if _, err := Apply(nested(depth), []byte(`{}`)); !errors.Is(err, ErrTooDeep) {
			t.Errorf("target of depth %d: %v, want ErrTooDeep", depth, err)
		}
	}
	arrays := []byte(`{"a":` + strings.Repeat(`[`, MaxDepth) + strings.Repeat(`]`, MaxDepth) + `}`)
	if err := Check(arrays); !errors.Is(err, ErrTooDeep) {
		t.Errorf("arrays %d deep in an object: %v, want ErrTooDeep", MaxDepth+1, err)
	}
	if err := Check([]byte(`{"a":"[[[[` + strings.Repeat(`{`, 2*MaxDepth) + `"}`)); err != nil {
		t.Errorf("brackets in a string: %v", err)
	}
}

// BenchmarkApplyWide merges a 20,000-name patch into a 20,000-name target.
func BenchmarkApplyWide(b *testing.B) {
	target, patch := wide("t", 20000, "1"), wide("p", 20000, "2")
	b.SetBytes(int64(len(target) + len(patch)))
	for b.Loop() {
		if _, err := Apply(target, patch); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkApplyDeep merges a patch MaxDepth deep into a target as deep.
func BenchmarkApplyDeep(b *testing.B) {
	nested := []byte(strings.Repeat(`{"a":1,"b":`, MaxDepth-1) + `{}` + strings.Repeat(`}`, MaxDepth-1))
	b.SetBytes(int64(2 * len(nested)))
	for b.Loop() {
		if _, err := Apply(nested, nested); err != nil {
			b.Fatal(err)
		}
	}
}
