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
	noFieldNames(t, "pkg/engine", production, "an engine names a request field: return a refusal of package engine (pkg/api answers it)")
}

// clientText matches building an error that carries a client's text.
var clientText = regexp.MustCompile(`apierr\.(New|Invalid|Field|Quota)\(`)

// TestEnginesWriteNoClientText: the engines' refusals carry facts (sizes, limits, ids) and no
// client sentence; pkg/service words each once for both doors and the fan-out's binding
// records (the "Shape" issue), so an answer's text lives in one place.
func TestEnginesWriteNoClientText(t *testing.T) {
	t.Parallel()
	matching(t, "pkg/engine", production, clientText, "an engine writes a client's text: return a refusal of package engine (pkg/service words it)")
}

// TestStoresNameNoFields: the metadata stores (pkg/meta and below, its conformance suite
// included: it asserts the sentinels), their cache and the other packages beside the API that
// read them refuse with package meta's sentinels, which pkg/api alone answers naming the field
// (the "Shape" issue), as the engines do.
func TestStoresNameNoFields(t *testing.T) {
	t.Parallel()
	notTest := func(rel string) bool { return !strings.HasSuffix(rel, "_test.go") }
	for _, dir := range []string{"pkg/meta", "pkg/metacache", "pkg/tenancy", "pusher"} {
		noFieldNames(t, dir, notTest, "a store names a request field: return a refusal of package meta (pkg/api answers it)")
	}
}

// noFieldNames fails the test at every line below dir (of the files keep accepts) that builds
// an error naming a request field.
func noFieldNames(t *testing.T, dir string, keep func(rel string) bool, advice string) {
	t.Helper()
	matching(t, dir, keep, fieldError, advice)
}

// matching fails the test at every line below dir (of the files keep accepts) that re
// matches.
func matching(t *testing.T, dir string, keep func(rel string) bool, re *regexp.Regexp, advice string) {
	t.Helper()
	goFiles(t, dir, keep, func(rel, path string) error {
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(src), "\n") {
			if re.MatchString(line) {
				t.Errorf("%s:%d: %s", rel, i+1, advice)
			}
		}
		return nil
	})
}
