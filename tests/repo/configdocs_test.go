package repo

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

// envName is a variable the binary or the SDKs read: QUEUES_ and capitals.
var envName = regexp.MustCompile(`^QUEUES_[A-Z0-9_]+$`)

// TestConfigurationDocumented: every QUEUES_* variable that production code names (a flag's
// env binding, an env() default, a client's QUEUES_URL) has its row in docs/configuration.md,
// so an operator finds every setting in one place. Variables only the test suites read are
// documented beside their suites (docs/development.md) and are not checked here.
func TestConfigurationDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(root, "docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	documented := regexp.MustCompile("`(QUEUES_[A-Z0-9_]+)`").FindAllSubmatch(doc, -1)
	inDoc := map[string]bool{}
	for _, m := range documented {
		inDoc[string(m[1])] = true
	}
	fset := token.NewFileSet()
	seen := map[string]bool{}
	goFiles(t, "", production, func(rel, path string) error {
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			v, err := strconv.Unquote(lit.Value)
			if err != nil || !envName.MatchString(v) || seen[v] {
				return true
			}
			seen[v] = true
			if !inDoc[v] {
				t.Errorf("%s: %s is read by the service but has no row in docs/configuration.md", fset.Position(lit.Pos()), v)
			}
			return true
		})
		return nil
	})
	if len(seen) < 20 {
		t.Fatalf("found only %d QUEUES_* variables in production code: the walk is broken", len(seen))
	}
}
