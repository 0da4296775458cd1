package engine

import "github.com/queueshq/queues/pkg/engine/internal/mergepatch"

// MergeDiff is the RFC 7396 merge patch that turns body old into body new, for the topic
// stream's delta delivery (docs/streaming.md#the-topic-stream): a subscriber holding old applies it
// to get new. ok is false when no merge patch between them can be written: either body is not a
// JSON object (nesting at most MaxPatchDepth), or new sets a member to null (a merge patch's null
// removes a member). The caller then sends new whole.
func MergeDiff(old, new string) (patch string, ok bool) {
	if !mergepatch.IsObject([]byte(old)) || !mergepatch.IsObject([]byte(new)) {
		return "", false
	}
	p, err := mergepatch.Diff([]byte(old), []byte(new))
	if err != nil {
		return "", false
	}
	return string(p), true
}
