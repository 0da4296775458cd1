package redisengine

import (
	"context"
	"testing"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
)

// Recount sums the stored bytes of every message held in the queues' partitions (lists,
// message hashes and dead-letter outboxes) by reading them all, without the counters.
func Recount(t *testing.T, eng engine.Engine, _ ids.ID, queues []ids.ID) int64 {
	t.Helper()
	e := eng.(*Engine)
	ctx := context.Background()
	var n int64
	add := func(raw string) {
		pl, err := decodePayload(raw)
		if err != nil {
			t.Fatalf("recount: %v", err)
		}
		n += engine.PayloadBytes(pl.Body, pl.Attributes)
	}
	for _, q := range queues {
		for p := range engine.MaxPartitions {
			k := keysOf(q, p)
			list, err := e.rdb.LRange(ctx, k.Visible, 0, -1).Result()
			if err != nil {
				t.Fatalf("recount: %v", err)
			}
			for _, v := range list {
				l, err := parseListed(v)
				if err != nil {
					t.Fatalf("recount: %v", err)
				}
				add(l.Payload)
			}
			ms, err := e.rdb.HGetAll(ctx, k.Messages).Result()
			if err != nil {
				t.Fatalf("recount: %v", err)
			}
			for _, v := range ms {
				_, pl := splitValue(v)
				add(pl)
			}
			obs, err := e.rdb.HGetAll(ctx, k.DeadLetterOutbox).Result()
			if err != nil {
				t.Fatalf("recount: %v", err)
			}
			for id, v := range obs {
				ob, err := parseOutbox(id, v)
				if err != nil {
					t.Fatalf("recount: %v", err)
				}
				add(ob.Payload)
			}
		}
	}
	return n
}
