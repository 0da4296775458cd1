package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/queueshq/queues/sdk/go/client"
)

// TestCLIFilter: --filter NAME=VALUE on browse and receive; a name given twice lists values
// any of which matches; a malformed one is a usage error.
func TestCLIFilter(t *testing.T) {
	e := newCLIEnv(t)
	e.run(t, "", "queue", "create", "mixed").ok(t)
	e.run(t, "", "send", "mixed", "inv-eu", "--attr", "kind=invoice", "--attr", "region=eu").ok(t)
	e.run(t, "", "send", "mixed", "ref-eu", "--attr", "kind=refund", "--attr", "region=eu").ok(t)
	e.run(t, "", "send", "mixed", "inv-us", "--attr", "kind=invoice", "--attr", "region=us").ok(t)
	e.run(t, "", "browse", "mixed", "--filter", "region=eu").ok(t).has(t, "MESSAGE ID", "inv-eu", "kind=invoice,region=eu", "ref-eu")
	ms := jsonOf[[]client.BrowsedMessage](t, e.run(t, "", "browse", "mixed", "--json", "--filter", "kind=invoice", "--filter", "kind=refund", "--filter", "region=eu").ok(t))
	var got []string
	for _, m := range ms {
		got = append(got, m.Body)
	}
	if !slices.Equal(got, []string{"inv-eu", "ref-eu"}) {
		t.Fatalf("browse kind=invoice|refund, region=eu: %q", got)
	}
	r := e.run(t, "", "receive", "mixed", "-n", "10", "--wait", "0", "--filter", "kind=invoice").ok(t)
	if lines := strings.Fields(r.out); !slices.Equal(lines, []string{"inv-eu", "inv-us"}) {
		t.Fatalf("receive --filter kind=invoice printed %q", lines)
	}
	e.run(t, "", "browse", "mixed").ok(t).has(t, "ref-eu")
	e.run(t, "", "receive", "mixed", "--filter", "kind").fails(t, exitUsage, "--filter wants NAME=VALUE")
	e.run(t, "", "browse", "mixed", "--filter", "bad name=x").fails(t, exitError, "invalid_argument", "field attribute.bad name")
}
