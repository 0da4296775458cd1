package ids

import (
	"strings"
	"testing"
)

func TestSlugRoundTrip(t *testing.T) {
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
	for _, s := range []string{"", "que_", "que_zzzzzzzzzzzzzzzzzzzzzzzzzz", "prj_" + New().Slug("")[0:26], "not-a-uuid", "0000000-0000-0000-0000-000000000000"} {
		if _, err := Parse(QueuePrefix, s); err == nil {
			t.Errorf("Parse(%q) succeeded", s)
		}
	}
}
