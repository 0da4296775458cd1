package redisengine

import (
	"maps"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
)

func TestTopicRecordsRoundTrip(t *testing.T) {
	id := ids.New()
	m := engine.PublishMessage{Message: engine.Message{GroupID: "g|1", DedupID: "d:2", Key: "k"}, Delete: true}
	enc := encodeEntry(id, m, "", map[string]string{"a": "|", "": "x"})
	e, err := decodeEntry(string(enc))
	if err != nil || e.MessageID != id || !e.Deleted || e.GroupID != "g|1" || e.DedupID != "d:2" || e.Key != "k" ||
		!maps.Equal(e.Attributes, map[string]string{"a": "|", "": "x"}) {
		t.Fatalf("entry round trip: %+v, %v", e, err)
	}
	for i := range len(enc) { // every truncation is refused, never a panic
		if _, err := decodeEntry(string(enc[:i])); err == nil {
			t.Fatalf("an entry truncated to %d bytes decoded", i)
		}
	}
	st, err := decodeState("k", "7|1700000000123|5|"+string(encodeState("a|b|c", nil)))
	if err != nil || st.Body != "a|b|c" || st.Sequence != 7 || !st.PublishedAt.Equal(time.UnixMilli(1700000000123)) {
		t.Fatalf("state round trip: %+v, %v", st, err)
	}
	b := engine.Binding{ID: ids.New(), Queue: ids.New(), Filter: `{"a":"x|1:2"}`, Sequence: 1 << 40, Copied: 3, Failed: 4,
		LastError: "why: 5|6", LastErrorAt: time.UnixMilli(1700000000999).UTC()}
	got, err := decodeBinding(b.ID, encodeBinding(b))
	if err != nil || got.Filter != b.Filter || got.LastError != b.LastError || got.Sequence != b.Sequence ||
		got.Copied != 3 || got.Failed != 4 || got.Queue != b.Queue || !got.LastErrorAt.Equal(b.LastErrorAt) {
		t.Fatalf("binding round trip: %+v, %v", got, err)
	}
	if _, err := decodeBinding(b.ID, "1|2|3|4|"+b.Queue.String()+"|99:short"); err == nil {
		t.Fatal("a binding whose filter length passes its end decoded")
	}
}
