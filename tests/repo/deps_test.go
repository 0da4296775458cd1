package repo

import (
	"os/exec"
	"strings"
	"testing"
)

// testSupport are the packages that exist for tests: harnesses that start servers, conformance
// suites and the in-memory fake of the metadata store.
var testSupport = []string{
	"github.com/queueshq/queues/pkg/testenv",
	"github.com/queueshq/queues/pkg/apitest",
	"github.com/queueshq/queues/pkg/stacktest",
	"github.com/queueshq/queues/pkg/engine/enginetest",
	"github.com/queueshq/queues/pkg/meta/metatest",
	"github.com/queueshq/queues/pkg/meta/memmeta",
	"testing",
}

// TestBinaryLinksNoTestSupport: the queues binary's whole dependency graph holds no test
// harness or fake (nor the testing package), so what runs in production is what the suites
// test through the real stores, and a harness's helpers cannot be reached from the API.
func TestBinaryLinksNoTestSupport(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", root+"/services/queues").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := map[string]bool{}
	for _, d := range strings.Fields(string(out)) {
		deps[d] = true
	}
	if !deps["github.com/queueshq/queues/pkg/api"] {
		t.Fatalf("go list -deps gave no pkg/api: the listing is broken\n%s", out)
	}
	for _, p := range testSupport {
		if deps[p] {
			t.Errorf("the queues binary links %s", p)
		}
	}
}
