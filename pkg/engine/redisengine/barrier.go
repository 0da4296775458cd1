package redisengine

import (
	"context"
	"encoding/binary"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/rediskeys"
)

// Barrier messages (docs/delivery-options.md#barrier-messages) on standard queues. A queue's
// messages are spread over partitions (one slot each on Cluster), so no script sees them all; the
// design keeps the partitions holding only messages that may be delivered, and puts the queue-wide
// order where it is needed, in one slot:
//
//   - Sending a barrier turns barrier mode on (barrier_hold.lua: field bon of the queue's partitions
//     hash, a new generation) and appends it to the queue's hold list hl; before the send is
//     answered every partition is fenced with that generation (barrier_fence.lua). A fenced partition
//     refuses sends (send.lua answers -2), which then append to the hold too. So from the
//     barrier on, the hold is the acceptance order, and what the partitions hold was accepted
//     before the first held barrier.
//   - The barrier step (barrier_step.lua, driven by receives that fall short, by Sweep, and after a
//     barrier send) moves the hold along: a barrier at its head goes to a partition once every
//     partition holds nothing (fence and count in one pipelined round trip, barrier_fence.lua), and is
//     recorded as out (bout); once the barrier out has left its partition (acknowledged,
//     dead-lettered, expired, purged), the messages after it, up to the next barrier, go to the
//     partitions (insert.lua, idempotent by id), and so on. With the hold empty and no
//     barrier out, barrier mode goes off and the fences are lifted.
//   - Every other way into a partition checks the fence too: keyed sends (keyed_send.lua answers
//     -3; the send goes to the hold unconflated, like every send while a barrier is pending:
//     merging into a message accepted before the barrier would deliver what was sent after
//     it first), and dead-letter moves and move tasks (insert.lua answers -2; insert.go
//     holds the message). Only the step's own release passes a fence. Delays, deadlines,
//     releases and cancels only change messages already in a partition, all accepted before
//     the pending barrier.
//   - Receives, settlements and push are unchanged: nothing in a partition is ever held back.
//   - Stats counts the hold as delayed and Browse lists it as delayed (barrier_hold_browse.lua, after the
//     partitions); both run the step first, so a barrier's followers show as visible as soon
//     as it has left.
//
// Cost: with no barrier pending, a send's script checks one key (EXISTS of the fence) and a
// receive nothing (the mode flag rides on the cached partition count, read by the same HMGET;
// a receive that comes back short reads the cached flag). While barriers are pending, sends
// cost one more round trip (the refused partition send, then the hold; a send that knows the
// mode goes to the hold at once), and the barrier step two to four round trips.
//
// Partitions do not grow while a barrier is pending (grow.lua), so the fences cover them
// all. A release moved to the partitions and then interrupted by a crash is redone by the
// next step after the step's lease (barrierLease) ran out: a message of it acknowledged in
// between would be inserted again (at-least-once; the window is one crashed step).

const (
	// barrierLease bounds how long one caller owns the barrier step (engine clock).
	barrierLease = 10 * time.Second
	// barrierReleaseChunk is how many held messages one step moves to the partitions.
	barrierReleaseChunk = 200
	// barrierPoll is how soon an empty receive on a queue with a pending barrier asks again
	// (NextVisibleAt): a barrier becomes deliverable by an acknowledgement, which wakes no one.
	barrierPoll = 250 * time.Millisecond
)

// holdBytes is the pseudo-partition whose byte hash counts the hold's stored bytes.
func holdBytes(q ids.ID) partKeys { return partKeys{rediskeys.Partition{Bytes: holdBytesKey(q)}} }

// markBarrier records whether queue q has a pending barrier, for receives that fall short.
func (e *Engine) markBarrier(q ids.ID, on bool) {
	e.pmu.Lock()
	defer e.pmu.Unlock()
	if pc, ok := e.parts[q]; ok {
		pc.barrier = on
		e.parts[q] = pc
	} else if on {
		e.parts[q] = partCount{n: 1, barrier: true} // at zero time: refreshed at the next use
	}
}

// barrierPending reports the cached barrier flag of queue q.
func (e *Engine) barrierPending(q ids.ID) bool {
	e.pmu.Lock()
	defer e.pmu.Unlock()
	return e.parts[q].barrier
}

func hasBarrier(msgs []engine.Message) bool {
	for _, m := range msgs {
		if m.Barrier {
			return true
		}
	}
	return false
}

// sendHeld stores msgs in the barrier hold (all of them: a batch keeps its order). With a
// barrier among them, barrier mode goes on and the partitions are fenced before it answers.
// fenced are the partitions that refused the send; when barrier mode is off after all, their
// stale fences are lifted and ok is false: the caller sends the usual way.
func (e *Engine) sendHeld(ctx context.Context, q engine.Queue, msgs []engine.Message, fenced []int) (res []engine.SendResult, ok bool, err error) {
	now := e.nowMs()
	hs := make([]held, len(msgs))
	res = make([]engine.SendResult, len(msgs))
	var bytes int64
	for i, m := range msgs {
		id := ids.New()
		delay := q.Delay
		if m.Delay != nil {
			delay = *m.Delay
		}
		pl := payload{Body: m.Body, Attributes: m.Attributes}
		hs[i] = held{barrier: m.Barrier, id: id, sentAt: now, expiresAt: now + retention(q).Milliseconds(),
			visible: now + visibleOffset(delay, m.Priority), payload: string(pl.encode())}
		bytes += engine.PayloadBytes(m.Body, m.Attributes)
		res[i] = engine.SendResult{MessageID: id}
	}
	if ok, err = e.hold(ctx, q, hs, bytes, fenced); !ok || err != nil {
		return nil, ok, err
	}
	return res, true, nil
}

// hold appends hs to q's barrier hold, in order (barrier_hold.lua), within q.MaxStoredBytes (bytes
// is what they add). With a barrier among them, barrier mode goes on and the partitions are
// fenced before it answers. Without one they are held only while barrier mode is on; when it
// is off, the stale fences of the partitions that refused them (fenced) are lifted and ok is
// false: the caller stores them the usual way.
func (e *Engine) hold(ctx context.Context, q engine.Queue, hs []held, bytes int64, fenced []int) (ok bool, err error) {
	mode := "m"
	for _, h := range hs {
		if h.barrier {
			mode = "b"
		}
	}
	hk := holdBytes(q.ID)
	args := []any{mode, max(q.MaxStoredBytes, 0), q.Project.String()}
	for _, h := range hs {
		args = append(args, h.element())
	}
	rsv, err := e.reserveBytes(ctx, q, bytes)
	if err != nil {
		return false, err
	}
	vals, err := barrierHoldScript.Run(ctx, e.rdb, e.withBytes(q, hk, partitionsKey(q.ID), holdKey(q.ID)), args...).Int64Slice()
	if rsv != "" {
		e.fold(ctx, q.Project, []partKeys{hk}, rsv)
	} else if err == nil {
		e.fold(ctx, q.Project, []partKeys{hk})
	}
	if err == nil && len(vals) != 3 {
		err = errBadReply
	}
	if err != nil {
		return false, e.wrap(ctx, "send", err)
	}
	switch vals[0] {
	case holdOverQuota:
		return false, &engine.StoredBytesExceeded{Limit: q.MaxStoredBytes}
	case holdOff:
		if len(fenced) > 0 {
			e.unfence(ctx, q.ID, vals[1], fenced)
		}
		e.markBarrier(q.ID, false)
		return false, nil
	}
	e.markBarrier(q.ID, true)
	if mode == "b" {
		if _, err := e.fence(ctx, q.ID, vals[1], int(vals[2])); err != nil {
			// Some partition may still take sends: the barrier is stored, but cannot be
			// promised. It fails; its step keeps fencing before it moves the barrier.
			return false, err
		}
		e.publishBarrier(ctx, q.ID)
		e.barrierStep(ctx, q)
	}
	return true, nil
}

// publishBarrier tells every replica that q has a pending barrier (and wakes its watchers).
func (e *Engine) publishBarrier(ctx context.Context, q ids.ID) {
	if err := e.rdb.Publish(ctx, e.opts.Channel, barrierPrefix+q.String()).Err(); err != nil {
		e.log.Warn("redisengine: publishing a barrier", "queue", q.String(), "error", err)
	}
}

// fence fences the n partitions of q with generation g and returns how many messages each
// holds (one pipelined round trip).
func (e *Engine) fence(ctx context.Context, q ids.ID, g int64, n int) ([]int64, error) {
	calls := make([]scriptCall, n)
	for p := range n {
		k := keysOf(q, p)
		calls[p] = scriptCall{barrierFenceScript, []string{k.BarrierFence, k.Visible, k.Messages}, []any{g}}
	}
	counts := make([]int64, n)
	for p, cmd := range e.run(ctx, calls) {
		v, err := cmd.Int64()
		if err != nil {
			return nil, e.wrap(ctx, "barrier", err)
		}
		counts[p] = v
	}
	return counts, nil
}

// unfence lifts fences of generation g or older from the given partitions (failures are
// logged: a stale fence only sends a send the longer way, which lifts it).
func (e *Engine) unfence(ctx context.Context, q ids.ID, g int64, parts []int) {
	calls := make([]scriptCall, len(parts))
	for i, p := range parts {
		calls[i] = scriptCall{barrierUnfenceScript, []string{keysOf(q, p).BarrierFence}, []any{g}}
	}
	for _, cmd := range e.run(ctx, calls) {
		if err := cmd.Err(); err != nil {
			e.log.Warn("redisengine: lifting a barrier fence", "queue", q.String(), "error", err)
		}
	}
}

// bstep runs one op of barrier_step.lua.
func (e *Engine) bstep(ctx context.Context, q engine.Queue, owner string, op string, more ...any) ([]any, error) {
	args := append([]any{op, e.nowMs(), owner, barrierLease.Milliseconds()}, more...)
	keys := e.withBytes(q, holdBytes(q.ID), partitionsKey(q.ID), holdKey(q.ID))
	v, err := barrierStepScript.Run(ctx, e.rdb, keys, args...).Result()
	if err != nil {
		return nil, e.wrap(ctx, "barrier", err)
	}
	if vals, ok := v.([]any); ok {
		return vals, nil
	}
	return []any{v}, nil
}

// barrierStep moves q's barrier hold along as far as it can now (see the top of this file)
// and reports whether it moved messages to the partitions. Failures are logged: the next
// step (a receive, Sweep) takes over.
func (e *Engine) barrierStep(ctx context.Context, q engine.Queue) (moved bool) {
	owner := ids.New().String()
	defer e.fold(ctx, q.Project, []partKeys{holdBytes(q.ID)})
	for range 8 {
		vals, err := e.bstep(ctx, q, owner, "look", barrierReleaseChunk)
		if err != nil || len(vals) == 0 {
			e.log.Warn("redisengine: barrier step", "queue", q.ID.String(), "error", orBad(err))
			return moved
		}
		kind := str(vals[0])
		if kind == "busy" {
			return moved
		}
		if kind == "off" {
			e.markBarrier(q.ID, false)
			return moved
		}
		if len(vals) < 3 {
			return moved
		}
		g, _ := vals[1].(int64)
		n64, _ := vals[2].(int64)
		n := max(int(n64), 1)
		var next bool
		switch kind {
		case "done":
			parts := make([]int, n)
			for p := range n {
				parts[p] = p
			}
			e.unfence(ctx, q.ID, g, parts)
			e.markBarrier(q.ID, false)
			return moved
		case "out":
			next = e.barrierOut(ctx, q, owner, str(vals[3]))
		case "barrier":
			next = e.moveBarrier(ctx, q, owner, g, n, str(vals[3]))
			moved = moved || next
		case "release":
			next = e.release(ctx, q, owner, n, vals[3:])
			moved = moved || next
		}
		if !next {
			_, _ = e.bstep(ctx, q, owner, "unlock")
			return moved
		}
	}
	_, _ = e.bstep(ctx, q, owner, "unlock")
	return moved
}

// barrierOut checks whether the barrier out ("<partition>|<id>") is still in its partition;
// when it has left, it is forgotten and the step goes on (true).
func (e *Engine) barrierOut(ctx context.Context, q engine.Queue, owner, out string) bool {
	ps, id, ok := strings.Cut(out, "|")
	p, err := strconv.Atoi(ps)
	if !ok || err != nil || p < 0 || p >= engine.MaxPartitions {
		_, err = e.bstep(ctx, q, owner, "clear", out) // unreadable: nothing to wait for
		return err == nil
	}
	there, err := e.rdb.HExists(ctx, keysOf(q.ID, p).Messages, id).Result()
	if err != nil || there {
		return false
	}
	_, err = e.bstep(ctx, q, owner, "clear", out)
	return err == nil
}

// held is one element of the hold.
type held struct {
	barrier                    bool
	id                         ids.ID
	sentAt, expiresAt, visible int64
	payload                    string
}

func parseHeld(v string) (held, bool) {
	if len(v) < 18 {
		return held{}, false
	}
	id, ok := ids.FromBytes([]byte(v[1:17]))
	parts := strings.SplitN(v[17:], "|", 4)
	if !ok || len(parts) != 4 {
		return held{}, false
	}
	var h held
	var errs [3]error
	h.sentAt, errs[0] = strconv.ParseInt(parts[0], 10, 64)
	h.expiresAt, errs[1] = strconv.ParseInt(parts[1], 10, 64)
	h.visible, errs[2] = strconv.ParseInt(parts[2], 10, 64)
	if errs[0] != nil || errs[1] != nil || errs[2] != nil {
		return held{}, false
	}
	h.barrier, h.id, h.payload = v[0] == 'b', id, parts[3]
	return h, true
}

// element is h as the hold stores it (barrier_hold.lua; parseHeld reads it back).
func (h held) element() []byte {
	kind := byte('m')
	if h.barrier {
		kind = 'b'
	}
	el := make([]byte, 0, 64+len(h.payload))
	el = append(append(el, kind), h.id[:]...)
	el = strconv.AppendInt(el, h.sentAt, 10)
	el = strconv.AppendInt(append(el, '|'), h.expiresAt, 10)
	el = strconv.AppendInt(append(el, '|'), h.visible, 10)
	return append(append(el, '|'), h.payload...)
}

// insertCall puts a held message into its partition of q's n (by id, so a retried insert
// finds the first), past the partition's fence: the step releases only what may be delivered.
func (e *Engine) insertCall(q engine.Queue, n int, h held) (scriptCall, partKeys, int) {
	p := int(binary.BigEndian.Uint64(h.id[8:]) % uint64(n))
	k := keysOf(q.ID, p)
	return scriptCall{insertScript, e.withBytes(q, k, k.Scheduled, k.Messages, k.LegacyStates, k.Expiry, k.BarrierFence),
		[]any{string(h.id[:]), h.payload, h.visible, h.expiresAt, h.sentAt, e.opts.Channel, q.ID.String(), q.Project.String(), "1"}}, k, p
}

// moveBarrier moves the barrier at the head of the hold to a partition when every partition
// is empty (after fencing them: nothing accepted before the barrier can arrive later).
func (e *Engine) moveBarrier(ctx context.Context, q engine.Queue, owner string, g int64, n int, el string) bool {
	counts, err := e.fence(ctx, q.ID, g, n)
	if err != nil {
		return false
	}
	for _, c := range counts {
		if c > 0 {
			return false
		}
	}
	h, ok := parseHeld(el)
	if !ok {
		return false
	}
	call, k, p := e.insertCall(q, n, h)
	if err := e.run(ctx, []scriptCall{call})[0].Err(); err != nil {
		e.log.Warn("redisengine: moving a barrier", "queue", q.ID.String(), "error", err)
		return false
	}
	e.fold(ctx, q.Project, []partKeys{k})
	_, err = e.bstep(ctx, q, owner, "popb", string(h.id[:]), strconv.Itoa(p)+"|"+string(h.id[:]))
	return err == nil
}

// release moves the held messages at the head of the hold (up to the next barrier) to the
// partitions, then takes them off the hold.
func (e *Engine) release(ctx context.Context, q engine.Queue, owner string, n int, els []any) bool {
	if len(els) == 0 {
		return false
	}
	var calls []scriptCall
	var touched []partKeys
	first := ""
	now := e.nowMs()
	for i, v := range els {
		h, ok := parseHeld(str(v))
		if i == 0 {
			first = str(v)
		}
		if !ok || h.expiresAt <= now {
			continue // expired (it left the queue) or unreadable: dropped with the rest
		}
		c, k, _ := e.insertCall(q, n, h)
		calls, touched = append(calls, c), append(touched, k)
	}
	for _, cmd := range e.run(ctx, calls) {
		if err := cmd.Err(); err != nil {
			e.log.Warn("redisengine: releasing held messages", "queue", q.ID.String(), "error", err)
			e.fold(ctx, q.Project, touched)
			return false
		}
	}
	e.fold(ctx, q.Project, touched)
	if len(first) < 17 {
		return false
	}
	_, err := e.bstep(ctx, q, owner, "popm", len(els), first[1:17])
	return err == nil
}

// stepBarrier runs the barrier step before Stats and Browse of a queue with a pending
// barrier, so they show a barrier's followers released as soon as it has left (as a receive
// would find them), not only after the next receive or Sweep.
func (e *Engine) stepBarrier(ctx context.Context, q engine.Queue) {
	if q.Type == engine.Standard && e.barrierPending(q.ID) {
		e.barrierStep(ctx, q)
	}
}

// receiveBarrier completes a receive that fell short on a queue with a pending barrier: the
// barrier step may move a barrier or released messages to the partitions, which are then
// claimed; an empty answer asks again within barrierPoll.
func (e *Engine) receiveBarrier(ctx context.Context, q engine.Queue, req engine.ReceiveRequest, got engine.ReceiveResult) (engine.ReceiveResult, error) {
	if e.barrierStep(ctx, q) {
		r := req
		r.Max = min(max(req.Max, 1), engine.MaxBatch) - len(got.Messages)
		more, err := e.receive(ctx, q, r)
		if err == nil {
			got.Messages = append(got.Messages, more.Messages...)
			got.NextVisibleAt = more.NextVisibleAt
		}
	}
	if len(got.Messages) > 0 {
		got.NextVisibleAt = time.Time{}
		return got, nil
	}
	if e.barrierPending(q.ID) {
		poll := e.clk.Now().Add(barrierPoll)
		if got.NextVisibleAt.IsZero() || poll.Before(got.NextVisibleAt) {
			got.NextVisibleAt = poll
		}
	}
	return got, nil
}

// browseHold reads up to ask elements of q's hold from the cursor on (segment si: positions
// count every element ever held, so a page's end stays put as the head is released), fewer
// once their bytes reach byteCap. It answers one message and one cursor per element read
// (and the bytes read); a message whose State is "" is
// expired or unreadable (left out, its cursor still counts). Held messages browse as delayed:
// accepted, not deliverable before their barrier (docs/delivery-options.md#barrier-messages), as
// Stats counts them; VisibleAt is when they would be visible but for the barrier, so it may have
// passed.
func (e *Engine) browseHold(ctx context.Context, q engine.Queue, si int, cur browseCursor, hasCur bool, ask, byteCap int, now int64) ([]engine.BrowsedMessage, []browseCursor, int, error) {
	if q.Type != engine.Standard {
		return nil, nil, 0, nil
	}
	from := int64(0)
	if hasCur {
		from = cur.score + 1
	}
	vals, err := barrierHoldBrowseScript.Run(ctx, e.rdb, []string{partitionsKey(q.ID), holdKey(q.ID)}, from, ask, byteCap).Slice()
	if err != nil || len(vals) == 0 {
		return nil, nil, 0, e.wrap(ctx, "browse", orBad(err))
	}
	read := 0
	first, _ := vals[0].(int64)
	ms := make([]engine.BrowsedMessage, len(vals)-1)
	cs := make([]browseCursor, len(vals)-1)
	for i, v := range vals[1:] {
		read += len(str(v))
		h, ok := parseHeld(str(v))
		cs[i] = browseCursor{seg: si, score: first + int64(i), id: string(h.id[:])}
		if !ok {
			continue
		}
		if m, ok := e.browsed(engine.StateDelayed, h.id, h.visible, state{ExpiresAt: h.expiresAt, SentAt: h.sentAt}, h.payload, now); ok {
			ms[i] = m
		}
	}
	return ms, cs, read, nil
}

// purgeHold empties q's hold (Purge, DeleteQueue; del: its byte hash expires after a day).
func (e *Engine) purgeHold(ctx context.Context, q engine.Queue, del bool) error {
	hk := holdBytes(q.ID)
	flag := "0"
	if del {
		flag = "1"
	}
	err := barrierHoldPurgeScript.Run(ctx, e.rdb, e.withBytes(q, hk, partitionsKey(q.ID), holdKey(q.ID)), flag).Err()
	e.fold(ctx, q.Project, []partKeys{hk})
	if err != nil {
		return e.wrap(ctx, "purge", err)
	}
	return nil
}

// heldCount is how many messages q's hold has (counted as delayed), read only while this
// process knows a barrier is pending.
func (e *Engine) heldCount(ctx context.Context, q ids.ID) (int64, error) {
	if !e.barrierPending(q) {
		return 0, nil
	}
	n, err := e.rdb.LLen(ctx, holdKey(q)).Result()
	if err != nil {
		return 0, e.wrap(ctx, "stats", err)
	}
	return n, nil
}

// deleteHold takes a deleted queue's hold off its project's stored bytes. The queue's
// settings are gone: the project is the one its hold's byte hash names.
func (e *Engine) deleteHold(ctx context.Context, q ids.ID) error {
	pj, err := e.rdb.HGet(ctx, holdBytesKey(q), "pj").Result()
	if errors.Is(err, redis.Nil) {
		return nil // never held anything
	}
	if err != nil {
		return e.wrap(ctx, "delete queue", err)
	}
	project, err := ids.ParseUUID(pj)
	if err != nil {
		return nil //nolint:nilerr // a hold with no valid owner was never filled: nothing to purge
	}
	return e.purgeHold(ctx, engine.Queue{ID: q, Project: project}, true)
}
