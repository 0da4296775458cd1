package embeddedengine_test

import (
	"path/filepath"
	"testing"

	"github.com/queueshq/queues/pkg/clock"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/engine/embeddedengine"
	"github.com/queueshq/queues/pkg/engine/enginetest"
)

// open opens an engine on a file in a fresh directory; it is closed when t ends.
func open(t testing.TB, path string, clk clock.Clock) *embeddedengine.Engine {
	t.Helper()
	e, err := embeddedengine.Open(path, clk, embeddedengine.Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return e
}

func TestConformance(t *testing.T) {
	t.Parallel()
	enginetest.Run(t, enginetest.Harness{
		New: func(t *testing.T) (engine.Engine, *clock.Fake) {
			clk := enginetest.NewClock()
			return open(t, filepath.Join(t.TempDir(), "messages.db"), clk), clk
		},
		Recount: embeddedengine.Recount,
	})
}

func BenchmarkEmbedded(b *testing.B) {
	enginetest.Bench(b, enginetest.BenchHarness{New: func(b *testing.B) (engine.Engine, clock.Clock) {
		return open(b, filepath.Join(b.TempDir(), "messages.db"), clock.Real{}), clock.Real{}
	}})
}
