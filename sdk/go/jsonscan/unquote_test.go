package jsonscan

import (
	"strings"
	"testing"
)

// TestUnquoteRuns: plain runs around escapes come out whole, and what is not a JSON string
// is still refused after a long plain run.
func TestUnquoteRuns(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 70000)
	for in, want := range map[string]string{
		long:                   long,
		long + `\n` + long:     long + "\n" + long,
		`\u00e9` + long + `\"`: "é" + long + `"`,
		"":                     "",
	} {
		if got, msg := Unquote([]byte(in)); msg != "" || got != want {
			t.Errorf("Unquote(%.20q…): %.20q… %q", in, got, msg)
		}
	}
	for _, in := range []string{long + `"`, long + "\x01", long + `\`, long + `\x`, long + "\xff"} {
		if _, msg := Unquote([]byte(in)); msg == "" {
			t.Errorf("Unquote(…%q) accepted", in[len(in)-2:])
		}
	}
}

// BenchmarkUnquote256KiB is the decoding of one maximal payload without escapes.
func BenchmarkUnquote256KiB(b *testing.B) {
	body := []byte(strings.Repeat("a", 256*1024))
	b.SetBytes(int64(len(body)))
	for range b.N {
		if _, msg := Unquote(body); msg != "" {
			b.Fatal(msg)
		}
	}
}
