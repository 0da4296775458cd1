package tenancy

import (
	"strings"
	"testing"

	"github.com/queueshq/queues/pkg/meta"
)

func TestParseDefaults(t *testing.T) {
	l, err := ParseDefaults("")
	if err != nil || l != Defaults {
		t.Fatalf("empty: %+v, %v", l, err)
	}
	l, err = ParseDefaults(` {"maxQueues": 5, "requestsPerSecond": 250} `)
	if err != nil {
		t.Fatal(err)
	}
	want := Defaults
	want.MaxQueues, want.RequestsPerSecond = 5, 250
	if l != want {
		t.Fatalf("got %+v, want %+v", l, want)
	}
	for in, wantErr := range map[string]string{
		`{"maxQueue": 5}`:          "maxQueue: unknown limit",
		`{"maxQueues": -1}`:        "maxQueues: must be",
		`{"maxQueues": 1.5}`:       "maxQueues: must be an integer",
		`{"maxQueues": "5"}`:       "maxQueues: must be an integer",
		`{"requestsPerSecond": 0}`: "requestsPerSecond: must be",
		`[1]`:                      "JSON object",
		`{"maxQueues": 5} x`:       "JSON object",
		`null`:                     "JSON object",
		`maxQueues=5`:              "JSON object",
	} {
		if _, err := ParseDefaults(in); err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("ParseDefaults(%q) = %v, want an error with %q", in, err, wantErr)
		}
	}
}

func TestWith(t *testing.T) {
	l := Defaults.With(meta.Limits{meta.LimitMaxStoredBytes: 10, "futureLimit": 3})
	if l.MaxStoredBytes != 10 || l.MaxQueues != Defaults.MaxQueues {
		t.Fatalf("With: %+v", l)
	}
	for _, name := range meta.LimitNames {
		if l.Get(name) == 0 {
			t.Errorf("Get(%q) = 0", name)
		}
		if _, ok := Ranges[name]; !ok {
			t.Errorf("no range for %q", name)
		}
	}
}

func FuzzParseDefaults(f *testing.F) {
	for _, s := range []string{``, `{"maxQueues":5}`, `{"maxStoredBytes":1073741824,"requestsPerSecond":1}`, `{"x":1}`, `[`, `{"maxQueues":"5"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := ParseDefaults(s)
		if err != nil {
			if l != Defaults {
				t.Fatalf("an error changed the limits: %+v", l)
			}
			return
		}
		for _, name := range meta.LimitNames {
			if why := CheckValue(name, l.Get(name)); why != "" {
				t.Fatalf("accepted %s = %d: %s", name, l.Get(name), why)
			}
		}
	})
}
