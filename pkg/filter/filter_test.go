package filter

import (
	"strings"
	"testing"
)

func TestMatch(t *testing.T) {
	t.Parallel()
	f, err := Parse([]byte(`{"attributes": {"color": "red", "size": ["s", "m"]}}`))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		attrs map[string]string
		want  bool
	}{
		{map[string]string{"color": "red", "size": "s"}, true},
		{map[string]string{"color": "red", "size": "m", "other": "x"}, true},
		{map[string]string{"color": "red", "size": "l"}, false},
		{map[string]string{"color": "blue", "size": "s"}, false},
		{map[string]string{"color": "red"}, false},
		{map[string]string{"size": "s"}, false},
		{nil, false},
	}
	for _, c := range cases {
		if got := f.Match(c.attrs); got != c.want {
			t.Errorf("Match(%v) = %v, want %v", c.attrs, got, c.want)
		}
	}
	var none *Filter
	if !none.Match(nil) || !none.Empty() {
		t.Error("the nil filter must match everything")
	}
	empty, err := Parse([]byte(`{}`))
	if err != nil || !empty.Empty() || !empty.Match(map[string]string{"a": "b"}) {
		t.Errorf("{} must parse as a filter matching everything: %v %v", empty, err)
	}
}

func TestParseErrorsNameTheField(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		`null`:                                  "",
		`[]`:                                    "",
		`{"attributes": null}`:                  "attributes",
		`{"attributes": []}`:                    "attributes",
		`{"attributes": {"a": 1}}`:              "attributes.a",
		`{"attributes": {"a": []}}`:             "attributes.a",
		`{"attributes": {"a": ["x", 2]}}`:       "attributes.a[1]",
		`{"attributes": {"a": ["x", null]}}`:    "attributes.a[1]",
		`{"attributes": {"a": "\ud800"}}`:       "attributes.a",
		`{"attributes": {"a": ["\udc00x"]}}`:    "attributes.a[0]",
		`{"attributes": {"a": "\ud800\u0041"}}`: "attributes.a",
		`{"attributes": {"a b": "x"}}`:          "attributes",
		`{"attributes": {"": "x"}}`:             "attributes",
		`{"attributes": {"a": "x"}, "b": 1}`:    "b",
		`{"attrs": {}}`:                         "attrs",
	}
	for in, field := range cases {
		_, err := Parse([]byte(in))
		if err == nil {
			t.Errorf("Parse(%s) accepted", in)
			continue
		}
		if err.Field != field {
			t.Errorf("Parse(%s) field = %q, want %q (%v)", in, err.Field, field, err)
		}
	}
	many := `{"attributes": {` + strings.Repeat(`"a`, 0)
	for i := 0; i < MaxAttributes+1; i++ {
		if i > 0 {
			many += ","
		}
		many += `"a` + itoa(i) + `": "v"`
	}
	many += `}}`
	if _, err := Parse([]byte(many)); err == nil || err.Field != "attributes" {
		t.Errorf("11 attributes: %v", err)
	}
	bad := []byte(`{"attributes": {"a": "` + "\xff" + `"}}`)
	if _, err := Parse(bad); err == nil || err.Field != "attributes.a" {
		t.Errorf("invalid UTF-8: %v", err)
	}
}

func TestParseKeepsEscapes(t *testing.T) {
	t.Parallel()
	f, err := Parse([]byte(`{"attributes": {"a": "\ud83d\ude00 \\u \"q\" \u00e9"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Attributes["a"][0]; got != "😀 \\u \"q\" é" {
		t.Errorf("decoded %q", got)
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	if err := (&Filter{Attributes: map[string][]string{"a": {"x"}}}).Validate(); err != nil {
		t.Error(err)
	}
	if err := (&Filter{Attributes: map[string][]string{"a": {}}}).Validate(); err == nil || err.Field != "attributes.a" {
		t.Errorf("no values: %v", err)
	}
	if err := (&Filter{Attributes: map[string][]string{"a": {"ok", "\xff"}}}).Validate(); err == nil || err.Field != "attributes.a[1]" {
		t.Errorf("bad value: %v", err)
	}
	if err := (&Filter{Attributes: map[string][]string{"a/b": {"x"}}}).Validate(); err == nil || err.Field != "attributes" {
		t.Errorf("bad name: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"attributes": {"color": "red", "size": ["s", "m"]}}`))
	f.Add([]byte(`{"attributes": {"a": "\ud800\udc00"}}`))
	f.Add([]byte(`{"attributes": {"a": ["\ud800"]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		flt, err := Parse(data)
		if err != nil {
			if err.Code != "invalid_argument" {
				t.Fatalf("code %s", err.Code)
			}
			return
		}
		// What parses also validates, and matches the message it describes.
		if verr := flt.Validate(); verr != nil {
			t.Fatalf("parsed filter fails Validate: %v", verr)
		}
		attrs := map[string]string{}
		for name, values := range flt.Attributes {
			attrs[name] = values[len(values)-1]
		}
		if !flt.Match(attrs) {
			t.Fatalf("filter %v does not match %v", flt, attrs)
		}
	})
}
