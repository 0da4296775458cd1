package jsonscan

import (
	"encoding/json"
	"testing"
)

func TestValue(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in  string
		end int
	}{
		{`"a\"b" ,`, 6}, {`{"a":[1,"]}"]} x`, 14}, {`[]`, 2}, {`true,`, 4}, {`-1.5e3}`, 6},
		{`null`, 4}, {`"open`, -1}, {`{"a":1`, -1}, {`,`, -1}, {``, -1},
	} {
		if got := Value([]byte(c.in), 0); got != c.end {
			t.Errorf("Value(%q) = %d, want %d", c.in, got, c.end)
		}
	}
	if got := Space([]byte(" \t\n\rx"), 0); got != 4 {
		t.Errorf("Space = %d", got)
	}
}

// On valid JSON, Value ends where encoding/json's decoder says the value ends.
func FuzzValue(f *testing.F) {
	for _, s := range []string{`{"a":[1,2,{"b":"}"}]}`, `"x\\"`, `[1, true, null]`, `12.5e-3`, `{}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) {
			Value(b, Space(b, 0)) // must not panic
			return
		}
		i := Space(b, 0)
		end := Value(b, i)
		if end < 0 || !json.Valid(b[i:end]) || Space(b, end) != len(b) {
			t.Fatalf("Value(%q) = %d", b, end)
		}
	})
}
