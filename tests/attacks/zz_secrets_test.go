package attacks

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// X20: after every test above ran (files run in name order; this one is last), the replicas'
// logs — at debug level — hold no token, operator secret or receipt handle, whole or in part
// (the longest 24-character run of each is searched), though they logged every request.
func TestZZNoSecretsInLogs(t *testing.T) {
	logs := e.logs.String()
	if !strings.Contains(logs, `"msg":"request"`) {
		t.Fatal("the replicas logged no requests; the check would prove nothing")
	}
	secretsMu.Lock()
	defer secretsMu.Unlock()
	for _, s := range secrets {
		for _, part := range []string{s, mid(s)} {
			if part != "" && strings.Contains(logs, part) {
				t.Errorf("the logs hold a secret (%d characters, starting %.6s…)", len(s), s)
			}
		}
	}
	t.Logf("%d secrets, none in %d KiB of logs", len(secrets), len(logs)>>10)
}

// mid is a 24-character piece from the middle of s (the signature part of a JWT, the MAC part
// of a handle), "" when s is short.
func mid(s string) string {
	if len(s) < 48 {
		return ""
	}
	return s[len(s)/2 : len(s)/2+24]
}

// X42: secrets are compared in constant time. A static check over the code that compares
// MACs, signatures and credentials: every comparison there is hmac.Equal or
// subtle.ConstantTimeCompare, never bytes.Equal, == on strings or []byte conversions.
func TestZZConstantTimeComparisons(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	files := []string{"pkg/receipt/receipt.go", "pkg/auth/auth.go", "sdk/go/webhook/webhook.go"} // webhook: the one HMAC of pushes (pusher and SDK)
	for _, f := range files {
		src, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		fs := token.NewFileSet()
		af, err := parser.ParseFile(fs, f, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		hasConstantTime := strings.Contains(string(src), "hmac.Equal(") || strings.Contains(string(src), "subtle.ConstantTimeCompare(")
		ast.Inspect(af, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.CallExpr:
				if sel, ok := x.Fun.(*ast.SelectorExpr); ok {
					if id, ok := sel.X.(*ast.Ident); ok && id.Name == "bytes" && (sel.Sel.Name == "Equal" || sel.Sel.Name == "Compare") {
						t.Errorf("%s: bytes.%s at %v — compare secrets with hmac.Equal", f, sel.Sel.Name, fs.Position(x.Pos()))
					}
				}
			case *ast.BinaryExpr:
				if (x.Op == token.EQL || x.Op == token.NEQ) && !emptiness(x.X) && !emptiness(x.Y) {
					for _, side := range []ast.Expr{x.X, x.Y} {
						if id, ok := side.(*ast.Ident); ok && secretName(id.Name) {
							t.Errorf("%s: %s compared with %s at %v", f, id.Name, x.Op, fs.Position(x.Pos()))
						}
					}
				}
			}
			return true
		})
		if !hasConstantTime {
			t.Errorf("%s compares no MAC in constant time", f)
		}
	}
}

func secretName(n string) bool {
	n = strings.ToLower(n)
	for _, s := range []string{"mac", "sig", "sum", "secret", "token", "want"} {
		if strings.Contains(n, s) && !strings.Contains(n, "len") {
			return true
		}
	}
	return false
}

// emptiness is "" or nil: comparing a secret with them tells nothing about its value.
func emptiness(e ast.Expr) bool {
	if l, ok := e.(*ast.BasicLit); ok {
		return l.Value == `""`
	}
	id, ok := e.(*ast.Ident)
	return ok && id.Name == "nil"
}
