package redisengine

import (
	"context"
	"errors"
	"hash/fnv"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/rediskeys"
)

// Conflation (docs/lifecycle.md#conflation-and-delta-publish). A keyed message lives in the
// partition its key hashes to (jump consistent hash over the partition count), so one key's
// messages are in one slot and a script changes the waiting one atomically with the receives of
// that partition: a receive either takes the message before the merge (which then stores a new one)
// or after it. The partition's key index (keys.go: k, ki) names the waiting keyed message and a
// version that every merge raises.
//
// "replace" merges need no read: keyed_send.lua swaps the payload in. "patch" merges are computed
// here, by the same code as the embedded engine's (engine.Merged, one RFC 7396
// implementation): keyed_read.lua reads the waiting payload and its version, keyed_send.lua stores the
// merge only if the version is still the one read (else the send reads again). Redis's Lua
// has cjson, but cjson rounds numbers to 14 digits and turns [] into {}: a merge must not
// change the values it does not patch.
//
// A queue's partition count only grows, one at a time; with jump hashing a key then either
// stays or moves to the new partition, so the partitions a key lived in before are the
// earlier steps of its hash (jumpHistory). A send for a key with a history first looks for
// its waiting message there (newest first) and merges it where it is; only when none waits
// does it store in the key's current partition. Two replicas that disagree on the count for
// a moment (partitionCacheTTL) can store one key's messages in two partitions; the next sends
// merge into the newer one, and the older is delivered as it is.

// conflictRetries bounds how often a patch send reads again after concurrent merges of the
// same key changed the waiting message between its read and its write.
const conflictRetries = 32

// conflictPause waits a random time, growing with try, before a patch send reads again:
// writers that lost a race on one key all retrying at once would collide again, and on a
// loaded machine one of them could lose every round. It reports false if ctx ended.
func conflictPause(ctx context.Context, try int) bool {
	limit := 100 * time.Microsecond << min(try, 7) // at most 12.8 ms
	t := time.NewTimer(rand.N(limit) + time.Microsecond)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// keyed reports whether a send has conflation keys.
func keyed(msgs []engine.Message) bool {
	for i := range msgs {
		if msgs[i].Key != "" {
			return true
		}
	}
	return false
}

// jumpHistory is the partitions key has hashed to as the count grew from 1 to n, oldest
// first; the last is its partition now (Lamping and Veach's jump consistent hash, whose
// steps are exactly those partitions).
func jumpHistory(key string, n int) []int {
	h := fnv.New64a()
	_, _ = h.Write([]byte(key))
	k := h.Sum64()
	var out []int
	var b, j int64
	for j < int64(n) {
		b = j
		out = append(out, int(b))
		k = k*2862933555777941757 + 1
		j = int64(float64(b+1) * (float64(int64(1)<<31) / float64((k>>33)+1)))
	}
	return out
}

// kmsg is one message of a keyed send on its way to a partition.
type kmsg struct {
	i       int // index in the send
	id      ids.ID
	payload []byte
	vis     int64 // delay ms, with the priority band (visibleOffset)
	key     string
	expect  string // keyed_send.lua's expectation
}

// sendKeyed stores a send that has keyed messages: each goes to its key's partition (the
// unkeyed ones together to a random one), one keyed_send.lua call per partition, pipelined; a
// partition whose expectations failed is planned and sent again.
func (e *Engine) sendKeyed(ctx context.Context, q engine.Queue, msgs []engine.Message, n int) ([]engine.SendResult, error) {
	res := make([]engine.SendResult, len(msgs))
	todo := make([]int, len(msgs))
	for i := range msgs {
		todo[i] = i
	}
	other := rand.IntN(n)
	budget := engine.NewMergeBudget().For(q) // every try's merges together
	var lastErr error
	stored := false
	wake := rediskeys.WakePayload(q.ID, wakeDigests(msgs)) // every partition's: a superset
	for try := 0; try < conflictRetries && len(todo) > 0; try++ {
		plan, err := e.planKeyed(ctx, q, msgs, todo, n, other, res, budget)
		if err != nil {
			lastErr = err
			break
		}
		var fenced map[int][]int
		todo, fenced, lastErr = e.runKeyed(ctx, q, plan, res, &stored, wake)
		if len(fenced) > 0 {
			again, err := e.holdKeyed(ctx, q, msgs, fenced, res)
			if err != nil {
				lastErr = err
				break
			}
			stored = stored || len(again) == 0
			todo = sortedInts(append(todo, again...))
		}
		if len(todo) > 0 && lastErr == nil && !conflictPause(ctx, try) {
			lastErr = e.wrap(ctx, "send", ctx.Err())
			break
		}
	}
	for _, i := range todo {
		if lastErr == nil {
			lastErr = engine.ErrContended
		}
		res[i] = engine.SendResult{Partition: -1, Err: lastErr}
	}
	if !stored {
		for _, r := range res {
			if r.Err != nil && !isMessageErr(r.Err) {
				return nil, r.Err
			}
		}
	}
	return res, nil
}

// isMessageErr reports whether err is about one message (a merge it cannot make), not the call.
func isMessageErr(err error) bool { return engine.MergeRefused(err) }

// keyState is what planKeyed knows of a key's waiting message.
type keyState struct {
	p     int
	found bool
	id    ids.ID
	ver   int64
	body  string
	attrs map[string]string
}

// planKeyed decides where each message of todo goes and, for keys merged here (patch, or a
// key that may wait in an earlier partition), what it writes and expects. A message whose
// merge cannot be made (budget included: the send's, across its tries) gets its error in res
// and is left out.
func (e *Engine) planKeyed(ctx context.Context, q engine.Queue, msgs []engine.Message, todo []int, n, other int, res []engine.SendResult, budget *engine.MergeBudget) (map[int][]kmsg, error) {
	need := map[string][]int{} // key -> partitions to read, newest first
	for _, i := range todo {
		m := msgs[i]
		if m.Key == "" {
			continue
		}
		hist := jumpHistory(m.Key, n)
		if m.Merge == engine.MergePatch || len(hist) > 1 {
			if _, ok := need[m.Key]; !ok {
				ps := make([]int, 0, len(hist))
				for j := len(hist) - 1; j >= 0; j-- {
					ps = append(ps, hist[j])
				}
				need[m.Key] = ps
			}
		}
	}
	states, err := e.readKeys(ctx, q, need)
	if err != nil {
		return nil, err
	}
	plan := map[int][]kmsg{}
	first := map[string]bool{}
	for _, i := range todo {
		m := msgs[i]
		km := kmsg{i: i, id: ids.New(), key: m.Key, vis: 0}
		delay := q.Delay
		if m.Delay != nil {
			delay = *m.Delay
		}
		km.vis = visibleOffset(delay, m.Priority)
		body, attrs := m.Body, m.Attributes
		p := other
		if m.Key != "" {
			hist := jumpHistory(m.Key, n)
			p = hist[len(hist)-1]
			if st, ok := states[m.Key]; ok {
				p = st.p
				expect := "n"
				if st.found {
					expect = string(st.id[:]) + strconv.FormatInt(st.ver, 10)
				}
				if st.found {
					b, a, err := engine.Merged(budget, st.body, st.attrs, m)
					if err != nil {
						res[i] = engine.SendResult{Partition: -1, Err: err}
						continue
					}
					body, attrs = b, a
					st.ver++
				} else {
					st.found, st.ver = true, 1
				}
				st.body, st.attrs = body, attrs
				if !first[m.Key] { // later messages of the key follow from the first's check
					first[m.Key] = true
					km.expect = expect
				}
			}
		}
		pl := payload{Body: body, Attributes: attrs}
		km.payload = pl.encode()
		plan[p] = append(plan[p], km)
	}
	return plan, nil
}

// readKeys finds, for each key, the newest of its partitions where its message waits, with
// that message's version, body and attributes; a key waiting nowhere is placed in its first
// (current) partition, not found.
func (e *Engine) readKeys(ctx context.Context, q engine.Queue, need map[string][]int) (map[string]*keyState, error) {
	out := map[string]*keyState{}
	if len(need) == 0 {
		return out, nil
	}
	byPart := map[int][]string{}
	for key, ps := range need {
		for _, p := range ps {
			byPart[p] = append(byPart[p], key)
		}
		out[key] = &keyState{p: ps[0]}
	}
	parts := make([]int, 0, len(byPart))
	calls := make([]scriptCall, 0, len(byPart))
	now := e.nowMs()
	for p, keys := range byPart {
		k := keysOf(q.ID, p)
		args := make([]any, 0, 1+len(keys))
		args = append(args, now)
		for _, key := range keys {
			args = append(args, key)
		}
		parts = append(parts, p)
		calls = append(calls, scriptCall{keyedReadScript, []string{k.Messages, k.LegacyStates, k.InFlight, k.ConflationKeys}, args})
	}
	rank := map[string]map[int]int{} // key -> partition -> position in its list (0 newest)
	for key, ps := range need {
		rank[key] = map[int]int{}
		for j, p := range ps {
			rank[key][p] = j
		}
	}
	best := map[string]int{}
	for ci, cmd := range e.run(ctx, calls) {
		vals, err := cmd.Slice()
		p := parts[ci]
		if err != nil || len(vals) != len(byPart[p]) {
			return nil, e.wrap(ctx, "send", orBad(err))
		}
		for j, key := range byPart[p] {
			v, _ := vals[j].([]any)
			if len(v) != 3 {
				continue
			}
			if b, ok := best[key]; ok && b <= rank[key][p] {
				continue
			}
			pl, err := decodePayload(str(v[2]))
			if err != nil {
				continue
			}
			ver, _ := v[1].(int64)
			best[key] = rank[key][p]
			id, ok := ids.FromBytes([]byte(str(v[0])))
			if !ok {
				continue
			}
			out[key] = &keyState{p: p, found: true, id: id, ver: ver, body: pl.Body, attrs: pl.Attributes}
		}
	}
	return out, nil
}

// holdKeyed sends the messages that fenced partitions refused (fenced: partition -> message
// indexes) to the barrier hold, as they are (a send accepted behind a barrier is not
// conflated), and fills res; it answers the messages to send the usual way again, because
// barrier mode had ended and the stale fences are lifted now.
func (e *Engine) holdKeyed(ctx context.Context, q engine.Queue, msgs []engine.Message, fenced map[int][]int, res []engine.SendResult) ([]int, error) {
	var idx, parts []int
	for p, is := range fenced {
		parts = append(parts, p)
		idx = append(idx, is...)
	}
	idx = sortedInts(idx)
	sub := make([]engine.Message, len(idx))
	for j, i := range idx {
		sub[j] = msgs[i]
	}
	got, ok, err := e.sendHeld(ctx, q, sub, sortedInts(parts))
	if err != nil {
		return nil, err
	}
	if !ok {
		return idx, nil
	}
	for j, i := range idx {
		res[i] = got[j]
	}
	return nil, nil
}

// runKeyed runs one keyed_send.lua call per partition of plan and fills res; it returns the
// messages of partitions whose expectations failed (to plan again), those of partitions
// fenced for a barrier (partition -> messages) and the last call error.
func (e *Engine) runKeyed(ctx context.Context, q engine.Queue, plan map[int][]kmsg, res []engine.SendResult, stored *bool, wake string) ([]int, map[int][]int, error) {
	now := e.nowMs()
	parts := make([]int, 0, len(plan))
	calls := make([]scriptCall, 0, len(plan))
	var reservations []string
	var lastErr error
	for p, ms := range plan {
		k := keysOf(q.ID, p)
		var bytes int64
		args := make([]any, 0, 6+5*len(ms))
		args = append(args, now, e.opts.Channel, wake, now+retention(q).Milliseconds(), max(q.MaxStoredBytes, 0), q.Project.String())
		for _, m := range ms {
			bytes += int64(len(m.payload))
			args = append(args, string(m.id[:]), m.payload, now+m.vis, m.key, m.expect)
		}
		r, err := e.reserveBytes(ctx, q, bytes)
		if err != nil {
			for _, m := range ms {
				res[m.i] = engine.SendResult{Partition: -1, Err: e.sendErr(ctx, q, err)}
			}
			continue
		}
		if r != "" {
			reservations = append(reservations, r)
		}
		parts = append(parts, p)
		calls = append(calls, scriptCall{keyedSendScript, e.withBytes(q, k, k.Scheduled, k.Messages, k.LegacyStates, k.Expiry, k.Rate(now/1000), k.InFlight, k.ConflationKeys, k.ConflationKeyOf, k.BarrierFence), args})
	}
	var again []int
	var fenced map[int][]int
	var touched []partKeys
	for ci, cmd := range e.run(ctx, calls) {
		p, ms := parts[ci], plan[parts[ci]]
		touched = append(touched, keysOf(q.ID, p))
		rate, out, err := keyedReply(cmd.Val(), cmd.Err())
		switch {
		case err == nil && rate == keyedExpectFailed:
			for _, m := range ms {
				again = append(again, m.i)
			}
			continue
		case err == nil && rate == keyedFenced:
			if fenced == nil {
				fenced = map[int][]int{}
			}
			for _, m := range ms {
				fenced[p] = append(fenced[p], m.i)
			}
			continue
		case err == nil && rate == keyedOverQuota:
			err = errOverQuota
		case err == nil && len(out) != 2*len(ms):
			err = errBadReply
		}
		if err != nil {
			lastErr = e.sendErr(ctx, q, err)
			for _, m := range ms {
				res[m.i] = engine.SendResult{Partition: -1, Err: lastErr}
			}
			continue
		}
		*stored = true
		for j, m := range ms {
			id, _ := ids.FromBytes([]byte(str(out[2*j])))
			merged, _ := out[2*j+1].(int64)
			res[m.i] = engine.SendResult{MessageID: id, Merged: merged == 1, Partition: p}
		}
		e.seenEmpty(q.ID, p, 0)
		if rate > int64(e.opts.PartitionSendRate) {
			n, _ := e.partitions(ctx, q.ID)
			if n < engine.MaxPartitions {
				e.grow(ctx, q.ID, n, now)
			}
		}
	}
	e.fold(ctx, q.Project, touched, reservations...)
	return sortedInts(again), fenced, lastErr
}

// keyedReply reads keyed_send.lua's answer.
func keyedReply(val any, err error) (int64, []any, error) {
	if err != nil {
		return 0, nil, err
	}
	vals, _ := val.([]any)
	if len(vals) == 0 {
		return 0, nil, errBadReply
	}
	rate, ok := vals[0].(int64)
	if !ok {
		return 0, nil, errBadReply
	}
	if len(vals) < 2 {
		return rate, nil, nil
	}
	out, _ := vals[1].([]any)
	return rate, out, nil
}

func sortedInts(a []int) []int {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j] < a[j-1]; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
	return a
}

// deleteScan is how many list elements one delete.lua call looks at (and moves out of the
// list into m when they are not the one wanted): a page bounds what one call copies.
const deleteScan = 100

// DeleteMessage removes a visible or delayed message by id
// (docs/lifecycle.md#delete-a-waiting-message). The id does not name its partition, so every
// partition is asked (pipelined); a partition that has not finished looking through its list is
// asked again (delete.lua moves each page it looked at out of the list, where ids are found by
// hash lookup, so the next call starts at the list's new head).
func (e *Engine) DeleteMessage(ctx context.Context, q engine.Queue, id ids.ID) error {
	if err := e.clockOK(); err != nil {
		return err
	}
	n, err := e.partitions(ctx, q.ID)
	if err != nil {
		return err
	}
	parts := make([]int, n)
	for p := range n {
		parts[p] = p
	}
	for len(parts) > 0 {
		now := e.nowMs()
		calls := make([]scriptCall, 0, len(parts))
		for _, p := range parts {
			k := keysOf(q.ID, p)
			if q.Type == engine.FIFO {
				calls = append(calls, scriptCall{fifoDeleteScript, e.withBytes(q, k, k.fifo()...),
					[]any{now, string(id[:]), e.opts.Channel, q.ID.String()}})
				continue
			}
			calls = append(calls, scriptCall{deleteScript, e.withBytes(q, k, k.Scheduled, k.InFlight, k.Messages, k.LegacyStates, k.Expiry, k.Visible, k.VisibleTaken, k.ConflationKeys, k.ConflationKeyOf),
				[]any{now, string(id[:]), deleteScan}})
		}
		var next []int
		var result error = engine.ErrNoMessage
		var touched []partKeys
		for i, cmd := range e.run(ctx, calls) {
			vals, err := cmd.Int64Slice()
			if err != nil || len(vals) == 0 {
				return e.wrap(ctx, "delete message", orBad(err))
			}
			switch vals[0] {
			case 1:
				result = nil
				touched = append(touched, keysOf(q.ID, parts[i]))
			case 2:
				if result != nil {
					result = engine.ErrMessageInFlight
				}
			case 3:
				next = append(next, parts[i])
				touched = append(touched, keysOf(q.ID, parts[i])) // may have dropped expired ones
			case 0:
				touched = append(touched, keysOf(q.ID, parts[i])) // may have dropped an expired one
			}
		}
		e.fold(ctx, q.Project, touched)
		if result == nil || !errors.Is(result, engine.ErrNoMessage) {
			return result
		}
		parts = next
	}
	return engine.ErrNoMessage
}
