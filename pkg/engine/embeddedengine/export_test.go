package embeddedengine

import (
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
)

// Recount sums the stored bytes of the project's messages by reading every record on disk
// (queue records for the project and purge watermarks, state records, payloads; the
// project's topics' log entries and keyed states), without the in-memory counter.
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
		topics, err := recountTopics(tx, project)
		if err != nil {
			return err
		}
		n += topics
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

// recountTopics sums the bytes of the log entries and keyed states of the project's topics.
func recountTopics(tx *bolt.Tx, project ids.ID) (int64, error) {
	var n int64
	err := tx.Bucket(bucketTopic).ForEach(func(k, v []byte) error {
		id, _ := ids.FromBytes(k)
		ti, err := decodeTopic(id, v)
		if err != nil || ti.project != project {
			return err
		}
		if b := tx.Bucket(topicLogBucket(id)); b != nil {
			if err := b.ForEach(func(k, v []byte) error {
				en, err := decodeEntry(k, v)
				n += engine.PayloadBytes(en.Body, en.Attributes)
				return err
			}); err != nil {
				return err
			}
		}
		if b := tx.Bucket(topicStateBucket(id)); b != nil {
			return b.ForEach(func(k, v []byte) error {
				st, err := decodeStateEntry(k, v)
				n += engine.PayloadBytes(st.Body, st.Attributes)
				return err
			})
		}
		return nil
	})
	return n, err
}

// TopicDedups counts the dedup-window records on disk of a topic.
func TopicDedups(t *testing.T, eng engine.Engine, topic ids.ID) int {
	t.Helper()
	n := 0
	err := eng.(*Engine).db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketTopicDedup).Cursor()
		for k, _ := c.Seek(topic[:]); k != nil && ids.ID(k[:16]) == topic; k, _ = c.Next() {
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
