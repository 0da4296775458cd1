package ids

import (
	"regexp"
	"strings"
	"testing"
)

func TestSlugRoundTrip(t *testing.T) {
	t.Parallel()
	for range 100 {
		id := New()
		s := id.Slug(QueuePrefix)
		if len(s) != len(QueuePrefix)+26 {
			t.Fatalf("slug %q has length %d", s, len(s))
		}
		back, err := Parse(QueuePrefix, s)
		if err != nil || back != id {
			t.Fatalf("Parse(%q) = %v, %v; want %v", s, back, err, id)
		}
		back, err = Parse(QueuePrefix, strings.ToUpper(id.String()))
		if err != nil || back != id {
			t.Fatalf("Parse(upper uuid) = %v, %v", back, err)
		}
	}
}

func TestParseRejects(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "que_", "que_zzzzzzzzzzzzzzzzzzzzzzzzzz", "prj_" + New().Slug("")[0:26], "not-a-uuid", "0000000-0000-0000-0000-000000000000"} {
		if _, err := Parse(QueuePrefix, s); err == nil {
			t.Errorf("Parse(%q) succeeded", s)
		}
	}
}

// TestLooksLikeUUID checks the hand-written matcher against the shape as a regexp: a UUID
// with every position replaced by each of a few bytes, and a few lengths either side.
func TestLooksLikeUUID(t *testing.T) {
	t.Parallel()
	shape := regexp.MustCompile(`^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$`)
	base := strings.ToUpper(New().String())
	cases := []string{"", base, strings.ToLower(base), base[1:], base + "0", "0" + base, base[:35] + "-"}
	for i := range base {
		for _, c := range []byte("-0aAfFgGzZ/:@`\x00\xff") {
			cases = append(cases, base[:i]+string(c)+base[i+1:])
		}
	}
	for _, s := range cases {
		if got, want := LooksLikeUUID(s), shape.MatchString(s); got != want {
			t.Errorf("LooksLikeUUID(%q) = %v, want %v", s, got, want)
		}
	}
}
