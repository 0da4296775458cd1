package embeddedengine

import (
	"encoding/binary"
	"testing"

	"github.com/queueshq/queues/pkg/ids"
)

// A queue's dedup record is read back from the bolt file: the decoder refuses damage, never
// panics, accepts the records written before it kept the sequence number (id and expiry
// only, seq 0), and what it accepts re-encodes to a record that decodes the same.
func FuzzQueueDedup(f *testing.F) {
	id := ids.New()
	f.Add(encodeDedup(dedupEntry{id: id, expiresAt: 1700000300000, seq: 42}))
	f.Add(binary.AppendVarint(append([]byte(nil), id[:]...), 1700000300000)) // the earlier layout
	for _, v := range []string{"", "short", string(make([]byte, 16)), string(make([]byte, 16)) + "\x01\x80", string(make([]byte, 16)) + "\x01\x02\x03"} {
		f.Add([]byte(v))
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		d, err := decodeDedup(v)
		if err != nil {
			return
		}
		again, err := decodeDedup(encodeDedup(d))
		if err != nil || again != d {
			t.Fatalf("%q: %+v re-encodes to %+v, %v", v, d, again, err)
		}
	})
}

// TestQueueDedupEarlierLayout: a record without the sequence number decodes with seq 0 (a
// duplicate of it answers no number), and one with it keeps it.
func TestQueueDedupEarlierLayout(t *testing.T) {
	id := ids.New()
	old := binary.AppendVarint(append([]byte(nil), id[:]...), 1700000300000)
	if d, err := decodeDedup(old); err != nil || d.id != id || d.expiresAt != 1700000300000 || d.seq != 0 {
		t.Fatalf("earlier layout decoded as %+v, %v", d, err)
	}
	want := dedupEntry{id: id, expiresAt: 1700000300000, seq: 1 << 40}
	if d, err := decodeDedup(encodeDedup(want)); err != nil || d != want {
		t.Fatalf("decoded %+v, %v, want %+v", d, err, want)
	}
	if _, err := decodeDedup(append(encodeDedup(want), 0)); err == nil {
		t.Fatal("a trailing byte was accepted")
	}
}
