package api

import (
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/filter"
)

// TestFilterOfQuery: the browse and stream query form of a filter, and the fields its errors
// name.
func TestFilterOfQuery(t *testing.T) {
	f, err := filterOfQuery(url.Values{"attribute.color": {"red", "blue"}, "attribute.a.b": {"x:y|z"}, "limit": {"3"}})
	if err != nil {
		t.Fatal(err)
	}
	if !f.Match(map[string]string{"color": "blue", "a.b": "x:y|z"}) || f.Match(map[string]string{"color": "green", "a.b": "x:y|z"}) ||
		f.Match(map[string]string{"color": "red"}) {
		t.Fatalf("filter %v matches wrongly", f.Attributes)
	}
	if f, err := filterOfQuery(url.Values{"state": {"visible"}}); f != nil || err != nil {
		t.Fatalf("no attribute parameters: %v, %v", f, err)
	}
	many := url.Values{}
	for i := range filter.MaxAttributes + 1 {
		many.Set("attribute.n"+string(rune('a'+i)), "v")
	}
	hundred := make([]string, filter.MaxValues+1)
	for name, q := range map[string]url.Values{
		"attribute.color[2]": {"attribute.color": {"red", "blue", "\xff"}},
		"attribute.bad name": {"attribute.bad name": {"x"}},
		"attribute.":         {"attribute.": {"x"}},
		"attribute.nk":       many,
		"attribute.h":        {"attribute.h": hundred},
		"attribute.big[0]":   {"attribute.big": {strings.Repeat("x", filter.MaxValueBytes+1)}},
	} {
		_, err := filterOfQuery(q)
		var ae *apierr.Error
		if err == nil || !asAPIErr(err, &ae) || ae.Field != name {
			t.Errorf("%v: %v, want an error naming %s", truncated(q), err, name)
		}
	}
}

func asAPIErr(err error, ae **apierr.Error) bool {
	e, ok := err.(*apierr.Error)
	*ae = e
	return ok
}

func truncated(q url.Values) string {
	s := q.Encode()
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// FuzzFilterQuery: any query parses to a valid filter, or to an invalid_argument naming an
// attribute.<name> parameter; a filter it gives matches a message holding the first value of
// every name it lists.
func FuzzFilterQuery(f *testing.F) {
	for _, s := range []string{
		"attribute.color=red", "attribute.color=red&attribute.color=blue&attribute.size=l",
		"attribute.a.b=x%3Ay&limit=3&cursor=abc", "attribute.=x", "attribute.bad%20name=1",
		"attribute.c=%ff", "attribute.c=&attribute.d=%E2%82%AC", "state=visible",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, perr := url.ParseQuery(raw)
		if perr != nil {
			return
		}
		flt, err := filterOfQuery(q)
		if err != nil {
			ae, ok := err.(*apierr.Error)
			if !ok || ae.Code != apierr.InvalidArgument || !strings.HasPrefix(ae.Field, filterQueryPrefix) {
				t.Fatalf("%q: %v (field %q), want invalid_argument naming an attribute parameter", raw, err, fieldOf(err))
			}
			return
		}
		if flt == nil {
			return
		}
		if err := flt.Validate(); err != nil {
			t.Fatalf("%q: accepted a filter that does not validate: %v", raw, err)
		}
		attrs := map[string]string{}
		for name, values := range flt.Attributes {
			if !utf8.ValidString(values[0]) {
				t.Fatalf("%q: accepted invalid UTF-8 in %s", raw, name)
			}
			attrs[name] = values[0]
		}
		if !flt.Match(attrs) {
			t.Fatalf("%q: filter %v does not match %v", raw, flt.Attributes, attrs)
		}
	})
}

func fieldOf(err error) string {
	if ae, ok := err.(*apierr.Error); ok {
		return ae.Field
	}
	return ""
}
