package api

import (
	"strconv"

	"github.com/queueshq/queues/pkg/engine"
)

// replayOfJSON is a replayed message's origin (docs/topics.md#replay): the topic's id and the log
// entry's sequence. The engine keeps it under the reserved engine.ReplayOfAttribute, which no
// answer shows among the attributes.
type replayOfJSON struct {
	Topic    string `json:"topic"`
	Sequence uint64 `json:"sequence"`
}

func replayOfOut(r *engine.ReplayOf) *replayOfJSON {
	if r == nil {
		return nil
	}
	return &replayOfJSON{Topic: r.Topic.String(), Sequence: r.Sequence}
}

// appendReplayOf appends a received message's ",\"replayOf\":{…}" (nothing when r is nil).
func appendReplayOf(b []byte, r *replayOfJSON) []byte {
	if r == nil {
		return b
	}
	b = append(b, `,"replayOf":{"topic":`...)
	b = appendJSONString(b, r.Topic)
	b = append(b, `,"sequence":`...)
	b = strconv.AppendUint(b, r.Sequence, 10)
	return append(b, '}')
}
