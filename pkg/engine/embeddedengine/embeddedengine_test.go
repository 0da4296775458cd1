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

// BenchmarkDelayScale: receives beside 10^4..10^6 messages delayed over 14 days.
// BenchmarkPriorityScale: receives from 10^3..10^5 visible messages spread over ten
// priorities (QUEUES_BENCH_BACKLOGS sets the sizes).
func BenchmarkPriorityScale(b *testing.B) {
	enginetest.BenchPriorityScale(b, enginetest.BenchHarness{New: func(b *testing.B) (engine.Engine, clock.Clock) {
		return open(b, filepath.Join(b.TempDir(), "messages.db"), clock.Real{}), clock.Real{}
	}}, enginetest.BenchSizes(b, 1000, 10_000, 100_000)...)
}

func BenchmarkDelayScale(b *testing.B) {
	enginetest.BenchDelayScale(b, enginetest.BenchHarness{New: func(b *testing.B) (engine.Engine, clock.Clock) {
		return open(b, filepath.Join(b.TempDir(), "messages.db"), clock.Real{}), clock.Real{}
	}}, 10_000, 100_000, 1_000_000)
}
