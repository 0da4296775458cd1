package repo

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
	"testing"
)

// TestTestsNameTheirRedis: no test, nor a package that supports tests, can talk to the
// default Redis on port 6379 (on a shared machine, somebody else's): none spells that address,
// and every go-redis client options literal names its address, since go-redis dials
// localhost:6379 when Addr is empty. Tests take their Redis from pkg/testservers, which starts its
// own on a free port; in-process commands meet testservers.GuardDefaultRedis.
func TestTestsNameTheirRedis(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	testCode := func(rel string) bool { return notProduction(rel) && !strings.HasPrefix(rel, "tests/repo/") }
	goFiles(t, "", testCode, func(_, path string) error {
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, p := range defaultRedis(f) {
			t.Errorf("%s: a test reaches the default Redis (port 6379): take one from pkg/testservers", fset.Position(p))
		}
		return nil
	})
}

// defaultRedis lists the places in f that spell the default Redis address or build go-redis
// options without one.
func defaultRedis(f *ast.File) []token.Pos {
	var out []token.Pos
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.BasicLit:
			if n.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(n.Value)
			if err == nil && (strings.Contains(s, "127.0.0.1:6379") || strings.Contains(s, "localhost:6379")) {
				out = append(out, n.Pos())
			}
		case *ast.CompositeLit:
			sel, ok := n.Type.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			pkg, ok := sel.X.(*ast.Ident)
			if !ok || pkg.Name != "redis" {
				return true
			}
			want := map[string]string{"Options": "Addr", "ClusterOptions": "Addrs", "UniversalOptions": "Addrs"}[sel.Sel.Name]
			if want != "" && !hasKey(n, want) {
				out = append(out, n.Pos())
			}
		}
		return true
	})
	return out
}

func hasKey(lit *ast.CompositeLit, key string) bool {
	for _, e := range lit.Elts {
		if kv, ok := e.(*ast.KeyValueExpr); ok {
			if id, ok := kv.Key.(*ast.Ident); ok && id.Name == key {
				return true
			}
		}
	}
	return false
}
