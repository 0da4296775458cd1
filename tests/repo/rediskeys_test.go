package repo

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// registry is the one package allowed to spell a Redis name.
const registry = "pkg/rediskeys/"

// redisName matches a string literal that spells (part of) a Redis name: a hash tag of one of
// the service's key families or a namespace prefix. In a file that talks to Redis, a bare key
// suffix such as ":members" counts too (elsewhere ":v" is, say, a DynamoDB placeholder).
var (
	redisName   = regexp.MustCompile(`\{(q|t|p|active)[:}]|^(queues:(push|wake|meta|sqs|gen)|tenancy:|rate:)`)
	redisSuffix = regexp.MustCompile(`^\}?:[a-z]{1,12}:?$`)
)

// TestRedisNamesInRegistry: no production Go file outside pkg/rediskeys holds a Redis key or
// channel name, and no Lua script is written inline (each is a file with its header).
func TestRedisNamesInRegistry(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	outside := func(rel string) bool { return production(rel) && !strings.HasPrefix(rel, registry) }
	goFiles(t, "", outside, func(_, path string) error {
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, bad := range redisLiterals(f) {
			t.Errorf("%s: %s: a Redis name outside %s (add it to the registry)", fset.Position(bad.Pos()), bad.Value, registry)
		}
		for _, bad := range inlineScripts(f) {
			t.Errorf("%s: an inline Lua script: make it a .lua file with its KEYS/ARGV/Returns header", fset.Position(bad.Pos()))
		}
		return nil
	})
}

func redisLiterals(f *ast.File) []*ast.BasicLit {
	talks := false
	for _, imp := range f.Imports {
		talks = talks || strings.Contains(imp.Path.Value, "redis")
	}
	var bad []*ast.BasicLit
	ast.Inspect(f, func(n ast.Node) bool {
		lit, ok := n.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return true
		}
		if v, err := strconv.Unquote(lit.Value); err == nil && (redisName.MatchString(v) || talks && redisSuffix.MatchString(v)) {
			bad = append(bad, lit)
		}
		return true
	})
	return bad
}

// inlineScripts finds redis.NewScript called on a literal (or a constant expression of them).
func inlineScripts(f *ast.File) []*ast.CallExpr {
	var bad []*ast.CallExpr
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || len(call.Args) != 1 {
			return true
		}
		if sel, ok := call.Fun.(*ast.SelectorExpr); !ok || sel.Sel.Name != "NewScript" {
			return true
		}
		if lit, ok := call.Args[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
			bad = append(bad, call)
		}
		return true
	})
	return bad
}

// TestLuaHeaders: every Lua script opens with its contract: what KEYS, ARGV it takes and what
// it returns (the prelude of shared helpers aside).
func TestLuaHeaders(t *testing.T) {
	t.Parallel()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && skipDir(d.Name()) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".lua") || d.Name() == "prelude.lua" {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var header strings.Builder
		for _, line := range strings.Split(string(src), "\n") {
			if !strings.HasPrefix(line, "--") {
				break
			}
			header.WriteString(line + "\n")
		}
		for _, part := range []string{"-- KEYS", "-- ARGV", "Returns"} {
			if !strings.Contains(header.String(), part) {
				t.Errorf("%s: its header lacks %q", path, part)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
