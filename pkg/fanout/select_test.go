package fanout

import (
	"strings"
	"testing"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/filter"
	"github.com/queueshq/queues/pkg/ids"
)

func entries(n int, attrs func(seq uint64) map[string]string, body string) []engine.LogEntry {
	var es []engine.LogEntry
	for i := 1; i <= n; i++ {
		seq := uint64(i)
		es = append(es, engine.LogEntry{Sequence: seq, MessageID: ids.New(), Body: body, Attributes: attrs(seq)})
	}
	return es
}

// One batch holds at most MaxBatch messages; the entries filtered out before the first one
// left over are accounted for, the ones after it are not.
func TestSelectBatchBoundsAndThrough(t *testing.T) {
	color := func(seq uint64) map[string]string {
		if seq%2 == 0 {
			return map[string]string{"color": "red"}
		}
		return map[string]string{"color": "blue"}
	}
	es := entries(250, color, "x")
	f := &filter.Filter{Attributes: map[string][]string{"color": {"red"}}}
	batch, through := selectBatch(es, 0, f, false)
	if len(batch) != MaxBatch || batch[0].Sequence != 2 || batch[MaxBatch-1].Sequence != 200 {
		t.Fatalf("batch of %d from %d to %d, want 100 from 2 to 200", len(batch), batch[0].Sequence, batch[len(batch)-1].Sequence)
	}
	if through != 201 {
		t.Errorf("through %d, want 201 (202 is selected and left for the next batch)", through)
	}
	batch, through = selectBatch(es, 201, f, false)
	if len(batch) != 25 || through != 250 {
		t.Errorf("second batch %d through %d, want 25 through 250", len(batch), through)
	}
	batch, through = selectBatch(es, 10, &filter.Filter{Attributes: map[string][]string{"color": {"green"}}}, false)
	if len(batch) != 0 || through != 250 {
		t.Errorf("nothing selected: batch %d through %d, want 0 through 250", len(batch), through)
	}
}

func TestSelectBatchBytes(t *testing.T) {
	big := strings.Repeat("b", 1<<20)
	es := entries(10, func(uint64) map[string]string { return nil }, big)
	batch, through := selectBatch(es, 0, nil, false)
	if len(batch) != 4 || through != 4 {
		t.Errorf("batch of %d through %d, want 4 MiB: 4 through 4", len(batch), through)
	}
	huge := entries(2, func(uint64) map[string]string { return nil }, strings.Repeat("h", 5<<20))
	if batch, through = selectBatch(huge, 0, nil, false); len(batch) != 1 || through != 1 {
		t.Errorf("an entry past the byte bound: batch %d through %d, want 1 through 1", len(batch), through)
	}
}

// A fifo copy keeps its group and the published dedup id, else one derived from the message
// id; a copy never carries a conflation key.
func TestCopyOf(t *testing.T) {
	e := engine.LogEntry{Sequence: 7, MessageID: ids.New(), Body: "b", GroupID: "g", Key: "k"}
	c := copyOf(e, true)
	if c.Message.GroupID != "g" || c.Message.DedupID != e.MessageID.String() || c.Message.Key != "" || c.ID != e.MessageID || c.Sequence != 7 {
		t.Errorf("fifo copy %+v", c)
	}
	e.DedupID = "d"
	if c = copyOf(e, true); c.Message.DedupID != "d" {
		t.Errorf("dedup id %q, want the published d", c.Message.DedupID)
	}
	if c = copyOf(e, false); c.Message.GroupID != "" || c.Message.DedupID != "" {
		t.Errorf("standard copy carries fifo fields: %+v", c.Message)
	}
}
