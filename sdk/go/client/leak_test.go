package client

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves a goroutine running (a consumer's loop, a
// stream's reader or writer, a producer's sender that Close or the context should have
// stopped).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
