package redisengine

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/rediskeys"
)

// Topics (docs/topics.md). A topic's log, keyed state, bindings, lease and stored bytes live under
// its own hash tag (rediskeys topic.go), so a publish is one script, all or nothing
// (topic_publish.lua). A publish first names the topic in {active}:topics (ActiveTopics, the
// fan-out's work list), then appends, then wakes the fan-out on every replica through the
// engine's wake channel, whose payload is the topic id (WatchTopic).
//
// A "patch" publish merges in Go, with the queues' merge (engine.Merged): the engine reads
// the key's state and its sequence, merges, and the script writes only if the state's
// sequence is still the one read (else the publish reads again), as conflate.go does for
// keyed sends.
//
// The copies into queues are copy.go's; the bindings, the lease and the work list are
// topicbind.go's.

var _ engine.Topics = (*Engine)(nil)

const (
	// trimStep is how many entries one topic_trim.lua call drops, trimSteps how many calls one
	// Trim makes at most: a trim never holds Redis for long, and a long backlog is trimmed
	// over several fan-out rounds.
	trimStep  = 500
	trimSteps = 20
	// logChunk is how many entries one XRANGE of ReadLog reads, so the byte bound is kept
	// without reading a thousand large entries first.
	logChunk = 100
)

// errConflict is topic_publish.lua's refusal when a key's state changed since the engine merged.
var errConflict = errors.New("the key's state changed")

// topicKeys are a topic's keys.
type topicKeys struct {
	log, n, st, sk, bd, lease, b string
}

func topicKeysOf(t ids.ID) topicKeys {
	return topicKeys{
		log: rediskeys.TopicLog(t), n: rediskeys.TopicSeq(t), st: rediskeys.TopicState(t),
		sk: rediskeys.TopicStateKeys(t), bd: rediskeys.TopicBindings(t), lease: rediskeys.TopicLease(t),
		b: rediskeys.TopicBytes(t),
	}
}

// part is the topic's byte hash as the fold (bytes.go) takes a partition's.
func (t topicKeys) part() partKeys { return partKeys{rediskeys.Partition{Bytes: t.b}} }

// asQueue is the topic as the stored-bytes helpers (bytes.go) take a queue.
func asQueue(t engine.Topic) engine.Queue {
	return engine.Queue{ID: t.ID, Project: t.Project, MaxStoredBytes: t.MaxStoredBytes}
}

// CreateTopic names the topic's project in its byte hash, so DeleteTopic (and the fold on
// Cluster) find where its bytes count; the log appears with the first publish.
func (e *Engine) CreateTopic(ctx context.Context, t engine.Topic) error {
	if t.Project.IsZero() {
		return nil
	}
	if err := e.rdb.HSet(ctx, topicKeysOf(t.ID).b, "pj", t.Project.String()).Err(); err != nil {
		return e.wrap(ctx, "create topic", err)
	}
	return nil
}

// DeleteTopic removes every key of the topic (its dedup markers expire) and takes its bytes
// off the project's count, as a queue partition's delete does (queue_delete.lua).
func (e *Engine) DeleteTopic(ctx context.Context, t engine.Topic) error {
	k := topicKeysOf(t.ID)
	q := asQueue(t)
	keys := []string{k.b, k.log, k.n, k.st, k.sk, k.bd, k.lease, rediskeys.TopicWait(t.ID)}
	if e.inline(q) == "1" {
		keys = append(keys, projectBytesKey(t.Project))
	}
	if err := queueDeleteScript.Run(ctx, e.rdb, keys, e.inline(q)).Err(); err != nil {
		return e.wrap(ctx, "delete topic", err)
	}
	e.fold(ctx, t.Project, []partKeys{k.part()})
	if err := topicIdleScript.Run(ctx, e.rdb, []string{rediskeys.ActiveTopics, rediskeys.TopicWakes}, t.ID.String(), 0).Err(); err != nil {
		return e.wrap(ctx, "delete topic", err)
	}
	e.pmu.Lock()
	delete(e.touched, t.ID)
	e.pmu.Unlock()
	return nil
}

// Publish appends msgs with one script call (see the top of this file).
func (e *Engine) Publish(ctx context.Context, t engine.Topic, msgs []engine.PublishMessage) ([]engine.PublishResult, error) {
	if err := e.clockOK(); err != nil {
		return nil, err
	}
	if len(msgs) == 0 {
		return nil, nil
	}
	if err := e.checkHeadroom(); err != nil {
		return nil, err
	}
	if err := e.touchTopic(ctx, t.ID); err != nil {
		return nil, err
	}
	budget := engine.NewMergeBudget()
	msgIDs := make([]ids.ID, len(msgs))
	for i := range msgIDs {
		msgIDs[i] = ids.New()
	}
	for try := 0; try < conflictRetries; try++ {
		p, err := e.planPublish(ctx, t, msgs, msgIDs, budget)
		if err != nil {
			return nil, err
		}
		res, err := e.publishCall(ctx, t, p)
		if err == nil && slices.ContainsFunc(res, func(r engine.PublishResult) bool { return !r.Duplicate }) {
			// Named again after the append (topicbind.go: the work list). The publish is
			// durable: a failure here is logged, not answered (a retry would publish twice).
			if err := e.markActive(ctx, t.ID); err != nil {
				e.log.Warn("redisengine: naming a published topic active failed", "topic", t.ID.String(), "error", err)
			}
		}
		if err == nil && e.opts.SyncReplicas > 0 {
			// As durable as a send (replicas.go): answered once the replicas hold it.
			if err := e.syncReplicas(ctx, partKeys{rediskeys.Partition{WaitMarker: rediskeys.TopicWait(t.ID)}}); err != nil {
				return nil, err
			}
		}
		if !errors.Is(err, errConflict) {
			return res, err
		}
		if !conflictPause(ctx, try) {
			return nil, e.wrap(ctx, "publish", ctx.Err())
		}
	}
	return nil, engine.ErrContended
}

// pubPlan is a publish's script call: its keys and arguments, and the most bytes it can add.
type pubPlan struct {
	keys  []string
	args  []any
	bytes int64
}

// planPublish builds the script call: the merges of patch publishes (from the state read
// now), the entries, the state changes and the dedup markers.
func (e *Engine) planPublish(ctx context.Context, t engine.Topic, msgs []engine.PublishMessage, msgIDs []ids.ID, budget *engine.MergeBudget) (*pubPlan, error) {
	k := topicKeysOf(t.ID)
	q := asQueue(t)
	now := e.nowMs()
	dups, err := e.plannedDuplicates(ctx, t, msgs, now)
	if err != nil {
		return nil, err
	}
	stored, err := e.readPatchBases(ctx, k, msgs, dups)
	if err != nil {
		return nil, err
	}
	p := &pubPlan{keys: []string{k.log, k.n, k.st, k.sk, k.b}}
	if e.inline(q) == "1" {
		p.keys = append(p.keys, projectBytesKey(t.Project))
	}
	p.args = []any{now, e.opts.Channel, t.ID.String(), max(t.MaxStoredBytes, 0), t.Project.String(),
		engine.DedupWindow.Milliseconds(), (engine.DedupWindow + dedupMargin).Milliseconds(), e.inline(q)}
	view := map[string]*engine.StateEntry{} // a key's state as the messages so far leave it (nil: none)
	dedupIdx := map[string]int{}
	for i, m := range msgs {
		body, attrs := m.Body, m.Attributes
		op, expect, tail := "", "", []byte(nil)
		if m.Key != "" && dups[i] != "1" { // a duplicate changes no state
			cur, seen := view[m.Key]
			if !seen {
				cur = stored[m.Key]
				if m.Merge == engine.MergePatch && !m.Delete {
					expect = "0" // the state this patch merges into must still be there
					if cur != nil {
						expect = strconv.FormatUint(cur.Sequence, 10)
					}
				}
			}
			var deleted bool
			body, attrs, deleted, err = engine.MergeState(budget, i, cur, m)
			if err != nil {
				return nil, err
			}
			op, view[m.Key] = "r", &engine.StateEntry{Body: body, Attributes: attrs}
			if deleted {
				op, view[m.Key] = "d", nil
			}
		}
		size := engine.PayloadBytes(body, attrs)
		if op == "r" {
			tail = encodeState(body, attrs)
			p.bytes += size
		}
		p.bytes += size
		dk := 0
		if t.Type == engine.FIFO && m.DedupID != "" {
			if dk = dedupIdx[m.DedupID]; dk == 0 {
				p.keys = append(p.keys, rediskeys.TopicDedup(t.ID, m.DedupID))
				dk = len(p.keys)
				dedupIdx[m.DedupID] = dk
			}
		}
		p.args = append(p.args, encodeEntry(msgIDs[i], m, body, attrs), size, dk, m.Key, op, expect, tail, dups[i])
	}
	return p, nil
}

// plannedDuplicates tells, per message, whether it is a duplicate ("1": its dedup id repeats
// an earlier message of the publish, or a marker within the window holds it), not one ("0"),
// or "" when nothing depends on it. It is read only when a keyed message has a dedup id: a
// duplicate changes no state, so the messages after it of the same key must not merge what it
// carries. topic_publish.lua refuses the call (a conflict: planned again) when a marker changed
// meanwhile.
func (e *Engine) plannedDuplicates(ctx context.Context, t engine.Topic, msgs []engine.PublishMessage, now int64) ([]string, error) {
	out := make([]string, len(msgs))
	if t.Type != engine.FIFO || !slices.ContainsFunc(msgs, func(m engine.PublishMessage) bool { return m.Key != "" && m.DedupID != "" }) {
		return out, nil
	}
	seen := map[string]bool{}
	var keys []string
	var at []int // the message each key is the first of
	for i, m := range msgs {
		switch {
		case m.DedupID == "":
		case seen[m.DedupID]:
			out[i] = "1"
		default:
			seen[m.DedupID], out[i] = true, "0"
			keys, at = append(keys, rediskeys.TopicDedup(t.ID, m.DedupID)), append(at, i)
		}
	}
	vals, err := e.rdb.MGet(ctx, keys...).Result()
	if err != nil {
		return nil, e.wrap(ctx, "publish", err)
	}
	window := engine.DedupWindow.Milliseconds()
	for j, v := range vals {
		s, _ := v.(string) // topic_publish.lua: "<sequence>|<ms>|<message id>"
		_, rest, ok := strings.Cut(s, "|")
		ms, _, _ := strings.Cut(rest, "|")
		if n, err := strconv.ParseInt(ms, 10, 64); ok && err == nil && now-n < window && j < len(at) {
			out[at[j]] = "1" // its repeats are "1" already
		}
	}
	return out, nil
}

// readPatchBases reads the state of every key whose first message in the publish (other than
// a duplicate) is a patch (the state that patch merges into); nil for a key without state.
func (e *Engine) readPatchBases(ctx context.Context, k topicKeys, msgs []engine.PublishMessage, dups []string) (map[string]*engine.StateEntry, error) {
	var keys []string
	first := map[string]bool{}
	for i, m := range msgs {
		if m.Key == "" || first[m.Key] || dups[i] == "1" {
			continue
		}
		first[m.Key] = true
		if m.Merge == engine.MergePatch && !m.Delete {
			keys = append(keys, m.Key)
		}
	}
	out := map[string]*engine.StateEntry{}
	if len(keys) == 0 {
		return out, nil
	}
	vals, err := e.rdb.HMGet(ctx, k.st, keys...).Result()
	if err != nil {
		return nil, e.wrap(ctx, "publish", err)
	}
	for i, v := range vals {
		s, ok := v.(string)
		if !ok {
			continue
		}
		st, err := decodeState(keys[i], s)
		if err != nil {
			return nil, e.wrap(ctx, "publish", err)
		}
		out[keys[i]] = &st
	}
	return out, nil
}

// publishCall runs the publish script, within the project's maxStoredBytes (in the script on
// a single server, by a reservation on Cluster).
func (e *Engine) publishCall(ctx context.Context, t engine.Topic, p *pubPlan) ([]engine.PublishResult, error) {
	k := topicKeysOf(t.ID)
	held, err := e.reserveBytes(ctx, asQueue(t), p.bytes)
	if errors.Is(err, errOverQuota) {
		return nil, &engine.StoredBytesExceeded{Limit: t.MaxStoredBytes}
	}
	if err != nil {
		return nil, err
	}
	vals, err := topicPublishScript.Run(ctx, e.rdb, p.keys, p.args...).Slice()
	if held != "" {
		e.fold(ctx, t.Project, []partKeys{k.part()}, held)
	} else if err == nil {
		e.fold(ctx, t.Project, []partKeys{k.part()})
	}
	if err != nil {
		return nil, e.wrap(ctx, "publish", err)
	}
	if len(vals) == 1 {
		switch code, _ := loneCode(vals); code {
		case publishConflict:
			return nil, errConflict
		case publishOverQuota:
			return nil, &engine.StoredBytesExceeded{Limit: t.MaxStoredBytes}
		}
		return nil, e.wrap(ctx, "publish", errBadReply)
	}
	out, _ := vals[1].([]any)
	n := (len(p.args) - 8) / 8
	if len(vals) != 2 || len(out) != 3*n {
		return nil, e.wrap(ctx, "publish", errBadReply)
	}
	res := make([]engine.PublishResult, n)
	for i := range res {
		id, ok := ids.FromBytes([]byte(str(out[3*i])))
		seq, _ := out[3*i+1].(int64)
		dup, _ := out[3*i+2].(int64)
		if !ok || seq <= 0 {
			return nil, e.wrap(ctx, "publish", errBadReply)
		}
		res[i] = engine.PublishResult{MessageID: id, Sequence: uint64(seq), Duplicate: dup == 1}
	}
	return res, nil
}

// ReadLog reads up to limit entries from sequence from, in chunks of logChunk, until limit
// or MaxLogReadBytes (at least one entry).
func (e *Engine) ReadLog(ctx context.Context, t engine.Topic, from uint64, limit int) ([]engine.LogEntry, error) {
	if limit <= 0 || limit > engine.MaxLogRead {
		limit = engine.MaxLogRead
	}
	from = max(from, 1)
	k := topicKeysOf(t.ID)
	var out []engine.LogEntry
	var bytes int64
	for len(out) < limit {
		chunk := min(limit-len(out), logChunk)
		xs, err := e.rdb.XRangeN(ctx, k.log, strconv.FormatUint(from, 10)+"-0", "+", int64(chunk)).Result()
		if err != nil {
			return nil, e.wrap(ctx, "read log", err)
		}
		for _, x := range xs {
			le, err := logEntry(x)
			if err != nil {
				return nil, e.wrap(ctx, "read log", err)
			}
			size := engine.PayloadBytes(le.Body, le.Attributes)
			if len(out) > 0 && bytes+size > engine.MaxLogReadBytes {
				return out, nil
			}
			out, bytes, from = append(out, le), bytes+size, le.Sequence+1
		}
		if len(xs) < chunk {
			break
		}
	}
	return out, nil
}

// logEntry decodes a stream entry of the log.
func logEntry(x redis.XMessage) (engine.LogEntry, error) {
	seqs, _, _ := strings.Cut(x.ID, "-")
	seq, err := strconv.ParseUint(seqs, 10, 64)
	if err != nil {
		return engine.LogEntry{}, errBadTopicRecord
	}
	raw, _ := x.Values["e"].(string)
	le, err := decodeEntry(raw)
	if err != nil {
		return engine.LogEntry{}, err
	}
	at, err := strconv.ParseInt(str(x.Values["t"]), 10, 64)
	if err != nil {
		return engine.LogEntry{}, errBadTopicRecord
	}
	le.Sequence, le.PublishedAt = seq, fromMs(at)
	return le, nil
}

// Bounds reads the last sequence, the oldest held entry and the topic's stored bytes.
func (e *Engine) Bounds(ctx context.Context, t engine.Topic) (engine.LogBounds, error) {
	k := topicKeysOf(t.ID)
	var last *redis.StringCmd
	var first *redis.XMessageSliceCmd
	var bytes *redis.StringCmd
	if _, err := e.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		last = p.Get(ctx, k.n)
		first = p.XRangeN(ctx, k.log, "-", "+", 1)
		bytes = p.HGet(ctx, k.b, "n")
		return nil
	}); err != nil && !errors.Is(err, redis.Nil) {
		return engine.LogBounds{}, e.wrap(ctx, "bounds", err)
	}
	var b engine.LogBounds
	b.Last, _ = strconv.ParseUint(last.Val(), 10, 64)
	b.Bytes, _ = strconv.ParseInt(bytes.Val(), 10, 64)
	b.First = b.Last + 1
	if xs := first.Val(); len(xs) > 0 {
		seqs, _, _ := strings.Cut(xs[0].ID, "-")
		if s, err := strconv.ParseUint(seqs, 10, 64); err == nil {
			b.First = s
		}
	}
	return b, nil
}

// SequenceAt finds the first sequence published at or after at (topic_seq_at.lua).
func (e *Engine) SequenceAt(ctx context.Context, t engine.Topic, at time.Time) (uint64, error) {
	k := topicKeysOf(t.ID)
	s, err := topicSeqAtScript.Run(ctx, e.rdb, []string{k.log, k.n}, at.UnixMilli()).Int64()
	if err != nil {
		return 0, e.wrap(ctx, "sequence at", err)
	}
	return uint64(max(s, 1)), nil
}

// Trim drops what the retention no longer keeps, trimStep entries per script call, at most
// trimSteps calls; on Cluster it also folds the topic's bytes (making up a fold a crash lost).
func (e *Engine) Trim(ctx context.Context, t engine.Topic) error {
	k := topicKeysOf(t.ID)
	q := asQueue(t)
	keys := []string{k.log, k.n, k.bd, k.b}
	if e.inline(q) == "1" {
		keys = append(keys, projectBytesKey(t.Project))
	}
	defer e.fold(ctx, t.Project, []partKeys{k.part()})
	for range trimSteps {
		vals, err := topicTrimScript.Run(ctx, e.rdb, keys, e.nowMs(), max(t.Retention.Milliseconds(), 0), trimStep, e.inline(q)).Int64Slice()
		if err != nil {
			return e.wrap(ctx, "trim", err)
		}
		if len(vals) != 2 || vals[1] == 0 {
			return nil
		}
	}
	return nil
}
