package repo

import (
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// production keeps the production Go files; tests keeps the others (suites and their support).
func production(rel string) bool { return !notProduction(rel) }

// goFiles calls visit with every Go file below root/dir (the skipped directories aside) that
// keep accepts, by its slash path relative to root and its path on disk; an error from visit
// stops the walk and fails the test.
func goFiles(t *testing.T, dir string, keep func(rel string) bool, visit func(rel, path string) error) {
	t.Helper()
	err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && skipDir(d.Name()) {
			return filepath.SkipDir
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() || !strings.HasSuffix(rel, ".go") || !keep(rel) {
			return nil
		}
		return visit(rel, path)
	})
	if err != nil {
		t.Fatal(err)
	}
}
