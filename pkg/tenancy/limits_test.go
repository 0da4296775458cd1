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
		`{"maxTopics": 1000001}`:   "maxTopics: must be an integer from 0 to 1000000",
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

// TestMaxTopics: maxTopics is a limit like maxQueues: 100 by default, 0 (a freeze) allowed.
func TestMaxTopics(t *testing.T) {
	if Defaults.MaxTopics != 100 || Defaults.Get(meta.LimitMaxTopics) != 100 {
		t.Fatalf("default maxTopics %d", Defaults.MaxTopics)
	}
	l, err := ParseDefaults(`{"maxTopics": 0}`)
	if err != nil || l.MaxTopics != 0 || l.MaxQueues != Defaults.MaxQueues {
		t.Fatalf("maxTopics 0: %+v, %v", l, err)
	}
	if got := Defaults.With(meta.Limits{meta.LimitMaxTopics: 7}).MaxTopics; got != 7 {
		t.Fatalf("With maxTopics 7: %d", got)
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
