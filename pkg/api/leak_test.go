package api

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves a goroutine running (a long poll's waiter or a
// stream's writer outliving its request).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
