package api

import (
	"encoding/json"

	"github.com/queueshq/queues/pkg/engine"
)

// The topic stream's frames and its delta delivery (delta=true, docs/streaming.md#delta-delivery):
// an entry with a key goes out as the RFC 7396 merge patch from the last version of the key
// this stream delivered, so a subscriber holding the state of the world receives only what
// changed.

const (
	// deltaMaxKeys and deltaMaxBytes bound what one stream remembers to diff against (keys,
	// and the bytes of their bodies and names): past either, a key not remembered goes out
	// whole every time, and a remembered key whose new version does not fit is forgotten
	// (its next version goes out whole). A replica's worst case is its stream cap times
	// deltaMaxBytes.
	deltaMaxKeys  = 10_000
	deltaMaxBytes = 4 << 20
)

// deltaMemory is the last body the stream delivered per key.
type deltaMemory struct {
	bodies map[string]string
	bytes  int
}

func newDeltaMemory() *deltaMemory { return &deltaMemory{bodies: map[string]string{}} }

// remember records body as key's last delivered version, within the bounds.
func (m *deltaMemory) remember(key, body string) {
	old, had := m.bodies[key]
	if had {
		m.bytes -= len(key) + len(old)
		delete(m.bodies, key)
	}
	if len(m.bodies) >= deltaMaxKeys || m.bytes+len(key)+len(body) > deltaMaxBytes {
		return
	}
	m.bodies[key] = body
	m.bytes += len(key) + len(body)
}

// forget drops key (its state was deleted: the next version goes out whole).
func (m *deltaMemory) forget(key string) {
	if old, ok := m.bodies[key]; ok {
		m.bytes -= len(key) + len(old)
		delete(m.bodies, key)
	}
}

// topicStreamEntry is a log entry as the stream delivers it: as the log read answers it,
// and with delta=true, "delta": true when body is a merge patch against the key's last
// version this stream delivered.
type topicStreamEntry struct {
	logEntryJSON
	Delta bool `json:"delta,omitempty"`
}

// frame encodes {"messages": […]} and returns the payload bytes it carries (bytesOut).
func (ts *topicStream) frame(entries []engine.LogEntry) ([]byte, int64) {
	out := make([]topicStreamEntry, len(entries))
	var size int64
	for i, e := range entries {
		out[i] = topicStreamEntry{logEntryJSON: logEntryOut(e)}
		if ts.delta != nil && e.Key != "" {
			out[i] = ts.deltaOf(e, out[i])
		}
		body := ""
		if out[i].Body != nil {
			body = *out[i].Body
		}
		size += engine.PayloadBytes(body, e.Attributes)
	}
	b, _ := json.Marshal(map[string][]topicStreamEntry{"messages": out})
	return b, size
}

// deltaOf turns a keyed entry into its delta when the stream remembers the key's last
// version and a merge patch can express the change (both bodies JSON objects, no member set
// to null); otherwise it goes whole. Either way the entry becomes the key's last version.
func (ts *topicStream) deltaOf(e engine.LogEntry, out topicStreamEntry) topicStreamEntry {
	m := ts.delta
	if e.Deleted {
		m.forget(e.Key)
		return out
	}
	if old, ok := m.bodies[e.Key]; ok {
		if patch, ok := engine.MergeDiff(old, e.Body); ok {
			out.Body, out.Delta = &patch, true
		}
	}
	m.remember(e.Key, e.Body)
	return out
}
