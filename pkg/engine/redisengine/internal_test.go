package redisengine

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/testservers"
)

func TestPayloadRoundTrip(t *testing.T) {
	for _, p := range []payload{
		{Body: "x"},
		{Body: "héllo 🎉", Attributes: map[string]string{"a": "", "b.c": "|\x00\n"}},
		{Body: strings.Repeat("z", engine.MaxMessageBytes), GroupID: "g-1", Sequence: 1<<63 + 5},
		{Body: "dead", DeadLetter: &engine.DeadLetterInfo{SourceQueue: ids.New(), Reason: "why | not", At: time.UnixMilli(1_700_000_000_123).UTC()}},
	} {
		got, err := decodePayload(string(p.encode()))
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		if got.Body != p.Body || got.GroupID != p.GroupID || got.Sequence != p.Sequence ||
			!maps.Equal(got.Attributes, p.Attributes) {
			t.Fatalf("round trip of %+v gave %+v", p, got)
		}
		if d, g := p.DeadLetter, got.DeadLetter; (g == nil) != (d == nil) ||
			(d != nil && (g.SourceQueue != d.SourceQueue || g.Reason != d.Reason || !g.At.Equal(d.At))) {
			t.Fatalf("dead-letter info %+v, want %+v", got.DeadLetter, p.DeadLetter)
		}
	}
	enc := (&payload{Body: "abc", Attributes: map[string]string{"k": "v"}}).encode()
	for i := range len(enc) { // every truncation is refused, never a panic
		if _, err := decodePayload(string(enc[:i])); err == nil {
			t.Fatalf("truncated payload of %d bytes decoded", i)
		}
	}
	if _, err := decodePayload(string(enc) + "x"); err == nil {
		t.Fatal("payload with a trailing byte decoded")
	}
}

func FuzzDecodePayload(f *testing.F) {
	f.Add(string((&payload{Body: "abc", Attributes: map[string]string{"k": "v"}}).encode()))
	f.Add(string((&payload{Body: "d", DeadLetter: &engine.DeadLetterInfo{Reason: "r"}}).encode()))
	f.Add("\x01\x00")
	f.Fuzz(func(t *testing.T, s string) {
		p, err := decodePayload(s)
		if err != nil {
			return
		}
		// What decodes re-encodes to a payload that decodes the same.
		again, err := decodePayload(string(p.encode()))
		if err != nil || again.Body != p.Body || !maps.Equal(again.Attributes, p.Attributes) {
			t.Fatalf("re-encoding %q failed: %v", s, err)
		}
	})
}

func TestParseStateAndOutbox(t *testing.T) {
	st, err := parseState("3|1700000000000|1700000060000|1699999990000")
	if err != nil || st.Attempt != 3 || st.ExpiresAt != 1700000060000 {
		t.Fatalf("parseState: %+v, %v", st, err)
	}
	for _, bad := range []string{"", "1|2|3", "a|b|c|d", "1|2|3|4|5", "-1|2|3|4", "99999999999|0|0|0"} {
		if _, err := parseState(bad); err == nil {
			t.Fatalf("parseState(%q) succeeded", bad)
		}
	}
	id := ids.New()
	ob, err := parseOutbox(string(id[:]), "1|10|5|7|a|b|c d"+"PAYLOAD")
	if err != nil || ob.ID != id || ob.At != 10 || ob.SentAt != 5 || ob.Reason != "a|b|c d" || ob.Payload != "PAYLOAD" {
		t.Fatalf("parseOutbox: %+v, %v", ob, err)
	}
	for _, bad := range []string{"", "2|1|1|0|", "1|1|1|9|short", "1|x|1|0|"} {
		if _, err := parseOutbox(string(id[:]), bad); err == nil {
			t.Fatalf("parseOutbox(%q) succeeded", bad)
		}
	}
}

// TestPartitionKeysShareSlot asks a real cluster for the slot of every key a partition's
// scripts touch: one slot per partition, and partitions spread over slots.
func TestPartitionKeysShareSlot(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: testservers.RedisCluster(t)})
	defer rdb.Close()
	ctx := context.Background()
	slot := func(k string) int64 {
		s, err := rdb.ClusterKeySlot(ctx, k).Result()
		if err != nil {
			t.Fatalf("CLUSTER KEYSLOT %s: %v", k, err)
		}
		return s
	}
	q := ids.New()
	slots := map[int64]bool{}
	for p := range engine.MaxPartitions {
		k := keysOf(q, p)
		want := slot(k.Scheduled)
		for _, key := range append(k.all(), k.Rate(1_700_000_000)) {
			if got := slot(key); got != want {
				t.Fatalf("partition %d: %s is in slot %d, %s in %d", p, k.Scheduled, want, key, got)
			}
		}
		slots[want] = true
	}
	if slot(partitionsKey(q)) != slot(purgeKey(q)) {
		t.Fatal("queue-level keys are in different slots")
	}
	if len(slots) < engine.MaxPartitions/2 {
		t.Fatalf("%d partitions share only %d slots", engine.MaxPartitions, len(slots))
	}
}

func TestSplitValueAndListed(t *testing.T) {
	for _, c := range []struct{ in, state, payload string }{
		{"1|2|3|4|payload|with|bars", "1|2|3|4", "payload|with|bars"},
		{"1|2|3|4|", "1|2|3|4", ""},
		{"1|2|3", "1|2|3", ""},
		{"", "", ""},
	} {
		if st, pl := splitValue(c.in); st != c.state || pl != c.payload {
			t.Errorf("splitValue(%q) = %q, %q; want %q, %q", c.in, st, pl, c.state, c.payload)
		}
	}
	id := [16]byte{'|', 2, 3}
	l, err := parseListed(string(id[:]) + "1700000000000|1700000060000|p|q")
	if err != nil || l.ID != id || l.SentAt != 1700000000000 || l.ExpiresAt != 1700000060000 || l.Payload != "p|q" {
		t.Fatalf("parseListed: %+v, %v", l, err)
	}
	for _, bad := range []string{"short", string(id[:]) + "1|2", string(id[:]) + "x|2|p", string(id[:]) + "1|-2|p"} {
		if _, err := parseListed(bad); err == nil {
			t.Errorf("parseListed(%q) accepted", bad)
		}
	}
}
