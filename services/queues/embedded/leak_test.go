package embedded_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves a goroutine running (a loop, watcher or
// connection pool its Close should have stopped).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
