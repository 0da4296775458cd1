package openapicheck

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// SpecFile is the spec's file name at the module root.
const SpecFile = "openapi.yaml"

// SpecPath finds openapi.yaml by walking up from the working directory to the directory
// that holds go.mod.
func SpecPath() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, SpecFile), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("openapicheck: no go.mod above the working directory")
		}
		dir = parent
	}
}

// ReadSpec loads and validates the spec at path.
func ReadSpec(ctx context.Context, path string) (*openapi3.T, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromFile(path)
	if err != nil {
		return nil, fmt.Errorf("openapicheck: load %s: %w", path, err)
	}
	if err := doc.Validate(ctx); err != nil {
		return nil, fmt.Errorf("openapicheck: %s is not a valid OpenAPI document: %w", path, err)
	}
	return doc, nil
}

// validated remembers, by the spec's content hash, that a spec passed doc.Validate, which
// costs about 20 times the parse (it compiles every example's schema); the checkers of a
// test binary then validate it once.
var validated sync.Map // [sha256.Size]byte -> struct{}

// LoadSpec loads and validates the module's openapi.yaml, failing tb if it cannot. Each call
// returns a fresh document, so a caller may change it (a Checker sets its servers).
func LoadSpec(tb testing.TB) *openapi3.T {
	tb.Helper()
	path, err := SpecPath()
	if err != nil {
		tb.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	sum := sha256.Sum256(data)
	if _, ok := validated.Load(sum); ok {
		doc, err := openapi3.NewLoader().LoadFromFile(path)
		if err != nil {
			tb.Fatalf("openapicheck: load %s: %v", path, err)
		}
		return doc
	}
	doc, err := ReadSpec(context.Background(), path)
	if err != nil {
		tb.Fatal(err)
	}
	validated.Store(sum, struct{}{})
	return doc
}

// OperationIDs lists the operationId of every operation of doc, sorted.
func OperationIDs(doc *openapi3.T) []string {
	var out []string
	for _, path := range doc.Paths.InMatchingOrder() {
		for _, op := range doc.Paths.Value(path).Operations() {
			out = append(out, op.OperationID)
		}
	}
	slices.Sort(out)
	return out
}
