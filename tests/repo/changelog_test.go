package repo

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

var (
	// changelogSection is a release's heading: the unreleased section, a version or a day,
	// optionally followed by a dash and what the section holds.
	changelogSection = regexp.MustCompile(`^## (\[Unreleased\]|\[?v?\d+\.\d+\.\d+\]?( - \d{4}-\d{2}-\d{2})?|\d{4}-\d{2}-\d{2})( — .+)?$`)
	// changelogKinds are the subsections Keep a Changelog allows.
	changelogKinds = regexp.MustCompile(`^### (Added|Changed|Deprecated|Removed|Fixed|Security)$`)
)

// maxChangelogBullet bounds one entry: a line that says what changed and links the doc that
// says how, not the doc itself.
const maxChangelogBullet = 300

// TestChangelogShape: CHANGELOG.md keeps the Keep a Changelog form — an "## [Unreleased]"
// section first (where every branch adds its lines), then sections named by a version or a
// day, each entry a one-line bullet under an Added, Changed, Deprecated, Removed, Fixed or
// Security subsection — so a reader finds what changed when, and merges stay one-line.
func TestChangelogShape(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join(root, "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	sections, inKind, fenced := 0, false, false
	for n, line := range strings.Split(string(b), "\n") {
		at := n + 1
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
		}
		switch {
		case fenced || line == "":
		case strings.HasPrefix(line, "# "):
			if at != 1 {
				t.Errorf("CHANGELOG.md:%d: the only level-1 heading is the title on line 1", at)
			}
		case strings.HasPrefix(line, "## "):
			if !changelogSection.MatchString(line) {
				t.Errorf("CHANGELOG.md:%d: %q: a section is \"## [Unreleased]\", a version or a date (YYYY-MM-DD), optionally \" — what\"", at, line)
			}
			if sections == 0 && line != "## [Unreleased]" {
				t.Errorf("CHANGELOG.md:%d: the first section is \"## [Unreleased]\", not %q", at, line)
			}
			sections++
			inKind = false
		case strings.HasPrefix(line, "#"):
			if !changelogKinds.MatchString(line) {
				t.Errorf("CHANGELOG.md:%d: %q: subsections are ### Added, Changed, Deprecated, Removed, Fixed or Security", at, line)
			}
			if sections == 0 {
				t.Errorf("CHANGELOG.md:%d: a subsection before the first section", at)
			}
			inKind = true
		case strings.HasPrefix(line, "- "):
			if !inKind {
				t.Errorf("CHANGELOG.md:%d: an entry outside an Added/Changed/Fixed/… subsection", at)
			}
			if c := utf8.RuneCountInString(line); c > maxChangelogBullet {
				t.Errorf("CHANGELOG.md:%d: an entry of %d characters (at most %d): one line, and link the doc for the detail", at, c, maxChangelogBullet)
			}
		case strings.HasPrefix(line, " ") || strings.HasPrefix(line, "\t"):
			if inKind {
				t.Errorf("CHANGELOG.md:%d: an entry is one line: no continuation lines or nested bullets", at)
			}
		}
	}
	if sections == 0 {
		t.Error("CHANGELOG.md has no sections")
	}
}
