// Package repo checks the repository itself rather than the service: that every link in its
// Markdown resolves inside the repository and none points outside it, and that production Go
// files and functions stay within the sizes the team's rules set.
package repo

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// root is the repository's top directory (this package is tests/repo).
const root = "../.."

// skipDir: directories that hold no documentation of ours.
func skipDir(name string) bool {
	return name == ".git" || name == "node_modules" || name == ".venv" || name == "__pycache__" || name == ".queues"
}

// markdownFiles lists every Markdown file of the repository, relative to root.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && skipDir(d.Name()) {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			rel, _ := filepath.Rel(root, path)
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

var (
	inlineLink = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	refLink    = regexp.MustCompile(`^\s*\[[^\]]+\]:\s*(\S+)`)
	autoLink   = regexp.MustCompile(`<((?:https?|mailto|ftp):[^>]+)>`)
	htmlLink   = regexp.MustCompile(`(?:href|src)="([^"]+)"`)
	bareURL    = regexp.MustCompile(`(?:https?://|www\.)[^\s)>\]` + "`" + `"']+`)
	codeSpan   = regexp.MustCompile("`[^`]*`")
	anchorTag  = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
)

// doc is a Markdown file read for the check: its links, with line numbers, and its anchors.
type doc struct {
	links   []link
	anchors map[string]bool
}

type link struct {
	line   int
	target string
	bare   bool // a URL in the text, which GitHub turns into a link
}

func readDoc(path string) (*doc, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	d := &doc{anchors: map[string]bool{}}
	seen := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	fenced := false
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		if h, ok := heading(line); ok {
			slug := slugify(h)
			if k := seen[slug]; k > 0 {
				d.anchors[fmt.Sprintf("%s-%d", slug, k)] = true
			} else {
				d.anchors[slug] = true
			}
			seen[slug]++
		}
		for _, m := range anchorTag.FindAllStringSubmatch(line, -1) {
			d.anchors[m[1]] = true
		}
		prose := codeSpan.ReplaceAllString(line, "")
		for _, re := range []*regexp.Regexp{inlineLink, refLink, autoLink, htmlLink} {
			for _, m := range re.FindAllStringSubmatch(prose, -1) {
				d.links = append(d.links, link{line: n, target: m[1]})
			}
		}
		for _, u := range bareURL.FindAllString(inlineLink.ReplaceAllString(prose, ""), -1) {
			d.links = append(d.links, link{line: n, target: u, bare: true})
		}
	}
	return d, sc.Err()
}

// heading returns the text of an ATX heading line.
func heading(line string) (string, bool) {
	trimmed := strings.TrimLeft(line, "#")
	if len(trimmed) == len(line) || len(line)-len(trimmed) > 6 || !strings.HasPrefix(trimmed, " ") {
		return "", false
	}
	return strings.TrimSpace(strings.TrimRight(strings.TrimSpace(trimmed), "#")), true
}

// slugify is GitHub's anchor for a heading: lower case, punctuation dropped, spaces to dashes.
func slugify(h string) string {
	h = codeSpan.ReplaceAllStringFunc(h, func(s string) string { return strings.Trim(s, "`") })
	h = inlineLink.ReplaceAllStringFunc(h, func(s string) string { return s[strings.Index(s, "[")+1 : strings.Index(s, "]")] })
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// local says whether a URL in the text names this machine or a documentation-only host
// (RFC 2606), which are examples, not links out of the repository.
func local(u string) bool {
	host := strings.TrimPrefix(strings.TrimPrefix(u, "http://"), "https://")
	host, _, _ = strings.Cut(host, "/")
	if h, _, ok := strings.Cut(host, ":"); ok && !strings.HasPrefix(host, "[") {
		host = h
	}
	host = strings.TrimRight(host, ".,;")
	switch {
	case host == "localhost", strings.HasPrefix(host, "127."), strings.HasPrefix(host, "[::1]"), host == "0.0.0.0":
		return true
	case host == "example.com", host == "example.org", host == "example.net",
		strings.HasSuffix(host, ".example.com"), strings.HasSuffix(host, ".example"), strings.HasSuffix(host, ".invalid"), strings.HasSuffix(host, ".test"):
		return true
	}
	return false
}

// TestMarkdownLinks: every link in every Markdown file resolves to a file (and heading) of the
// repository; none leaves it.
func TestMarkdownLinks(t *testing.T) {
	t.Parallel()
	files := markdownFiles(t)
	docs := map[string]*doc{}
	for _, f := range files {
		d, err := readDoc(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		docs[filepath.ToSlash(f)] = d
	}
	for _, f := range files {
		for _, l := range docs[filepath.ToSlash(f)].links {
			if err := checkLink(docs, filepath.ToSlash(f), l); err != nil {
				t.Errorf("%s:%d: %s: %v", f, l.line, l.target, err)
			}
		}
	}
}

func checkLink(docs map[string]*doc, from string, l link) error {
	target := l.target
	if l.bare {
		if local(target) {
			return nil
		}
		return fmt.Errorf("a URL outside the repository")
	}
	if strings.Contains(target, "://") || strings.HasPrefix(target, "//") || strings.HasPrefix(target, "mailto:") || strings.HasPrefix(target, "www.") {
		if local(target) {
			return nil
		}
		return fmt.Errorf("links outside the repository")
	}
	if strings.HasPrefix(target, "/") {
		return fmt.Errorf("an absolute path: link relative to the file")
	}
	path, anchor, _ := strings.Cut(target, "#")
	dest := from
	if path != "" {
		dest = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(from), path)))
		if dest == ".." || strings.HasPrefix(dest, "../") {
			return fmt.Errorf("leaves the repository")
		}
		if _, err := os.Stat(filepath.Join(root, dest)); err != nil {
			return fmt.Errorf("no such file or directory")
		}
	}
	if anchor == "" || !strings.HasSuffix(dest, ".md") {
		return nil
	}
	if d := docs[dest]; d == nil || !d.anchors[anchor] {
		return fmt.Errorf("no heading #%s in %s", anchor, dest)
	}
	return nil
}
