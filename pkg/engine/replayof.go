package engine

import (
	"strconv"
	"strings"

	"github.com/queueshq/queues/pkg/ids"
)

// ReplayOfAttribute is the reserved attribute under which a replayed copy (docs/topics.md#replay,
// replay tasks) names the log entry it copies: "<topic id>:<sequence>". Like TraceparentAttribute
// its "#" keeps it out of every client's reach; the API and the pusher take it out of the
// attributes on every read and show it as the message's replayOf field, and it counts toward
// neither MaxAttributes nor PayloadBytes.
const ReplayOfAttribute = "#replayOf"

// ReplayOf names the topic log entry a replayed message copies.
type ReplayOf struct {
	Topic    ids.ID
	Sequence uint64
}

// WithReplayOf is attrs with r stored under ReplayOfAttribute (a new map; attrs is not
// modified).
func WithReplayOf(attrs map[string]string, r ReplayOf) map[string]string {
	out := make(map[string]string, len(attrs)+1)
	for k, v := range attrs {
		out[k] = v
	}
	out[ReplayOfAttribute] = r.Topic.String() + ":" + strconv.FormatUint(r.Sequence, 10)
	return out
}

// SplitReplayOf separates a stored message's replay origin from its other attributes (nil
// when it has none, or a malformed one). It allocates only when the message has one.
func SplitReplayOf(attrs map[string]string) (clean map[string]string, r *ReplayOf) {
	v, ok := attrs[ReplayOfAttribute]
	if !ok {
		return attrs, nil
	}
	clean = without(attrs, ReplayOfAttribute)
	topic, seq, _ := strings.Cut(v, ":")
	id, err := ids.ParseUUID(topic)
	n, nerr := strconv.ParseUint(seq, 10, 64)
	if err != nil || nerr != nil {
		return clean, nil
	}
	return clean, &ReplayOf{Topic: id, Sequence: n}
}

// SplitReserved separates a stored message's reserved attributes (its traceparent and its
// replay origin) from the client's.
func SplitReserved(attrs map[string]string) (clean map[string]string, tp string, r *ReplayOf) {
	clean, tp = SplitTraceparent(attrs)
	clean, r = SplitReplayOf(clean)
	return clean, tp, r
}

// reservedAttribute reports whether name is one of the service's own attributes, which no
// limit counts.
func reservedAttribute(name string) bool {
	return name == TraceparentAttribute || name == ReplayOfAttribute
}
