package rediskeys

import (
	"slices"
	"testing"

	"github.com/queueshq/queues/pkg/ids"
)

func TestWakePayloadRoundTrip(t *testing.T) {
	q := ids.New()
	for _, digests := range [][]uint64{nil, {}, {1}, {0xffffffffffffffff, 2, 0x10}} {
		got, back, err := ParseWake(WakePayload(q, digests))
		if err != nil || got != q {
			t.Fatalf("%v: queue %v, %v", digests, got, err)
		}
		want := slices.Clone(digests) // keeps nil and empty apart
		slices.Sort(want)
		if (back == nil) != (want == nil) || !slices.Equal(back, want) {
			t.Fatalf("%v: digests back %v, want %v", digests, back, want)
		}
	}
	if _, d, err := ParseWake(q.String() + "|zz"); err != nil || d != nil {
		t.Fatalf("an unreadable digest list must wake everyone: %v, %v", d, err)
	}
	if _, _, err := ParseWake("not-a-queue|1"); err == nil {
		t.Fatal("a bad queue id parsed")
	}
}
