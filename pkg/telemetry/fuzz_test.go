package telemetry_test

import (
	"testing"

	"github.com/queueshq/queues/pkg/telemetry"
)

// FuzzValidTraceparent: whatever ValidTraceparent accepts parses into a valid span context
// with the same ids, so a stored traceparent is always one the propagators read.
func FuzzValidTraceparent(f *testing.F) {
	for _, s := range []string{
		"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
		"01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00",
		"ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
		"00-00000000000000000000000000000000-b7ad6b7169203331-01",
		"00-0AF7651916CD43DD8448EB211C80319C-B7AD6B7169203331-01",
		"", "00--", "garbage",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !telemetry.ValidTraceparent(s) {
			return
		}
		sc := telemetry.SpanContext(s)
		if !sc.IsValid() || sc.TraceID().String() != s[3:35] || sc.SpanID().String() != s[36:52] {
			t.Fatalf("ValidTraceparent(%q) but its span context is %v", s, sc)
		}
	})
}
