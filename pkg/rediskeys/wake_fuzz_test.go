package rediskeys

import (
	"slices"
	"testing"
)

// FuzzParseWake: any payload on the wake channel parses or fails cleanly, never panics, and
// what parses writes back to a payload that parses to the same queue and digests.
func FuzzParseWake(f *testing.F) {
	f.Add("01a24172-3586-76f0-b1c3-cbcac2051baa")
	f.Add("01a24172-3586-76f0-b1c3-cbcac2051baa|ff,1,abcdef0123456789")
	f.Add("01a24172-3586-76f0-b1c3-cbcac2051baa|")
	f.Add("not-a-queue|zz")
	f.Fuzz(func(t *testing.T, payload string) {
		q, digests, err := ParseWake(payload)
		if err != nil {
			return
		}
		q2, d2, err := ParseWake(WakePayload(q, digests))
		if err != nil || q2 != q || !slices.Equal(d2, digests) {
			t.Fatalf("%q: round trip gave %v %v %v, want %v %v", payload, q2, d2, err, q, digests)
		}
	})
}
