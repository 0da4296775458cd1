package repo

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// noLeakCheck are the packages of the main module that start goroutines but have no tests of
// their own to check for leaks, each with the reason. Only a package without tests may be
// listed, and one listed that no longer needs to be fails the test, so the list only shrinks.
var noLeakCheck = map[string]string{
	"pkg/engine/enginetest":    "the engines' conformance suite: their packages run it under goleak",
	"pkg/meta/metatest":        "the metadata stores' conformance suite: their packages run it under goleak",
	"services/queues/stack":    "the API tier's wiring, tested through services/queues and pkg/bench, under goleak",
	"tests/stacktest":          "a harness: services/queues and pkg/bench, its users, run under goleak",
	"pkg/testservers/tcpproxy": "a harness of tests/faults",
	"tests/internal/crashtest": "the crash tests' harness, run by tests/killtest and tests/servekill",
}

// TestGoroutinesAreLeakChecked: every package of the main module whose non-test code has a go
// statement checks in its tests that none is left running (go.uber.org/goleak, in TestMain as
// pkg/api's leak_test.go does), so a goroutine that outlives its Close fails its package's
// tests (issue 35).
func TestGoroutinesAreLeakChecked(t *testing.T) {
	t.Parallel()
	starts, checks, tested := map[string]bool{}, map[string]bool{}, map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if skipDir(d.Name()) || d.Name() == "testdata" || rel != "." && isFile(filepath.Join(path, "go.mod")) {
				return filepath.SkipDir // another module (sdk/go, tests/sqslegacy) checks its own
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(rel))
		if strings.HasSuffix(rel, "_test.go") {
			checks[dir] = checks[dir] || importsGoleak(f)
			tested[dir] = true
		} else {
			starts[dir] = starts[dir] || hasGoStmt(f)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for dir, ok := range starts {
		if ok {
			dirs = append(dirs, dir)
		}
	}
	sort.Strings(dirs)
	if len(dirs) < 10 {
		t.Fatalf("found go statements in only %v: the walk is broken", dirs)
	}
	for _, dir := range dirs {
		why, listed := noLeakCheck[dir]
		switch {
		case tested[dir] && listed:
			t.Errorf("%s has tests now: check them for leaks and remove it from noLeakCheck (%s)", dir, why)
		case !checks[dir] && !listed:
			t.Errorf("%s starts goroutines but its tests do not use go.uber.org/goleak: add a TestMain with goleak.VerifyTestMain (see pkg/api/leak_test.go)", dir)
		}
	}
	for dir := range noLeakCheck {
		if !starts[dir] {
			t.Errorf("noLeakCheck lists %s, which starts no goroutine: remove it", dir)
		}
	}
}

func importsGoleak(f *ast.File) bool {
	for _, im := range f.Imports {
		if p, _ := strconv.Unquote(im.Path.Value); p == "go.uber.org/goleak" {
			return true
		}
	}
	return false
}

func hasGoStmt(f *ast.File) bool {
	found := false
	ast.Inspect(f, func(n ast.Node) bool {
		_, ok := n.(*ast.GoStmt)
		found = found || ok
		return !found
	})
	return found
}

func isFile(path string) bool {
	st, err := os.Stat(path)
	return err == nil && !st.IsDir()
}
