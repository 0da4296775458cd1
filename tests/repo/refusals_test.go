package repo

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// fieldError matches building an error that names a request field.
var fieldError = regexp.MustCompile(`apierr\.(Invalid|Field)\(`)

// TestEnginesNameNoFields: the engines (pkg/engine and below, the conformance suite aside)
// refuse with package engine's sentinels; only pkg/api names the request field at fault
// (issue 11 item 3), so the field names of an answer live in one place.
func TestEnginesNameNoFields(t *testing.T) {
	t.Parallel()
	goFiles(t, "pkg/engine", production, func(rel, path string) error {
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(src), "\n") {
			if fieldError.MatchString(line) {
				t.Errorf("%s:%d: an engine names a request field: return a refusal of package engine (pkg/api answers it)", rel, i+1)
			}
		}
		return nil
	})
}
