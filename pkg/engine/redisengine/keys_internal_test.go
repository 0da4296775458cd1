package redisengine

import (
	"testing"

	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/rediskeys"
)

// TestKeysOfCacheNamesTheRightPartition: the cache of partition names answers each partition's
// own names, also after other partitions took its slot: other queues', and the same queue's
// other partitions.
func TestKeysOfCacheNamesTheRightPartition(t *testing.T) {
	q := ids.New()
	p2 := 1
	for keySlot(q, p2) != keySlot(q, 0) {
		p2++
	}
	for _, p := range []int{0, p2, 0} {
		if got, want := keysOf(q, p), rediskeys.PartitionOf(q, p); got.Partition != want {
			t.Fatalf("keysOf(q, %d) names %s, want %s", p, got.Tag, want.Tag)
		}
	}
	qs := make([]ids.ID, 3000) // about three partitions a slot
	for i := range qs {
		qs[i] = ids.New()
	}
	for round := range 2 {
		for i, q := range qs {
			p := i % 4
			if got, want := keysOf(q, p), rediskeys.PartitionOf(q, p); got.Partition != want {
				t.Fatalf("round %d: keysOf(%v, %d) names %s, want %s", round, q, p, got.Tag, want.Tag)
			}
		}
	}
}
