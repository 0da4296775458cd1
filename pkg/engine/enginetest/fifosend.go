package enginetest

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/engine"
)

// What a fifo send answers (docs/fifo.md, docs/sqs.md): each stored message's sequence number, the
// one its receives report, and a duplicate the original's; and which sends are duplicates of
// which when an explicit dedup id spells a body's content hash.

// testFIFOSendSequence: a send's SequenceNumber is the one a receive of the message reports,
// for single sends, batches over several groups and duplicates (which answer the original's,
// also once the original was acknowledged); standard queues answer none.
func testFIFOSendSequence(t *testing.T, s *suite) {
	q := s.queue(fifo)
	res := s.sendResults(q,
		engine.Message{Body: "a1", GroupID: "a", DedupID: "d-a1"},
		engine.Message{Body: "b1", GroupID: "b"},
		engine.Message{Body: "a2", GroupID: "a"},
	)
	res = append(res, s.sendResults(q, engine.Message{Body: "c1", GroupID: "c", DedupID: "d-c1"})...)
	sent := map[string]uint64{}
	for i, r := range res {
		if r.Err != nil || r.Duplicate || r.SequenceNumber == 0 {
			t.Fatalf("send %d: %+v, want a sequence number", i, r)
		}
		if i > 0 && r.SequenceNumber <= res[i-1].SequenceNumber {
			t.Fatalf("send %d: sequence number %d after %d", i, r.SequenceNumber, res[i-1].SequenceNumber)
		}
		sent[r.MessageID.String()] = r.SequenceNumber
	}
	dup := s.sendResults(q, engine.Message{Body: "other", GroupID: "z", DedupID: "d-a1"})[0]
	if !dup.Duplicate || dup.MessageID != res[0].MessageID || dup.SequenceNumber != res[0].SequenceNumber {
		t.Fatalf("duplicate %+v, want the original's id %s and sequence number %d", dup, res[0].MessageID, res[0].SequenceNumber)
	}
	ms := s.receive(q, 10, time.Minute)
	if len(ms) != len(res) {
		t.Fatalf("received %d messages, want %d", len(ms), len(res))
	}
	for _, m := range ms {
		if want := sent[m.MessageID.String()]; m.SequenceNumber != want {
			t.Fatalf("message %s (%s): received with sequence number %d, sent with %d", m.MessageID, m.Body, m.SequenceNumber, want)
		}
	}
	s.ackAll(q, ms)
	// The original is gone; its duplicate still answers its number.
	if r := s.sendResults(q, engine.Message{Body: "c1", GroupID: "c", DedupID: "d-c1"})[0]; !r.Duplicate || r.SequenceNumber != res[3].SequenceNumber {
		t.Fatalf("duplicate after the original's ack: %+v, want sequence number %d", r, res[3].SequenceNumber)
	}
	std := s.queue()
	if r := s.sendResults(std, engine.Message{Body: "x"})[0]; r.SequenceNumber != 0 {
		t.Fatalf("standard queue send: %+v, want no sequence number", r)
	}
}

// testFIFOHashDedupID: with content-based dedup, an explicit dedup id equal to a body's
// SHA-256 in lowercase hex (the id shown for a content-based send) is that body's id: each
// way round, a later send is a duplicate of the earlier. Another spelling of the hash (upper
// case) is another id, as dedup ids are case-sensitive.
func testFIFOHashDedupID(t *testing.T, s *suite) {
	q := s.queue(fifo, withContentDedup)
	hash := func(body string) string {
		sum := sha256.Sum256([]byte(body))
		return hex.EncodeToString(sum[:])
	}
	byContent := s.sendResults(q, engine.Message{Body: "alpha", GroupID: "g"})[0]
	r := s.sendResults(q, engine.Message{Body: "not alpha", GroupID: "g", DedupID: hash("alpha")})[0]
	if !r.Duplicate || r.MessageID != byContent.MessageID || r.SequenceNumber != byContent.SequenceNumber {
		t.Fatalf("explicit id = hash of an earlier content-based send: %+v, want a duplicate of %+v", r, byContent)
	}
	explicit := s.sendResults(q, engine.Message{Body: "carrier", GroupID: "g", DedupID: hash("beta")})[0]
	if explicit.Duplicate {
		t.Fatalf("first send of an explicit hash id: %+v", explicit)
	}
	if r := s.sendResults(q, engine.Message{Body: "beta", GroupID: "g"})[0]; !r.Duplicate || r.MessageID != explicit.MessageID {
		t.Fatalf("content-based send whose hash an earlier explicit id spelled: %+v, want a duplicate of %s", r, explicit.MessageID)
	}
	upper := s.sendResults(q, engine.Message{Body: "gamma", GroupID: "g", DedupID: strings.ToUpper(hash("alpha"))})[0]
	if upper.Duplicate {
		t.Fatalf("upper-case spelling of a hash: %+v, want a new message", upper)
	}
	// Without content-based dedup an explicit hash id is still the same id as itself.
	plain := s.queue(fifo)
	first := s.sendResults(plain, engine.Message{Body: "x", GroupID: "g", DedupID: hash("delta")})[0]
	if r := s.sendResults(plain, engine.Message{Body: "y", GroupID: "g", DedupID: hash("delta")})[0]; !r.Duplicate || r.MessageID != first.MessageID {
		t.Fatalf("repeated explicit hash id: %+v, want a duplicate of %s", r, first.MessageID)
	}
	s.wantCounts(q, 3, 0, 0)
}
