package redisengine

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/rediskeys"
)

// Topics' keyed state, bindings, fan-out lease and work list (see topics.go).

// The work list. A publish names its topic in {active}:topics before appending (at most once
// per topicTouchEvery per Engine: a publisher that crashes after its append leaves the topic
// named) and again after appending (always: markActive). IdleTopic checks that the sequence
// is still last, removes the topic, checks again and names the topic again if the sequence
// moved. Whatever the interleaving, a publish after last stays on the list: its append came
// either before the second check (which then names the topic again) or after it, and then
// its own naming after the append comes after the removal. (The brief's alternative, a grace
// of 30 s on the naming's age, would keep a caught-up topic listed for 30 s, which the
// conformance suite refuses: idling is at once.) An idle topic's wake time is in
// {active}:twake, set with the removal; ActiveTopics adds the topics whose time has passed
// (the fan-out trims them: a topic nobody publishes to is still trimmed on time).
const (
	// topicTouchEvery is how often one Engine names a topic before publishing to it.
	topicTouchEvery = 10 * time.Second
	// defaultStatePage and maxStatePage bound a StatePage.
	defaultStatePage = 100
	maxStatePage     = 1000
	// leaseBackstop is added to a lease's PX beyond its ttl: the lease lapses by the engine
	// clock (topic_lease.lua); PX only cleans up after a topic nobody leases any more.
	leaseBackstop = time.Minute
)

// touchTopic names t in the active topics unless this Engine did within topicTouchEvery.
func (e *Engine) touchTopic(ctx context.Context, t ids.ID) error {
	now := e.nowMs()
	e.pmu.Lock()
	last, ok := e.touched[t]
	fresh := ok && now-last < topicTouchEvery.Milliseconds() && now >= last
	if !fresh {
		e.touched[t] = now
	}
	e.pmu.Unlock()
	if fresh {
		return nil
	}
	if err := touchScript.Run(ctx, e.rdb, []string{rediskeys.ActiveTopics}, now, t.String()).Err(); err != nil {
		e.pmu.Lock()
		delete(e.touched, t)
		e.pmu.Unlock()
		return e.wrap(ctx, "publish", err)
	}
	return nil
}

// ActiveTopics lists the topics published to since they were last idled, and the idle ones
// whose wake time has passed (topic_active.lua).
func (e *Engine) ActiveTopics(ctx context.Context) ([]ids.ID, error) {
	vals, err := topicActiveScript.Run(ctx, e.rdb, []string{rediskeys.ActiveTopics, rediskeys.TopicWakes}, e.nowMs()).StringSlice()
	if err != nil {
		return nil, e.wrap(ctx, "active topics", err)
	}
	out := make([]ids.ID, 0, len(vals))
	for _, v := range vals {
		if id, err := ids.ParseUUID(v); err == nil {
			out = append(out, id)
		}
	}
	return out, nil
}

// IdleTopic drops the topic from the active topics when its sequence is still last (see
// the work list above), setting its wake time in the same step (topic_idle.lua). A publish that
// raced it leaves the wake time as it was: the next idle sets it.
func (e *Engine) IdleTopic(ctx context.Context, topic ids.ID, last uint64, wakeAt time.Time) error {
	if moved, err := e.seqMoved(ctx, topic, last); moved || err != nil {
		return err
	}
	var at int64
	if !wakeAt.IsZero() {
		at = max(wakeAt.UnixMilli(), 1)
	}
	if err := topicIdleScript.Run(ctx, e.rdb, []string{rediskeys.ActiveTopics, rediskeys.TopicWakes}, topic.String(), at).Err(); err != nil {
		return e.wrap(ctx, "idle topic", err)
	}
	moved, err := e.seqMoved(ctx, topic, last)
	if err != nil || !moved {
		return err
	}
	return e.markActive(ctx, topic)
}

// WakeTopic names the topic in the active topics, as a publish does.
func (e *Engine) WakeTopic(ctx context.Context, topic ids.ID) error { return e.markActive(ctx, topic) }

// seqMoved reports whether the topic's sequence is other than last.
func (e *Engine) seqMoved(ctx context.Context, topic ids.ID, last uint64) (bool, error) {
	s, err := e.rdb.Get(ctx, rediskeys.TopicSeq(topic)).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return false, e.wrap(ctx, "idle topic", err)
	}
	seq, _ := strconv.ParseUint(s, 10, 64)
	return seq != last, nil
}

// markActive names the topic in the active topics (after a publish's append, and when
// IdleTopic lost a race with one).
func (e *Engine) markActive(ctx context.Context, topic ids.ID) error {
	if err := touchScript.Run(ctx, e.rdb, []string{rediskeys.ActiveTopics}, e.nowMs(), topic.String()).Err(); err != nil {
		return e.wrap(ctx, "active topics", err)
	}
	return nil
}

// WatchTopic signals on every publish to the topic, from any replica: a publish's wake-up on
// the engine's channel names the topic id as a send's names its queue id.
func (e *Engine) WatchTopic(topic ids.ID) (<-chan struct{}, func()) { return e.watch.Watch(topic) }

// LeaseTopic takes or renews the topic's fan-out lease (topic_lease.lua, engine clock).
func (e *Engine) LeaseTopic(ctx context.Context, topic ids.ID, owner string, ttl time.Duration) (bool, error) {
	now := e.nowMs()
	n, err := topicLeaseScript.Run(ctx, e.rdb, []string{rediskeys.TopicLease(topic)}, owner, now,
		now+ttl.Milliseconds(), (ttl + leaseBackstop).Milliseconds()).Int()
	if err != nil {
		return false, e.wrap(ctx, "lease topic", err)
	}
	return n == 1, nil
}

// ReleaseTopic gives the lease up if owner holds it.
func (e *Engine) ReleaseTopic(ctx context.Context, topic ids.ID, owner string) error {
	if err := topicReleaseScript.Run(ctx, e.rdb, []string{rediskeys.TopicLease(topic)}, owner).Err(); err != nil {
		return e.wrap(ctx, "release topic", err)
	}
	return nil
}

// State reads one key's state.
func (e *Engine) State(ctx context.Context, t engine.Topic, key string) (engine.StateEntry, error) {
	v, err := e.rdb.HGet(ctx, rediskeys.TopicState(t.ID), key).Result()
	if errors.Is(err, redis.Nil) {
		return engine.StateEntry{}, engine.NoState(key)
	}
	if err != nil {
		return engine.StateEntry{}, e.wrap(ctx, "state", err)
	}
	st, err := decodeState(key, v)
	if err != nil {
		return engine.StateEntry{}, e.wrap(ctx, "state", err)
	}
	return st, nil
}

// StatePage pages through the state in key order; the cursor is the last key answered.
func (e *Engine) StatePage(ctx context.Context, t engine.Topic, limit int, cursor string) ([]engine.StateEntry, string, error) {
	if limit <= 0 {
		limit = defaultStatePage
	}
	limit = min(limit, maxStatePage)
	from := "-"
	if cursor != "" {
		from = "(" + cursor
	}
	keys, err := e.rdb.ZRangeByLex(ctx, rediskeys.TopicStateKeys(t.ID), &redis.ZRangeBy{
		Min: from, Max: "+", Count: int64(limit) + 1}).Result()
	if err != nil {
		return nil, "", e.wrap(ctx, "state", err)
	}
	next := ""
	if len(keys) > limit {
		keys, next = keys[:limit], keys[limit-1]
	}
	if len(keys) == 0 {
		return []engine.StateEntry{}, "", nil
	}
	vals, err := e.rdb.HMGet(ctx, rediskeys.TopicState(t.ID), keys...).Result()
	if err != nil {
		return nil, "", e.wrap(ctx, "state", err)
	}
	out := make([]engine.StateEntry, 0, len(keys))
	for i, v := range vals {
		s, ok := v.(string)
		if !ok {
			continue // deleted between the two reads
		}
		st, err := decodeState(keys[i], s)
		if err != nil {
			return nil, "", e.wrap(ctx, "state", err)
		}
		out = append(out, st)
	}
	return out, next, nil
}

// Bind adds a binding unless it exists (HSETNX: idempotent for the same id).
func (e *Engine) Bind(ctx context.Context, t engine.Topic, b engine.Binding) error {
	if err := e.rdb.HSetNX(ctx, rediskeys.TopicBindings(t.ID), b.ID.String(), encodeBinding(b)).Err(); err != nil {
		return e.wrap(ctx, "bind", err)
	}
	return nil
}

// SetFilter replaces a binding's filter in place (topic_filter.lua), keeping its cursor.
func (e *Engine) SetFilter(ctx context.Context, t engine.Topic, binding ids.ID, filter string) error {
	n, err := topicFilterScript.Run(ctx, e.rdb, []string{rediskeys.TopicBindings(t.ID)}, binding.String(), filter).Int()
	if err != nil {
		return e.wrap(ctx, "set filter", err)
	}
	if n == 0 {
		return engine.ErrNoBinding
	}
	return nil
}

// Unbind removes the binding, then its high-water mark in queue q (another slot).
func (e *Engine) Unbind(ctx context.Context, t engine.Topic, binding ids.ID, q ids.ID) error {
	if err := e.rdb.HDel(ctx, rediskeys.TopicBindings(t.ID), binding.String()).Err(); err != nil {
		return e.wrap(ctx, "unbind", err)
	}
	if err := e.rdb.HDel(ctx, rediskeys.TopicCopied(q), binding.String()).Err(); err != nil {
		return e.wrap(ctx, "unbind", err)
	}
	return nil
}

// Bindings lists the topic's bindings, by id.
func (e *Engine) Bindings(ctx context.Context, t engine.Topic) ([]engine.Binding, error) {
	m, err := e.rdb.HGetAll(ctx, rediskeys.TopicBindings(t.ID)).Result()
	if err != nil {
		return nil, e.wrap(ctx, "bindings", err)
	}
	out := make([]engine.Binding, 0, len(m))
	for k, v := range m {
		id, err := ids.ParseUUID(k)
		if err != nil {
			continue
		}
		b, err := decodeBinding(id, v)
		if err != nil {
			return nil, e.wrap(ctx, "bindings", err)
		}
		out = append(out, b)
	}
	slices.SortFunc(out, func(a, b engine.Binding) int { return slices.Compare(a.ID[:], b.ID[:]) })
	return out, nil
}

// AdvanceBindings records the fan-out's progress (topic_advance.lua).
func (e *Engine) AdvanceBindings(ctx context.Context, t engine.Topic, as []engine.Advance) error {
	if len(as) == 0 {
		return nil
	}
	args := make([]any, 0, 1+5*len(as))
	args = append(args, e.nowMs())
	for _, a := range as {
		args = append(args, a.Binding.String(), strconv.FormatUint(a.Through, 10), a.Copied, a.Failed, a.LastError)
	}
	if err := topicAdvanceScript.Run(ctx, e.rdb, []string{rediskeys.TopicBindings(t.ID)}, args...).Err(); err != nil {
		return e.wrap(ctx, "advance bindings", err)
	}
	return nil
}
