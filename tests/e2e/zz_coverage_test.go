package e2e

import (
	"slices"
	"strings"
	"testing"

	"github.com/queueshq/queues/pkg/openapicheck"
)

// TestZZOpenAPICoverage runs last (files run in name order): every operation of openapi.yaml
// must have been exercised by the tests above, each exchange validated against the spec.
func TestZZOpenAPICoverage(t *testing.T) {
	if f := testingFlag("run"); f != "" {
		t.Skipf("-run %q selects a subset of the tests; coverage is checked on full runs", f)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var missing []string
	for _, id := range openapicheck.OperationIDs(openapicheck.LoadSpec(t)) {
		if !w.seen[id] {
			missing = append(missing, id)
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Fatalf("operations of openapi.yaml no test exercised: %s", strings.Join(missing, ", "))
	}
}
