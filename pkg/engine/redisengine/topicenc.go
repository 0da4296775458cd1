package redisengine

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/engine/internal/wire"
	"github.com/queueshq/queues/pkg/ids"
)

// Topic records (rediskeys topic.go). A log entry's field e (version 1):
//
//	byte    version (1)
//	byte    flags (bit 0: deleted, a keyed publish of a null body)
//	16      message id
//	string  body; attributes; string group id; string dedup id; string key
//
// Its sequence is the stream id and its publish time the stream field t, both assigned in
// topic_publish.lua. A state value's tail (after "<seq>|<at>|<bytes>|") is string body, attributes.

const (
	topicEntryVersion = 1
	topicFlagDeleted  = 1
)

var errBadTopicRecord = errors.New("malformed topic record")

// encodeEntry is a log entry's field e.
func encodeEntry(id ids.ID, m engine.PublishMessage, body string, attrs map[string]string) []byte {
	b := make([]byte, 0, 24+len(body)+len(m.GroupID)+len(m.DedupID)+len(m.Key))
	var flags byte
	if m.Delete {
		flags |= topicFlagDeleted
	}
	b = append(b, topicEntryVersion, flags)
	b = append(b, id[:]...)
	b = wire.AppendString(b, body)
	b = wire.AppendAttributes(b, attrs)
	b = wire.AppendString(b, m.GroupID)
	b = wire.AppendString(b, m.DedupID)
	return wire.AppendString(b, m.Key)
}

// decodeEntry reads field e into an entry (Sequence and PublishedAt are the caller's).
func decodeEntry(s string) (engine.LogEntry, error) {
	r := wire.NewReader(s)
	ver, flags := r.Byte(), r.Byte()
	if !r.OK() || ver != topicEntryVersion || flags&^topicFlagDeleted != 0 {
		return engine.LogEntry{}, errBadTopicRecord
	}
	id, ok := ids.FromBytes([]byte(r.Bytes(16)))
	e := engine.LogEntry{MessageID: id, Body: r.String()}
	e.Attributes = r.Attributes()
	e.GroupID, e.DedupID, e.Key = r.String(), r.String(), r.String()
	e.Deleted = flags&topicFlagDeleted != 0
	if !ok || !r.Done() {
		return engine.LogEntry{}, errBadTopicRecord
	}
	return e, nil
}

// encodeState is a state value's tail.
func encodeState(body string, attrs map[string]string) []byte {
	return wire.AppendAttributes(wire.AppendString(make([]byte, 0, len(body)+8), body), attrs)
}

// decodeState reads a state value of key.
func decodeState(key, v string) (engine.StateEntry, error) {
	parts := strings.SplitN(v, "|", 4)
	if len(parts) != 4 {
		return engine.StateEntry{}, errBadTopicRecord
	}
	seq, err1 := strconv.ParseUint(parts[0], 10, 64)
	at, err2 := strconv.ParseInt(parts[1], 10, 64)
	r := wire.NewReader(parts[3])
	st := engine.StateEntry{Key: key, Sequence: seq, PublishedAt: fromMs(at), Body: r.String()}
	st.Attributes = r.Attributes()
	if err1 != nil || err2 != nil || !r.Done() {
		return engine.StateEntry{}, errBadTopicRecord
	}
	return st, nil
}

// encodeBinding is a binding's value in the bindings hash (rediskeys topic.go; topic_advance.lua
// and topic_filter.lua read and rewrite it in place).
func encodeBinding(b engine.Binding) string {
	var at int64
	if !b.LastErrorAt.IsZero() {
		at = b.LastErrorAt.UnixMilli()
	}
	return strconv.FormatUint(b.Sequence, 10) + "|" + strconv.FormatInt(b.Copied, 10) + "|" +
		strconv.FormatInt(b.Failed, 10) + "|" + strconv.FormatInt(at, 10) + "|" + b.Queue.String() + "|" +
		strconv.Itoa(len(b.Filter)) + ":" + b.Filter + b.LastError
}

// decodeBinding reads a binding's value.
func decodeBinding(id ids.ID, v string) (engine.Binding, error) {
	parts := strings.SplitN(v, "|", 6)
	if len(parts) != 6 {
		return engine.Binding{}, errBadTopicRecord
	}
	seq, err1 := strconv.ParseUint(parts[0], 10, 64)
	copied, err2 := strconv.ParseInt(parts[1], 10, 64)
	failed, err3 := strconv.ParseInt(parts[2], 10, 64)
	at, err4 := strconv.ParseInt(parts[3], 10, 64)
	q, err5 := ids.ParseUUID(parts[4])
	ls, rest, ok := strings.Cut(parts[5], ":")
	fl, err6 := strconv.Atoi(ls)
	if err := errors.Join(err1, err2, err3, err4, err5, err6); err != nil || !ok || fl < 0 || fl > len(rest) {
		return engine.Binding{}, errBadTopicRecord
	}
	b := engine.Binding{ID: id, Queue: q, Filter: rest[:fl], Sequence: seq, Copied: copied, Failed: failed,
		LastError: rest[fl:]}
	if at > 0 {
		b.LastErrorAt = time.UnixMilli(at).UTC()
	}
	return b, nil
}
