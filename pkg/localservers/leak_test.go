package localservers

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves a goroutine running (a process watcher or a
// log copier that should have stopped with its server).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
