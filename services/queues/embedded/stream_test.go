package embedded_test

import (
	"testing"

	qclient "github.com/queueshq/queues/sdk/go/client"
	"github.com/queueshq/queues/tests/stacktest"
)

// The receive stream's semantics on the embedded engine (the Redis engine's: sdk/go/client).
func TestStreamSemantics(t *testing.T) {
	n, srv := openNode(t, t.TempDir())
	c, err := qclient.New(srv.URL, qclient.WithToken(n.Token))
	if err != nil {
		t.Fatal(err)
	}
	stacktest.StreamSemantics(t, c)
}
