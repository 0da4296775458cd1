package embedded_test

import (
	"testing"

	"github.com/queueshq/queues/pkg/stacktest"
	qclient "github.com/queueshq/queues/sdk/go/client"
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
