package repo

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"sort"
	"strings"
	"testing"
)

// The team's limits for production code (test suites and their support packages aside).
const (
	maxFileLines = 800
	maxFuncLines = 100 // a function's lines from its signature to its closing brace, exclusive: under 100
)

// notProduction: test suites and the packages that only support them.
func notProduction(rel string) bool {
	for _, p := range []string{"tests/", "sdk/", "pkg/engine/enginetest/", "pkg/meta/metatest/", "pkg/testservers/", "pkg/openapicheck/"} {
		if strings.HasPrefix(rel, p) {
			return true
		}
	}
	return strings.HasSuffix(rel, "_test.go")
}

// oversized lists what is over a limit today and which item of issue 11 shrinks it; the test
// fails on anything new over a limit, and on an entry here that is no longer over it (so
// the list only shrinks).
var oversized = map[string]string{}

// TestProductionSizes: no production Go file over 800 lines, no function of 100 lines or more.
func TestProductionSizes(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	var over []string
	goFiles(t, "", production, func(rel, path string) error {
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if n := strings.Count(string(src), "\n"); n > maxFileLines {
			over = append(over, rel)
		}
		f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			if lines := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line - 1; lines >= maxFuncLines {
				over = append(over, rel+":"+funcName(fn))
			}
		}
		return nil
	})
	sort.Strings(over)
	found := map[string]bool{}
	for _, o := range over {
		found[o] = true
		if _, ok := oversized[o]; !ok {
			t.Errorf("%s: over the limit (files ≤ %d lines, functions < %d lines): split it", o, maxFileLines, maxFuncLines)
		}
	}
	for o := range oversized {
		if !found[o] {
			t.Errorf("%s is within the limits now: remove it from oversized", o)
		}
	}
}

func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	typ := fn.Recv.List[0].Type
	if s, ok := typ.(*ast.StarExpr); ok {
		typ = s.X
	}
	if ix, ok := typ.(*ast.IndexExpr); ok {
		typ = ix.X
	}
	if id, ok := typ.(*ast.Ident); ok {
		return id.Name + "." + fn.Name.Name
	}
	return fn.Name.Name
}
