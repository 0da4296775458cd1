package embeddedengine

import (
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
)

// Recount sums the stored bytes of the project's messages by reading every record on disk
// (queue records for the project and purge watermarks, state records, payloads), without the
// in-memory counter.
func Recount(t *testing.T, eng engine.Engine, project ids.ID, _ []ids.ID) int64 {
	t.Helper()
	e := eng.(*Engine)
	var n int64
	err := e.db.View(func(tx *bolt.Tx) error {
		owned := map[ids.ID]uint64{} // queue -> purge watermark
		if err := tx.Bucket(bucketQueue).ForEach(func(k, v []byte) error {
			rec, err := decodeQueue(v)
			qid, _ := ids.FromBytes(k)
			if err == nil && rec.project == project {
				owned[qid] = rec.purgeSeq
			}
			return err
		}); err != nil {
			return err
		}
		pb := payloadsIn(tx)
		return tx.Bucket(bucketState).ForEach(func(k, v []byte) error {
			qid, _ := ids.FromBytes(k[:16])
			watermark, ok := owned[qid]
			var m msg
			if _, _, err := decodeState(v, &m); !ok || err != nil || m.seq < watermark {
				return err
			}
			pl, err := decodePayload(pb.get(k))
			if err != nil {
				return err
			}
			n += engine.PayloadBytes(pl.Body, pl.Attributes)
			return nil
		})
	})
	if err != nil {
		t.Fatalf("recount: %v", err)
	}
	return n
}
