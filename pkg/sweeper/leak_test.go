package sweeper_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves a goroutine running (a cache's or sweeper's
// loop not stopped by its Close).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
