package redisengine

// Fifo queues.
//
// A fifo message lives in the partition of its group, with the same per-message keys as a
// standard message (payload, state, r/f indexes, retention), plus its group membership (keys.go:
// gm, gi, gs, gt). A group is served a batch at a time: a receive takes the oldest available
// groups (gs score <= now) and from each the consecutive visible messages at its head; the
// group's gs score becomes the batch's deadline, which locks it. Every operation that changes a
// group's messages (ack, visibility, dead-letter, expiry, purge of the group) recomputes its
// score from its first WIN messages, which is where its received messages always are, so every
// script stays O(batch).
//
// A send takes two steps:
//
//  1. fifo_reserve, under the queue's hash tag {q:<id>}: for each message, the dedup check, a
//     sequence number from the queue's counter, and its group's partition (the group's current
//     one while it has messages, else a random one among the queue's partitions now). It writes
//     a dedup marker naming the message id, its partition and the window's start.
//  2. fifo_send, pipelined, one call per partition touched: stores the messages, refusing one whose
//     group already holds a higher sequence number there (a concurrent send to the group won
//     the race: the message takes a fresh number and tries again, so a group's order is its
//     sequence order, and sequence numbers increase in delivery order), or whose reservation
//     was fenced (below). For a message with a dedup id it also records "S"+id in the
//     partition's dd, atomically with the message.
//
// Dedup crash safety. The marker is written in step 1, before the message exists: until step
// 2 it is pending, and a process may die in between. A marker alone therefore never answers
// "duplicate": a send that finds a marker within the window asks the marker's partition
// (fifo_verify_dedup) whether "S"+id is there. If it is, the message was stored, and the answer is the
// original id with duplicate=true. If it is not (after a few short waits for a sender that is
// merely slow), fifo_verify_dedup fences the reservation by adding "A"+id, in the same slot and
// atomically with respect to step 2; from then on step 2 of that reservation is refused, so the
// fencing sender can take the reservation over (fifo_reserve "t" mode, compare-and-set on the
// marker) and store its own message. Exactly one of "S"+id and "A"+id can exist, so a duplicate
// answer always names a stored message, and at most one message is stored per dedup id and
// window. A refused (fenced) sender retries with a fresh message id and then finds the new
// holder. Dedup outcomes are trimmed after the window plus a margin; markers expire by PX
// (window + a minute of real time; the window itself is checked against the engine clock).
//
// A duplicate answers the original's sequence number with no extra call: fifo_verify_dedup reads it
// from the original's group entry (gi) while the message is in its group; once it is gone,
// the marker's number stands (the marker names its holder's latest reservation). That number
// is the stored one unless the holder re-reserved (its group moved ahead of it, fifo_send code 3)
// between this send's fifo_reserve and fifo_verify_dedup and its message was then also received and
// acknowledged before fifo_verify_dedup: a window of milliseconds in which the answer may name the
// holder's earlier number.
//
// A group's partition mapping ({q:<id>}:groups) is removed by Sweep once the group has had no
// message in its partition and no send for mappingGrace: fifo_forget_groups drops the partition's sequence
// high-water mark only if the group is still empty, then fifo_unmap_groups removes the mapping only if no
// send allocated since it was read. A send stalled for longer than mappingGrace between its
// two steps could still land in the old partition while a new send maps the group elsewhere;
// sends carry a deadline well below that.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/filter"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/rediskeys"
)

const (
	// dedupMargin is how much longer than the dedup window markers and outcomes are kept.
	dedupMargin = time.Minute
	// maxSendRounds bounds the reserve/store rounds of one fifo send (contention on a group or
	// dedup id makes a message go round again).
	maxSendRounds = 8
	// mappingGrace is how long a group must have been empty and without sends before Sweep
	// forgets its partition.
	mappingGrace = time.Minute
	// groupGCPage is how many group mappings one Sweep call looks at per queue.
	groupGCPage = 200
	// purgeGroupChunk is how many messages one fifo_purge_group call deletes.
	purgeGroupChunk = 500
	// Groups page sizes.
	DefaultGroupsLimit = 100
	MaxGroupsLimit     = 1000
	// noGroup is the group of a message moved into a fifo dead-letter queue from a queue
	// without groups (the API refuses such a redrive policy; this keeps the engine total).
	noGroup = "-"
)

// verifyWaits are the pauses (real time) before each look at a pending reservation; the
// last look fences it.
var verifyWaits = []time.Duration{0, 5 * time.Millisecond, 20 * time.Millisecond, 50 * time.Millisecond}

// fitem is one message on its way into a fifo queue.
type fitem struct {
	idx       int
	id        ids.ID
	pl        payload // Sequence is set per round
	dedup     string  // "" for none
	visible   int64
	expires   int64
	sent      int64
	mode      string // fifo_reserve mode: "n", "r" or "t"+id
	p         int
	seq       uint64
	holder    ids.ID // for a dedup id held by another message: that message, its partition and
	holderP   int    // the sequence number of its latest reservation (0 in an older marker)
	holderSeq uint64
	move      bool // a dead-letter move's insert (runs at full memory; sends do not)
	keep      bool // a topic's copy (copy.go): its id is the published one, kept when fenced
	back      bool // a move bringing a parked group's message back: p and seq name its old place (park.go)
}

// groupPrefix is a group member's prefix: "<g>\x00" + 16 hex digits of seq.
func groupPrefix(g string, seq uint64) string { return fmt.Sprintf("%s\x00%016x", g, seq) }

// dedupIDOf is the message's dedup id: its own, or with content-based dedup the SHA-256 of the
// body in hex.
func dedupIDOf(q engine.Queue, m engine.Message) string {
	if m.DedupID != "" {
		return m.DedupID
	}
	if q.ContentBasedDedup {
		sum := sha256.Sum256([]byte(m.Body))
		return hex.EncodeToString(sum[:])
	}
	return ""
}

func (e *Engine) sendFIFO(ctx context.Context, q engine.Queue, msgs []engine.Message) ([]engine.SendResult, error) {
	now := e.nowMs()
	expires := now + retention(q).Milliseconds()
	visible := now + max(q.Delay, 0).Milliseconds()
	items := make([]*fitem, len(msgs))
	for i, m := range msgs {
		if m.GroupID == "" {
			return nil, &engine.Refusal{Err: engine.ErrGroupRequired, Index: i}
		}
		items[i] = &fitem{
			idx: i, id: ids.New(), dedup: dedupIDOf(q, m), visible: visible, expires: expires, sent: now, mode: "n",
			pl: payload{Body: m.Body, Attributes: m.Attributes, GroupID: m.GroupID, EndGroup: m.EndGroup},
		}
	}
	return e.storeFIFO(ctx, q, items, now)
}

// storeFIFO runs the two steps of a fifo send (see the top of this file) until every item is
// stored, answered as a duplicate, or failed. The partitions' scripts run independently, so
// one can fail after others stored their messages: once any item was stored, a failure is
// reported on the items it concerns (SendResult.Err) and the others keep their results; only
// when none was stored does the send fail as a whole.
func (e *Engine) storeFIFO(ctx context.Context, q engine.Queue, items []*fitem, now int64) ([]engine.SendResult, error) {
	s := &fifoSend{e: e, q: q, now: now, res: make([]engine.SendResult, len(items)), rates: map[int]int64{}}
	todo := items
	for round := 0; len(todo) > 0; round++ {
		if round == maxSendRounds {
			err := &engine.Failure{Err: engine.ErrUnavailable,
				Op: "send: too many concurrent sends to the same message group or dedup id"}
			for _, it := range todo {
				s.fail(it, err)
			}
			break
		}
		todo = s.round(ctx, todo)
	}
	if s.firstErr != nil && !s.stored {
		return nil, s.firstErr
	}
	n, _ := e.partitions(ctx, q.ID)
	for _, rate := range s.rates {
		if rate > int64(e.opts.PartitionSendRate) && n > 0 && n < engine.MaxPartitions {
			e.grow(ctx, q.ID, n, now)
			break
		}
	}
	return s.res, nil
}

// fifoSend is one storeFIFO call: the answers so far and the send rates the partitions
// reported (which may grow the queue).
type fifoSend struct {
	e        *Engine
	q        engine.Queue
	now      int64
	res      []engine.SendResult
	stored   bool
	firstErr error
	rates    map[int]int64
}

func (s *fifoSend) fail(it *fitem, err error) {
	s.res[it.idx] = engine.SendResult{Partition: -1, Err: err}
	if s.firstErr == nil {
		s.firstErr = err
	}
}

// round reserves the items' sequence numbers and dedup ids, stores the writes partition by
// partition and checks the reservations others hold; it returns the items to go again.
func (s *fifoSend) round(ctx context.Context, todo []*fitem) []*fitem {
	e, q := s.e, s.q
	var back []*fitem // brought back to their old places: nothing to reserve
	rest := todo[:0:0]
	for _, it := range todo {
		if it.back {
			back = append(back, it)
		} else {
			rest = append(rest, it)
		}
	}
	writes, verify, err := e.reserve(ctx, q, rest, s.now)
	if err != nil {
		for _, it := range todo {
			s.fail(it, err)
		}
		return nil
	}
	writes = append(writes, back...)
	writes, deferred := deferBehindHeld(writes, verify)
	byPart := map[int][]*fitem{}
	for _, it := range writes {
		byPart[it.p] = append(byPart[it.p], it)
	}
	parts := make([]int, 0, len(byPart))
	for p := range byPart {
		parts = append(parts, p)
	}
	slices.Sort(parts)
	var bytes int64
	for _, it := range writes {
		bytes += engine.PayloadBytes(it.pl.Body, it.pl.Attributes)
	}
	held, err := e.reserveBytes(ctx, q, bytes)
	if err != nil {
		for _, it := range writes {
			s.fail(it, e.sendErr(ctx, q, err))
		}
		parts = nil
	}
	calls, touched := s.calls(parts, byPart)
	cmds := e.run(ctx, calls)
	if held != "" {
		e.fold(ctx, q.Project, touched, held)
	} else {
		e.fold(ctx, q.Project, touched)
	}
	var next []*fitem
	for i, p := range parts {
		next = s.settle(ctx, p, byPart[p], cmds[i], next)
	}
	next = append(s.verify(ctx, verify, next), deferred...)
	// The next round reserves in batch order, so a group's messages get their sequence
	// numbers in the order they were given.
	slices.SortFunc(next, func(a, b *fitem) int { return a.idx - b.idx })
	return next
}

// deferBehindHeld keeps a topic's copies of one group in log order: a copy (keep) whose dedup
// id waits on a reservation it does not hold (another message's, cut between its two steps,
// or a concurrent attempt of the same copy) is stored in a later round with a fresh sequence
// number, so its group's later copies in the batch re-reserve ("r") behind it. (A copy's own
// earlier attempt is re-taken at once in mode "r" and never waits.) Plain sends are unchanged.
func deferBehindHeld(writes, verify []*fitem) (keep, deferred []*fitem) {
	first := map[string]int{} // group -> the batch index of its first held copy
	for _, it := range verify {
		if g := it.pl.GroupID; it.keep {
			if i, ok := first[g]; !ok || it.idx < i {
				first[g] = it.idx
			}
		}
	}
	if len(first) == 0 {
		return writes, nil
	}
	keep = writes[:0:0]
	for _, it := range writes {
		if i, ok := first[it.pl.GroupID]; ok && it.keep && it.idx > i {
			it.mode = "r"
			deferred = append(deferred, it)
			continue
		}
		keep = append(keep, it)
	}
	return keep, deferred
}

// calls are the fifo send scripts of the partitions' writes.
func (s *fifoSend) calls(parts []int, byPart map[int][]*fitem) ([]scriptCall, []partKeys) {
	e, q, now := s.e, s.q, s.now
	calls := make([]scriptCall, len(parts))
	trim := now - (engine.DedupWindow + dedupMargin).Milliseconds()
	touched := make([]partKeys, len(parts))
	for i, p := range parts {
		k := keysOf(q.ID, p)
		touched[i] = k
		attrs := make([]map[string]string, len(byPart[p]))
		for j, it := range byPart[p] {
			attrs[j] = it.pl.Attributes
		}
		wake := rediskeys.WakePayload(q.ID, filter.WakeDigests(attrs...))
		args := []any{now, e.opts.Channel, wake, trim, max(q.MaxStoredBytes, 0), q.Project.String()}
		for _, it := range byPart[p] {
			it.pl.Sequence = it.seq
			resv := "0"
			switch {
			case it.back:
				resv = "2"
			case it.dedup != "":
				resv = "1"
			}
			args = append(args, string(it.id[:]), it.pl.encode(), it.visible, it.expires, it.sent,
				groupPrefix(it.pl.GroupID, it.seq), it.seq, resv)
		}
		script := fifoSendScript
		if byPart[p][0].move {
			script = fifoSendMoveScript
		}
		calls[i] = scriptCall{script, e.withBytes(q, k, k.Scheduled, k.Messages, k.LegacyStates, k.Expiry, k.Rate(now/1000), k.GroupMessages, k.GroupMemberOf, k.GroupsAvailable, k.GroupsLocked, k.GroupLastSeq, k.DedupOutcomes, k.InFlight, k.GroupsParked), args}
	}
	return calls, touched
}

// settle reads partition p's answer for its items and appends those to go again to next.
func (s *fifoSend) settle(ctx context.Context, p int, items []*fitem, cmd *redis.Cmd, next []*fitem) []*fitem {
	e, q := s.e, s.q
	vals, err := cmd.Slice()
	var codes []any
	if code, ok := loneCode(vals); err == nil && ok && code == fifoOverQuota {
		for _, it := range items {
			s.fail(it, e.sendErr(ctx, q, errOverQuota))
		}
		return next
	}
	if err == nil {
		if len(vals) == 2 {
			codes, _ = vals[1].([]any)
		}
		if len(codes) != len(items) {
			err = errBadReply
		}
	}
	if err != nil {
		// This partition's messages are not known to be stored; other partitions may
		// have stored theirs. A retry with the same dedup ids answers a message that
		// was stored after all as a duplicate.
		err = e.wrap(ctx, "send", err)
		for _, it := range items {
			s.fail(it, err)
		}
		return next
	}
	rate, _ := vals[0].(int64)
	s.rates[p] = max(s.rates[p], rate)
	for j, it := range items {
		switch c, _ := codes[j].(int64); c {
		case fifoStored:
			s.res[it.idx] = engine.SendResult{MessageID: it.id, Partition: p, SequenceNumber: it.seq}
			s.stored = true
		case fifoReservationFenced: // fenced: never stored, never answered; go again as a new message
			if !it.keep { // a copy keeps its id: whoever took the reservation over may have stored it
				it.id = ids.New()
			}
			it.mode = "n"
			next = append(next, it)
		case fifoSequenceBehind: // a later sequence number of its group landed first
			if it.back { // its parking ended: a new message at the group's end
				it.back, it.mode = false, "n"
				next = append(next, it)
				continue
			}
			it.mode = "r"
			next = append(next, it)
		default:
			s.fail(it, e.wrap(ctx, "send", errBadReply))
		}
	}
	return next
}

// verify answers the items whose dedup id another send holds: a duplicate of the holder when
// it was stored, else they go again taking the reservation over. A topic's copy whose
// reservation names its own id (an earlier attempt of the same copy, crashed or slow between
// its two steps) is not fenced, since fifo_send would then refuse the id itself: it goes again
// holding that reservation ("r"), in the partition the reservation mapped its group to, where
// a late store of the earlier attempt finds it already there.
func (s *fifoSend) verify(ctx context.Context, verify, next []*fitem) []*fitem {
	for _, it := range verify {
		own := it.keep && it.holder == it.id
		waits := verifyWaits
		if own {
			// Its own earlier attempt: nothing to wait for (a late store of it lands as the
			// same id and is found there), so one look, no pause, no fence.
			waits = verifyWaits[:1]
		}
		ok, seq, err := s.e.verifyReservation(ctx, s.q.ID, it.holderP, it.holder, !own, waits)
		if err != nil {
			s.fail(it, err)
			continue
		}
		if ok {
			if seq == 0 { // its message left its group: the marker's number (reserve) is the last it took
				seq = it.holderSeq
			}
			s.res[it.idx] = engine.SendResult{MessageID: it.holder, Duplicate: true, Partition: -1, SequenceNumber: seq}
			continue
		}
		if own {
			it.mode = "r"
			next = append(next, it)
			continue
		}
		it.mode = "t" + string(it.holder[:]) // fenced: take the reservation over
		next = append(next, it)
	}
	return next
}

// reserve runs fifo_reserve for the items: those it reserved get a partition and a sequence
// number (writes); those whose dedup id is held by another message get that holder (verify).
func (e *Engine) reserve(ctx context.Context, q engine.Queue, todo []*fitem, now int64) (writes, verify []*fitem, err error) {
	if len(todo) == 0 {
		return nil, nil, nil
	}
	keys := []string{partitionsKey(q.ID), seqKey(q.ID), groupMapKey(q.ID)}
	keyIdx := map[string]int{}
	args := []any{now, engine.DedupWindow.Milliseconds(), (engine.DedupWindow + dedupMargin).Milliseconds()}
	for _, it := range todo {
		k := 0
		if it.dedup != "" {
			key := dedupKey(q.ID, it.dedup)
			if k = keyIdx[key]; k == 0 {
				keys = append(keys, key)
				k = len(keys)
				keyIdx[key] = k
			}
		}
		args = append(args, string(it.id[:]), it.pl.GroupID, k, rand.Uint32(), it.mode)
	}
	script := fifoReserveScript
	if len(todo) > 0 && todo[0].move {
		script = fifoReserveMoveScript
	}
	vals, rerr := script.Run(ctx, e.rdb, keys, args...).Slice()
	if rerr == nil && len(vals) != len(todo) {
		rerr = errBadReply
	}
	if rerr != nil {
		return nil, nil, e.wrap(ctx, "send", rerr)
	}
	for j, it := range todo {
		v, _ := vals[j].([]any)
		if len(v) != 5 {
			return nil, nil, e.wrap(ctx, "send", errBadReply)
		}
		status, _ := v[0].(int64)
		p, _ := v[1].(int64)
		if p < 0 || p >= engine.MaxPartitions {
			return nil, nil, e.wrap(ctx, "send", errBadReply)
		}
		switch status {
		case 1:
			seq, _ := v[2].(int64)
			it.p, it.seq = int(p), uint64(seq)
			writes = append(writes, it)
		case 2:
			holder, ok := ids.FromBytes([]byte(str(v[3])))
			if !ok {
				return nil, nil, e.wrap(ctx, "send", errBadReply)
			}
			seq, _ := v[2].(int64)
			it.holder, it.holderP, it.holderSeq = holder, int(p), uint64(seq)
			verify = append(verify, it)
		default:
			return nil, nil, e.wrap(ctx, "send", errBadReply)
		}
	}
	return writes, verify, nil
}

// verifyReservation tells whether the message holding a dedup reservation was stored, waiting
// briefly for a sender that is still between its two steps, and, when fence is set, fences
// the reservation when it was not (see the top of this file). Stored, it also answers the
// message's sequence number while the message is still in its group (else 0).
func (e *Engine) verifyReservation(ctx context.Context, q ids.ID, p int, id ids.ID, fence bool, waits []time.Duration) (bool, uint64, error) {
	k := keysOf(q, p)
	for i, wait := range waits {
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return false, 0, ctx.Err()
			case <-t.C:
			}
		}
		fenceNow := "0"
		if fence && i == len(waits)-1 {
			fenceNow = "1"
		}
		vals, err := fifoVerifyDedupScript.Run(ctx, e.rdb, []string{k.DedupOutcomes, k.GroupMemberOf}, string(id[:]), e.nowMs(), fenceNow).Int64Slice()
		if err == nil && len(vals) != 2 {
			err = errBadReply
		}
		if err != nil {
			return false, 0, e.wrap(ctx, "send", err)
		}
		if vals[0] == 1 {
			return true, uint64(max(vals[1], 0)), nil
		}
	}
	return false, 0, nil
}

// insertFIFO is the second step of dead-letter moves into a fifo queue: the messages join
// their groups there (in the order given), keeping their ids; an id already present is left
// alone, so a retried move does not duplicate it while its group still has messages there.
func (e *Engine) insertFIFO(ctx context.Context, dlq engine.Queue, moved []*fitem) error {
	dlq.MaxStoredBytes = 0 // a move's bytes are the project's already
	if err := e.markBack(ctx, dlq.ID, moved); err != nil {
		return err
	}
	res, err := e.storeFIFO(ctx, dlq, moved, e.nowMs())
	if err != nil {
		return err
	}
	for _, r := range res {
		if r.Err != nil {
			return r.Err
		}
	}
	return nil
}

// receiveFIFO claims up to req.Max messages of a fifo queue. With several partitions, a
// pipelined peek finds the partitions with available groups; the claim goes to them oldest
// head (lowest sequence number, which is queue-wide) first, one message per available group
// and the rest to the partition with the oldest head.
func (e *Engine) receiveFIFO(ctx context.Context, q engine.Queue, req engine.ReceiveRequest, want, n int, now int64) (engine.ReceiveResult, error) {
	if n == 1 {
		return e.claim(ctx, q, req, now, []claim{{p: 0, n: want}})
	}
	calls := make([]scriptCall, n)
	for p := range n {
		k := keysOf(q.ID, p)
		calls[p] = scriptCall{fifoPeekScript, []string{k.GroupMessages, k.GroupsAvailable, k.GroupsLocked}, []any{now}}
	}
	cmds := e.run(ctx, calls)
	type avail struct {
		p, groups int
		oldest    int64
	}
	var have []avail
	var nextAt int64
	var firstErr error
	for p := range n {
		vals, err := cmds[p].Int64Slice()
		if err != nil || len(vals) != 3 {
			firstErr = cmp(firstErr, e.wrap(ctx, "receive", orBad(err)))
			continue
		}
		if vals[0] > 0 {
			have = append(have, avail{p, int(vals[0]), vals[1]})
		} else if vals[2] > 0 && (nextAt == 0 || vals[2] < nextAt) {
			nextAt = vals[2]
		}
	}
	if len(have) == 0 {
		if firstErr != nil {
			return engine.ReceiveResult{}, firstErr
		}
		return engine.ReceiveResult{NextVisibleAt: timeOrZero(nextAt)}, nil
	}
	slices.SortStableFunc(have, func(a, b avail) int {
		switch {
		case a.oldest < b.oldest:
			return -1
		case a.oldest > b.oldest:
			return 1
		}
		return 0
	})
	caps := make([]int, len(have))
	for i, h := range have {
		caps[i] = h.groups
	}
	asks, left := deal(want, caps)
	asks[0] += left // a group may give several messages: the oldest partition gets the rest
	var claims []claim
	for i, a := range asks {
		if a > 0 {
			claims = append(claims, claim{p: have[i].p, n: min(a, engine.MaxBatch)})
		}
	}
	return e.claim(ctx, q, req, now, claims)
}

// sweepFIFO is Sweep's fifo work for partition p beyond the outbox: expired messages (their
// groups rescheduled) and old dedup outcomes.
func (e *Engine) sweepFIFOPartition(ctx context.Context, q engine.Queue, p int, now int64) error {
	k := keysOf(q.ID, p)
	keys := e.withBytes(q, k, append(k.fifo(), k.DedupOutcomes)...)
	trim := now - (engine.DedupWindow + dedupMargin).Milliseconds()
	for range sweepChunks {
		deleted, err := fifoExpireScript.Run(ctx, e.rdb, keys, now, sweepChunk, e.opts.Channel, q.ID.String(), trim).Int()
		if err != nil {
			return e.wrap(ctx, "sweep", err)
		}
		if deleted < sweepChunk {
			break
		}
	}
	return nil
}

// sweepGroupMap forgets the partitions of groups that have been empty, and without sends, for
// mappingGrace (one page of the queue's group map per call; the scan cursor is kept per engine).
func (e *Engine) sweepGroupMap(ctx context.Context, q engine.Queue, now int64) error {
	e.pmu.Lock()
	cur := e.gcCursor[q.ID]
	e.pmu.Unlock()
	kvs, next, err := e.rdb.HScan(ctx, groupMapKey(q.ID), cur, "", groupGCPage).Result()
	if err != nil {
		return e.wrap(ctx, "sweep", err)
	}
	e.pmu.Lock()
	if next == 0 {
		delete(e.gcCursor, q.ID)
	} else {
		e.gcCursor[q.ID] = next
	}
	e.pmu.Unlock()
	type entry struct{ g, v string }
	byPart := map[int][]entry{}
	for i := 0; i+1 < len(kvs); i += 2 {
		f := strings.Split(kvs[i+1], "|")
		if len(f) != 3 {
			continue
		}
		p, err1 := strconv.Atoi(f[0])
		at, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil || p < 0 || p >= engine.MaxPartitions || at > now-mappingGrace.Milliseconds() {
			continue
		}
		byPart[p] = append(byPart[p], entry{kvs[i], kvs[i+1]})
	}
	if len(byPart) == 0 {
		return nil
	}
	parts := make([]int, 0, len(byPart))
	for p := range byPart {
		parts = append(parts, p)
	}
	slices.Sort(parts)
	calls := make([]scriptCall, len(parts))
	for i, p := range parts {
		k := keysOf(q.ID, p)
		args := make([]any, len(byPart[p]))
		for j, en := range byPart[p] {
			args[j] = en.g
		}
		calls[i] = scriptCall{fifoForgetGroupsScript, []string{k.GroupMessages, k.GroupLastSeq, k.GroupsLocked}, args}
	}
	var unmap []any
	for i, cmd := range e.run(ctx, calls) {
		empty, err := cmd.Int64Slice()
		if err != nil {
			return e.wrap(ctx, "sweep", err)
		}
		for j, en := range byPart[parts[i]] {
			if j < len(empty) && empty[j] == 1 {
				unmap = append(unmap, en.g, en.v)
			}
		}
	}
	if len(unmap) > 0 {
		if err := fifoUnmapGroupsScript.Run(ctx, e.rdb, []string{groupMapKey(q.ID)}, unmap...).Err(); err != nil {
			return e.wrap(ctx, "sweep", err)
		}
	}
	return nil
}
