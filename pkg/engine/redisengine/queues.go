package redisengine

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/filter"
	"github.com/queueshq/queues/pkg/ids"
)

// Purge removes every message sent before it, at most once per engine.PurgeInterval per queue
// (timed by the engine clock). Each partition's message keys are UNLINKed: the messages vanish
// at once and Redis frees them in the background; later sends create fresh keys. Dead-letter
// moves already in a partition's outbox are not purged: they have left the queue.
func (e *Engine) Purge(ctx context.Context, q engine.Queue) error {
	if err := e.clockOK(); err != nil {
		return err
	}
	now := e.nowMs()
	wait, err := purgeGateScript.Run(ctx, e.rdb, []string{purgeKey(q.ID)}, now, engine.PurgeInterval.Milliseconds()).Int64()
	if err != nil {
		return e.wrap(ctx, "purge", err)
	}
	if wait > 0 {
		d := time.Duration(wait) * time.Millisecond
		return &engine.Refusal{Err: engine.ErrPurgeTooSoon, Wait: d}
	}
	n, err := e.partitionsFresh(ctx, q.ID)
	if err != nil {
		return err
	}
	calls := make([]scriptCall, n)
	parts := make([]partKeys, n)
	for p := range n {
		k := keysOf(q.ID, p)
		parts[p] = k
		keys := append([]string{k.Visible, k.VisibleTaken, k.Bytes}, k.purged()[2:]...)
		if e.inline(q) == "1" {
			keys = append(keys, projectBytesKey(q.Project))
		}
		calls[p] = scriptCall{purgePartitionScript, keys, []any{e.inline(q)}}
	}
	cmds := e.run(ctx, calls)
	e.fold(ctx, q.Project, parts)
	for _, cmd := range cmds {
		if err := cmd.Err(); err != nil {
			return e.wrap(ctx, "purge", err)
		}
	}
	if q.Type == engine.Standard {
		if err := e.purgeHold(ctx, q, false); err != nil {
			return err
		}
	}
	if err := e.clearHoldings(ctx, q.ID); err != nil {
		return err
	}
	e.publish(ctx, q.ID)
	return nil
}

// DeleteQueue removes every key of the queue, of all the partitions it could have, and wakes
// its watchers. A fifo queue's dedup markers are left to expire (PX): their names cannot be
// listed without a scan, and a deleted queue's id is never used again.
func (e *Engine) DeleteQueue(ctx context.Context, q ids.ID) error {
	if err := e.deleteCounted(ctx, q); err != nil {
		return err
	}
	if err := e.deleteHold(ctx, q); err != nil {
		return err
	}
	if err := e.deleteConsumers(ctx, q); err != nil {
		return err
	}
	if _, err := e.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for p := range engine.MaxPartitions {
			pipe.Unlink(ctx, keysOf(q, p).all()...)
		}
		pipe.Unlink(ctx, partitionsKey(q), purgeKey(q), seqKey(q), groupMapKey(q), holdKey(q))
		pipe.Unlink(ctx, topicCopiedKey(q)) // partition 0's slot
		return nil
	}); err != nil {
		return e.wrap(ctx, "delete queue", err)
	}
	e.pmu.Lock()
	delete(e.parts, q)
	e.pmu.Unlock()
	e.forget(ctx, q)
	e.publish(ctx, q)
	return nil
}

// Stats sums each partition's counts (one pipelined read-only script per partition).
//
// Counts are exact and leave out messages past their retention, swept or not: a partition's
// expired never-received prefix of l is found by binary search, and its few expired messages
// in m (the sweeper removes them every few seconds) are taken out one by one; when there are
// more than expiredLookups of them, the queue is swept first. OldestSentAt is the earliest
// send time among the few messages that expire first; it is exact while the retention has not
// changed, and may miss an older message sent with a longer retention until the messages sent
// before the change are gone.
func (e *Engine) Stats(ctx context.Context, q engine.Queue) (engine.Stats, error) {
	if err := e.clockOK(); err != nil {
		return engine.Stats{}, err
	}
	e.stepBarrier(ctx, q)
	return idempotent(ctx, func() (engine.Stats, error) { return e.statsSwept(ctx, q) })
}

func (e *Engine) statsSwept(ctx context.Context, q engine.Queue) (engine.Stats, error) {
	st, more, err := e.stats(ctx, q)
	if err != nil || !more {
		return st, err
	}
	if err := e.sweep(ctx, q); err != nil {
		return engine.Stats{}, err
	}
	st, more, err = e.stats(ctx, q)
	if more {
		st.Truncated = true // more expired than one sweep removes: the counts are approximate
	}
	return st, err
}

func (e *Engine) stats(ctx context.Context, q engine.Queue) (engine.Stats, bool, error) {
	n, err := e.partitions(ctx, q.ID)
	if err != nil {
		return engine.Stats{}, false, err
	}
	now := e.nowMs()
	calls := make([]scriptCall, n)
	for p := range n {
		k := keysOf(q.ID, p)
		calls[p] = scriptCall{countsScript, []string{k.Scheduled, k.InFlight, k.Messages, k.LegacyStates, k.Expiry, k.Visible}, []any{now, oldestSample, expiredLookups}}
	}
	st := engine.Stats{Partitions: n}
	var oldest int64
	more := false
	for _, cmd := range e.run(ctx, calls) {
		v, err := cmd.Int64Slice()
		if err != nil || len(v) != 5 {
			return engine.Stats{}, false, e.wrap(ctx, "stats", orBad(err))
		}
		st.Visible += v[0]
		st.InFlight += v[1]
		st.Delayed += v[2]
		if v[3] > 0 && (oldest == 0 || v[3] < oldest) {
			oldest = v[3]
		}
		more = more || v[4] == 1
	}
	if q.Type == engine.Standard {
		held, err := e.heldCount(ctx, q.ID)
		if err != nil {
			return engine.Stats{}, false, err
		}
		st.Delayed += held // accepted, not deliverable before their barrier
	} else if st.ParkedGroups, err = e.parkedGroups(ctx, q.ID, n); err != nil {
		return engine.Stats{}, false, err
	}
	st.Truncated = st.Visible > exactCountLimit || st.InFlight > exactCountLimit || st.Delayed > exactCountLimit
	st.OldestSentAt = timeOrZero(oldest)
	return st, more, nil
}

// Browse limits.
const (
	DefaultBrowseLimit = 100
	MaxBrowseLimit     = 1000
)

// priorityBand is the score offset of one priority level in the zsets r and f (keys.go,
// prelude.lua: BAND): a message of priority b is scored at its time plus b bands.
const priorityBand = int64(1) << 43

// visibleOffset is what a send adds to its time for a message's r score: its delay and its
// priority band. A message of priority above 0 so always scores past now and never goes to
// the list l (send.lua), whose elements are all of priority 0.
func visibleOffset(delay time.Duration, priority int) int64 {
	return max(delay, 0).Milliseconds() + int64(max(priority, 0))*priorityBand
}

// bandOf splits a zset score into its time (ms) and its message's priority.
func bandOf(score int64) (ms int64, priority int) {
	b := score / priorityBand
	return score - b*priorityBand, int(b)
}

// segment is one structure of one partition, in browse order: its list l, or its zset r or
// f; or (kind 'h', p -1) the queue's barrier hold, browsed as delayed after the partitions.
type segment struct {
	p    int
	kind byte // 'l', 'r', 'f' or 'h'
}

// segsPerPartition bounds the segments a state has per partition (visible: l, r and f).
const segsPerPartition = 3

func segments(s engine.State, n int) []segment {
	var out []segment
	for p := range n {
		switch s {
		case engine.StateVisible:
			out = append(out, segment{p, 'l'}, segment{p, 'r'}, segment{p, 'f'})
		case engine.StateInFlight:
			out = append(out, segment{p, 'f'})
		case engine.StateDelayed:
			out = append(out, segment{p, 'r'})
		}
	}
	if s == engine.StateDelayed {
		out = append(out, segment{-1, 'h'})
	}
	return out
}

// browseCursor is where a page ended: segment index, score (in a list segment: the element's
// position) and message id.
type browseCursor struct {
	seg   int
	score int64
	id    string
}

func (c browseCursor) encode(s engine.State) string {
	return base64.RawURLEncoding.EncodeToString(
		fmt.Appendf(nil, "%s|%d|%d|%s", s, c.seg, c.score, c.id))
}

func decodeCursor(s engine.State, v string) (browseCursor, error) {
	bad := engine.ErrBadCursor
	raw, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil {
		return browseCursor{}, bad
	}
	parts := strings.SplitN(string(raw), "|", 4)
	if len(parts) != 4 || parts[0] != string(s) || len(parts[3]) != 16 {
		return browseCursor{}, bad
	}
	seg, err1 := strconv.Atoi(parts[1])
	score, err2 := strconv.ParseInt(parts[2], 10, 64)
	if err1 != nil || err2 != nil || seg < 0 || seg >= segsPerPartition*engine.MaxPartitions {
		return browseCursor{}, bad
	}
	return browseCursor{seg: seg, score: score, id: parts[3]}, nil
}

// Browse pages through the messages of one state, partition by partition (visible: the
// never-received ones, then the received ones), in (time, id) order within each, without
// changing anything. Expired messages are left out.
func (e *Engine) Browse(ctx context.Context, q engine.Queue, req engine.BrowseRequest) (engine.BrowsePage, error) {
	if err := e.clockOK(); err != nil {
		return engine.BrowsePage{}, err
	}
	e.stepBarrier(ctx, q)
	return idempotent(ctx, func() (engine.BrowsePage, error) { return e.browse(ctx, q, req) })
}

func (e *Engine) browse(ctx context.Context, q engine.Queue, req engine.BrowseRequest) (engine.BrowsePage, error) {
	page, _, _, err := e.browseAt(ctx, q, req)
	return page, err
}

// browseAt is browse that also answers where each message of the page was found (its
// cursor: segment and score or list position) and the segments it read.
func (e *Engine) browseAt(ctx context.Context, q engine.Queue, req engine.BrowseRequest) (engine.BrowsePage, []browseCursor, []segment, error) {
	if !req.State.Valid() {
		return engine.BrowsePage{}, nil, nil, engine.ErrInvalidState
	}
	limit := req.Limit
	if limit <= 0 {
		limit = DefaultBrowseLimit
	}
	limit = min(limit, MaxBrowseLimit)
	var cur browseCursor
	hasCur := req.Cursor != ""
	if hasCur {
		var err error
		if cur, err = decodeCursor(req.State, req.Cursor); err != nil {
			return engine.BrowsePage{}, nil, nil, err
		}
	}
	n, err := e.partitions(ctx, q.ID)
	if err != nil {
		return engine.BrowsePage{}, nil, nil, err
	}
	now := e.nowMs()
	// The time range of the state in each priority band: (lo, hi].
	lo, hi := int64(-1), now
	if req.State != engine.StateVisible {
		lo, hi = now, priorityBand-1
	}
	segs := segments(req.State, n)
	// A filter leaves unmatched messages out and bounds the page to what it examines.
	flt := req.Filter
	if flt.Empty() {
		flt = nil
	}
	// Every page reads at most filter.MaxScanBytes of messages (a move batch asks for its own
	// budget), so no browse makes Redis build an unbounded reply.
	budget := int64(filter.MaxScanBytes)
	if req.MaxBytes > 0 {
		budget = min(req.MaxBytes, budget)
	}
	w := &browseWalk{e: e, q: q, state: req.State, flt: flt, now: now, lo: lo, hi: hi, cur: cur, hasCur: hasCur, budget: budget}
	// One message beyond the page is looked for, so that a full last page ends the list
	// (no cursor); at[i] is where the page after message i starts.
	want := limit + 1
	left, last, cut := filter.MaxCandidates, browseCursor{}, false
	si := 0
	if hasCur {
		si = cur.seg
	}
	for si < len(segs) && len(w.page.Messages) < want {
		if flt != nil && left <= 0 {
			cut = true
			break
		}
		ask := want - len(w.page.Messages)
		if flt != nil {
			ask = min(max(ask, filterBrowseAsk), left)
		}
		if w.budget > 0 && w.read > 0 && w.read >= w.budget {
			cut = true // the byte budget is spent
			break
		}
		got, err := w.segment(ctx, si, segs[si], ask)
		if err != nil {
			return engine.BrowsePage{}, nil, nil, err
		}
		left, last = left-got, w.cur
		if w.cut { // the byte budget ended the page inside this segment
			cut = true
			break
		}
		if got < ask { // this segment is done
			si++
			w.hasCur = false
		}
	}
	page, at := w.page, w.at
	if len(page.Messages) > limit {
		page.Messages = page.Messages[:limit]
		page.NextCursor = at[limit-1].encode(req.State)
	} else if cut {
		page.NextCursor = last.encode(req.State) // the bound ended the page, not the list
	}
	return page, at[:len(page.Messages)], segs, nil
}

// browseWalk is one browse page being gathered, segment after segment: the messages kept,
// where the page after each starts, and the position reached.
type browseWalk struct {
	e           *Engine
	q           engine.Queue
	state       engine.State
	flt         *filter.Filter
	now, lo, hi int64 // the state's time range in each priority band: (lo, hi]
	page        engine.BrowsePage
	at          []browseCursor
	cur         browseCursor
	hasCur      bool
	// budget bounds the bytes the page reads (0: none); read is what it read so far, and cut
	// says a script stopped at the budget.
	budget, read int64
	cut          bool
}

// budgetArgs are the scripts' byte-budget arguments: what is left of it (0: no budget) and
// whether the page already read a message.
func (w *browseWalk) budgetArgs() (int64, string) {
	held := "0"
	if w.read > 0 {
		held = "1"
	}
	if w.budget <= 0 {
		return 0, held
	}
	return max(w.budget-w.read, 1), held
}

// capLeft is the byte cap of the hold segment's next script call (barrier_hold_browse.lua).
func (w *browseWalk) capLeft() int { return int(max(w.budget-w.read, 0)) }

// keep adds a browsed message that matches the filter, with the cursor after it.
func (w *browseWalk) keep(m engine.BrowsedMessage, ok bool, after browseCursor) {
	if ok && w.flt.Match(m.Attributes) {
		w.page.Messages, w.at = append(w.page.Messages, m), append(w.at, after)
	}
}

// segment reads up to ask entries of segment si from the position reached and answers how
// many it examined (fewer than ask: the segment is done).
func (w *browseWalk) segment(ctx context.Context, si int, sg segment, ask int) (int, error) {
	switch sg.kind {
	case 'h':
		ms, cs, read, err := w.e.browseHold(ctx, w.q, si, w.cur, w.hasCur, ask, w.capLeft(), w.now)
		if err != nil {
			return 0, err
		}
		w.read += int64(read)
		if len(cs) > 0 {
			w.cur, w.hasCur = cs[len(cs)-1], true
		}
		for i, m := range ms {
			w.keep(m, m.State != "", cs[i]) // no state: not one of this browse's
		}
		return len(cs), nil
	case 'l':
		return w.list(ctx, si, keysOf(w.q.ID, sg.p), ask)
	default:
		return w.zset(ctx, si, sg, keysOf(w.q.ID, sg.p), ask)
	}
}

// list reads the partition's never-received list from the position reached.
func (w *browseWalk) list(ctx context.Context, si int, k partKeys, ask int) (int, error) {
	from := int64(0)
	if w.hasCur {
		from = w.cur.score + 1
	}
	rest, held := w.budgetArgs()
	vals, err := browseListScript.Run(ctx, w.e.rdb, []string{k.Visible, k.VisibleTaken}, from, ask, rest, held).Slice()
	if err != nil || len(vals) < 2 {
		return 0, w.e.wrap(ctx, "browse", orBad(err))
	}
	first, _ := vals[0].(int64)
	cut, _ := vals[1].(int64)
	w.cut = cut == 1
	got := 0
	for i, v := range vals[2:] {
		got++
		w.read += int64(len(str(v)))
		l, err := parseListed(str(v))
		w.cur, w.hasCur = browseCursor{seg: si, score: first + int64(i), id: string(l.ID[:])}, true
		if err != nil {
			w.e.log.Error("redisengine: undecodable message in browse", "queue", w.q.ID.String(), "error", err)
			continue
		}
		m, ok := w.e.browsed(w.state, l.ID, l.SentAt, state{ExpiresAt: l.ExpiresAt, SentAt: l.SentAt}, l.Payload, w.now)
		w.keep(m, ok, w.cur)
	}
	return got, nil
}

// zset reads the partition's r or f sorted set from the position reached.
func (w *browseWalk) zset(ctx context.Context, si int, sg segment, k partKeys, ask int) (int, error) {
	z := k.Scheduled
	if sg.kind == 'f' {
		z = k.InFlight
	}
	curScore, curID := "0", ""
	if w.hasCur {
		curScore, curID = strconv.FormatInt(w.cur.score, 10), w.cur.id
	}
	rest, held := w.budgetArgs()
	vals, err := browseScript.Run(ctx, w.e.rdb, []string{z, k.Messages, k.LegacyStates}, w.lo, w.hi, ask, curScore, curID, rest, held).Slice()
	if err != nil {
		return 0, w.e.wrap(ctx, "browse", err)
	}
	w.cut = len(vals)%4 == 1 && str(vals[len(vals)-1]) == "cut"
	got := 0
	for i := 0; i+3 < len(vals); i += 4 {
		got++
		w.read += int64(len(str(vals[i])) + len(str(vals[i+1])) + len(str(vals[i+2])) + len(str(vals[i+3])))
		score, _ := strconv.ParseInt(str(vals[i+1]), 10, 64)
		w.cur, w.hasCur = browseCursor{seg: si, score: score, id: str(vals[i])}, true
		id, ok := ids.FromBytes([]byte(str(vals[i])))
		if !ok {
			continue
		}
		st, err := parseState(str(vals[i+2]))
		if err != nil {
			continue // gone meanwhile (state false) or corrupt
		}
		m, ok := w.e.browsed(w.state, id, score, st, str(vals[i+3]), w.now)
		w.keep(m, ok, w.cur)
	}
	return got, nil
}

// browsed decodes one browsed message; ok is false for one that is expired or corrupt.
func (e *Engine) browsed(s engine.State, id ids.ID, score int64, st state, rawPayload string, now int64) (engine.BrowsedMessage, bool) {
	if st.ExpiresAt <= now {
		return engine.BrowsedMessage{}, false
	}
	pl, err := decodePayload(rawPayload)
	if err != nil {
		e.log.Error("redisengine: undecodable message in browse", "message", id.String(), "error", err)
		return engine.BrowsedMessage{}, false
	}
	at, prio := bandOf(score)
	return engine.BrowsedMessage{
		MessageID:      id,
		Body:           pl.Body,
		Attributes:     pl.Attributes,
		ReceiveCount:   st.ReceiveCount(pl.Base),
		SentAt:         fromMs(st.SentAt),
		VisibleAt:      fromMs(at),
		Priority:       prio,
		State:          s,
		GroupID:        pl.GroupID,
		SequenceNumber: pl.Sequence,
		DeadLetter:     pl.DeadLetter,
	}, true
}

// errNoGroups answers Groups and PurgeGroup on a standard queue (fifo.go implements them).
var errNoGroups = engine.ErrNoGroups

// Sweep deletes expired messages (in bounded chunks) and finishes dead-letter moves that were
// interrupted, for every partition of the queues given. Every step is idempotent, so replicas
// may sweep the same queues at once.
func (e *Engine) Sweep(ctx context.Context, qs []engine.Queue) error {
	if err := e.clockOK(); err != nil {
		return err
	}
	var errs []error
	for _, q := range qs {
		if err := e.sweep(ctx, q); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (e *Engine) sweep(ctx context.Context, q engine.Queue) error {
	n, err := e.partitionsFresh(ctx, q.ID)
	if err != nil {
		return err
	}
	now := e.nowMs()
	if q.Type == engine.FIFO {
		if err := e.sweepGroupMap(ctx, q, now); err != nil {
			return err
		}
	}
	defer e.foldQueue(ctx, q, n)
	if q.Type == engine.Standard && e.barrierPending(q.ID) {
		e.barrierStep(ctx, q)
	}
	for p := range n {
		k := keysOf(q.ID, p)
		if q.Type == engine.FIFO {
			if err := e.sweepFIFOPartition(ctx, q, p, now); err != nil {
				return err
			}
		} else {
			for range sweepChunks {
				deleted, err := expireScript.Run(ctx, e.rdb, e.withBytes(q, k, append(k.messages(), k.Visible, k.VisibleTaken, k.ConflationKeys, k.ConflationKeyOf)...), now, sweepChunk).Int()
				if err != nil {
					return e.wrap(ctx, "sweep", err)
				}
				if deleted < sweepChunk {
					break
				}
			}
		}
		if err := e.sweepTransfers(ctx, q, p, now); err != nil {
			return err
		}
		if q.Redrive == nil || q.Redrive.DeadLetter == nil {
			continue
		}
		kvs, _, err := e.rdb.HScan(ctx, k.DeadLetterOutbox, 0, "", outboxPage).Result()
		if err != nil {
			return e.wrap(ctx, "sweep", err)
		}
		var due [][2]string
		for i := 0; i+1 < len(kvs); i += 2 {
			ob, err := parseOutbox(kvs[i], kvs[i+1])
			if err != nil || ob.At <= now-outboxGrace.Milliseconds() {
				due = append(due, [2]string{kvs[i], kvs[i+1]}) // unparsable ones are dropped there
			}
		}
		if len(due) > 0 {
			e.finishMoves(ctx, q, p, due)
		}
	}
	return e.retire(ctx, q, n)
}
