package repo

import (
	"bytes"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// outsideSpec names the document outside the repository that comments used to cite; it is
// spelled in pieces so that this file does not match itself.
var outsideSpec = []string{"SPEC" + " §", "SPEC" + ".md"}

// TestNoOutsideSpecCited: no source file cites the specification that lives outside the
// repository; a comment points at the repository's own docs instead, so a reader can follow
// it. docs/ and CHANGELOG.md may name the spec's sections where they tell history.
func TestNoOutsideSpecCited(t *testing.T) {
	t.Parallel()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if skipDir(d.Name()) || rel == "docs" {
				return filepath.SkipDir
			}
			return nil
		}
		if rel == "CHANGELOG.md" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.IndexByte(b[:min(len(b), 8000)], 0) >= 0 {
			return nil // binary
		}
		for n, line := range strings.Split(string(b), "\n") {
			for _, s := range outsideSpec {
				if strings.Contains(line, s) {
					t.Errorf("%s:%d: cites %q, a document outside the repository: point at docs/ instead", rel, n+1, s)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// docRef is a docs/ path, with its heading anchor if any, as comments cite them.
var docRef = regexp.MustCompile(`\bdocs/([A-Za-z0-9_./-]+\.md)(#[A-Za-z0-9_-]+)?`)

// TestDocsCitedInCommentsExist: every docs/<file>.md (and #heading) that a Go comment or a Lua
// script cites exists, so a doc's rename or a heading's rewording cannot leave comments
// pointing nowhere.
func TestDocsCitedInCommentsExist(t *testing.T) {
	t.Parallel()
	docs := map[string]*doc{}
	check := func(rel string, line int, text string) {
		for _, m := range docRef.FindAllStringSubmatch(text, -1) {
			name := "docs/" + strings.TrimSuffix(m[1], ".")
			d, ok := docs[name]
			if !ok {
				var err error
				if d, err = readDoc(filepath.Join(root, name)); err != nil {
					d = nil
				}
				docs[name] = d
			}
			switch anchor := strings.TrimPrefix(m[2], "#"); {
			case d == nil:
				t.Errorf("%s:%d: cites %s, which does not exist", rel, line, name)
			case anchor != "" && !d.anchors[anchor]:
				t.Errorf("%s:%d: cites %s#%s: no such heading", rel, line, name, anchor)
			}
		}
	}
	fset := token.NewFileSet()
	goFiles(t, "", func(string) bool { return true }, func(rel, path string) error {
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, g := range f.Comments {
			for _, c := range g.List {
				check(rel, fset.Position(c.Pos()).Line, c.Text)
			}
		}
		return nil
	})
	scripts, err := filepath.Glob(filepath.Join(root, "pkg", "engine", "redisengine", "scripts", "*.lua"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range scripts {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, path)
		for n, line := range strings.Split(string(b), "\n") {
			if _, comment, ok := strings.Cut(line, "--"); ok {
				check(filepath.ToSlash(rel), n+1, comment)
			}
		}
	}
}
