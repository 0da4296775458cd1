package repo

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// testSupport are the packages that exist for tests: harnesses that start servers, conformance
// suites and the in-memory fake of the metadata store.
var testSupport = []string{
	"github.com/queueshq/queues/pkg/testservers",
	"github.com/queueshq/queues/pkg/openapicheck",
	"github.com/queueshq/queues/tests/stacktest",
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

// TestLibrariesLinkNoCompositionRoot: no package under pkg/ depends on the pusher or on the
// binary's composition roots (services/queues/stack and services/queues/embedded wire the
// API tier and the pusher together): pkg/ holds the parts, and the parts do not reach for
// what assembles them.
func TestLibrariesLinkNoCompositionRoot(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "./pkg/...")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "github.com/queueshq/queues/pkg/api") {
		t.Fatalf("go list -deps gave no pkg/api: the listing is broken\n%s", out)
	}
	for _, d := range deps {
		if d == "github.com/queueshq/queues/pusher" || strings.HasPrefix(d, "github.com/queueshq/queues/pusher/") ||
			strings.HasPrefix(d, "github.com/queueshq/queues/services/") {
			t.Errorf("a package under pkg/ depends on %s (go list -deps ./pkg/...)", d)
		}
	}
}

// TestDoorsAreSiblings: the SQS door is an adapter over the service layer beside /v1's, not
// over /v1's: nothing it links (tests aside) is pkg/api, and the service layer links neither
// door.
func TestDoorsAreSiblings(t *testing.T) {
	for pkg, banned := range map[string][]string{
		"./pkg/sqs":     {"github.com/queueshq/queues/pkg/api"},
		"./pkg/service": {"github.com/queueshq/queues/pkg/api", "github.com/queueshq/queues/pkg/sqs"},
	} {
		cmd := exec.Command("go", "list", "-deps", pkg)
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		deps := strings.Fields(string(out))
		if !slices.Contains(deps, "github.com/queueshq/queues/pkg/engine") {
			t.Fatalf("go list -deps %s gave no pkg/engine: the listing is broken\n%s", pkg, out)
		}
		for _, b := range banned {
			if slices.Contains(deps, b) {
				t.Errorf("%s depends on %s", pkg, b)
			}
		}
	}
}

// TestBinaryHasOneFlagLibrary: no package of this module that the queues binary links
// imports the standard library's flag package, so every command of the binary parses with
// cobra/pflag and `-h` reads the same everywhere (pflag itself imports flag for its bridge,
// which is why the check is on this module's packages, not on the whole graph).
func TestBinaryHasOneFlagLibrary(t *testing.T) {
	const module = "github.com/queueshq/queues/"
	out, err := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`,
		root+"/services/queues").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	seen := false
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 || !strings.HasPrefix(fields[0], module) {
			continue
		}
		seen = seen || fields[0] == module+"services/queues"
		if slices.Contains(fields[1:], "flag") {
			t.Errorf("%s imports the standard library's flag package; use github.com/spf13/pflag", fields[0])
		}
	}
	if !seen {
		t.Fatalf("go list -deps gave no services/queues: the listing is broken\n%s", out)
	}
}
