package redisengine

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
)

// Move tasks (engine.Mover). A move is the dead-letter move's two steps with the destination
// chosen per message: move_take.lua (fifo_move_take.lua on fifo queues) takes the chosen visible
// messages out of a source partition into its move outbox mo, with the destination written
// in the entry, and counts them under the task's tag in mt, all in one script; then
// finishTransfers inserts each into its destination idempotently by message id (the
// destination's partition follows from the id, and insert.lua/insertFIFO leave an id
// already there alone) and clears the entry. A crash between the steps leaves the entry, which
// FinishMoves or Sweep completes: the message is never lost, and is duplicated only if it was
// inserted, received and acknowledged in the destination before its entry was cleared — at
// most the batch in transit, with the same messageId.

// MoveBatch examines one page of src's visible messages and moves the ones Choose picks.
func (e *Engine) MoveBatch(ctx context.Context, src engine.Queue, req engine.MoveRequest) (engine.MoveResult, error) {
	if err := e.clockOK(); err != nil {
		return engine.MoveResult{}, err
	}
	limit := min(max(req.Limit, 1), engine.MaxMoveBatch)
	page, at, segs, err := e.browseAt(ctx, src, engine.BrowseRequest{State: engine.StateVisible, Limit: limit, Cursor: req.Cursor, MaxBytes: engine.MaxMoveBatchBytes})
	if err != nil {
		return engine.MoveResult{}, err
	}
	res := engine.MoveResult{Examined: len(page.Messages), NextCursor: page.NextCursor}
	args := map[int][]any{}
	for i, m := range page.Messages {
		dst, fail := req.Choose(m)
		if dst == nil || dst.ID == src.ID {
			if fail {
				res.Failed++
			}
			continue
		}
		sg := segs[at[i].seg]
		if src.Type == engine.FIFO {
			args[sg.p] = append(args[sg.p], string(m.MessageID[:]), destination(dst))
			continue
		}
		pos := int64(-1)
		if sg.kind == 'l' {
			pos = at[i].score
		}
		args[sg.p] = append(args[sg.p], string(m.MessageID[:]), pos, destination(dst))
	}
	if len(args) == 0 {
		return res, nil
	}
	now := e.nowMs()
	var calls []scriptCall
	var parts []int
	for p, a := range args {
		k := keysOf(src.ID, p)
		if src.Type == engine.FIFO {
			calls = append(calls, scriptCall{fifoMoveTakeScript, e.withBytes(src, k, append(k.fifo(), k.MoveOutbox, k.MoveTasks)...),
				append([]any{now, e.opts.Channel, src.ID.String(), req.Tag}, a...)})
		} else {
			calls = append(calls, scriptCall{moveTakeScript, e.withBytes(src, k, k.Scheduled, k.InFlight, k.Messages, k.LegacyStates, k.Expiry, k.Visible, k.VisibleTaken, k.MoveOutbox, k.MoveTasks, k.ConflationKeys, k.ConflationKeyOf),
				append([]any{now, req.Tag}, a...)})
		}
		parts = append(parts, p)
	}
	var errs []error
	var touched []partKeys
	for i, cmd := range e.run(ctx, calls) {
		vals, err := cmd.Slice()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		touched = append(touched, keysOf(src.ID, parts[i]))
		taken := outboxPairs(vals)
		res.Moved += len(taken)
		e.finishTransfers(ctx, src, parts[i], taken)
	}
	e.fold(ctx, src.Project, touched)
	if len(errs) > 0 {
		// The takes that answered are done (and counted in MovedCount); the caller retries
		// the page, whose taken messages are no longer visible.
		return res, e.wrap(ctx, "move", errors.Join(errs...))
	}
	return res, nil
}

// discard is the destination of a move outbox entry whose message is deleted (engine.Discard):
// finishing it only clears the entry, which takes its bytes off the project.
const discard = "discard"

// destination is a move outbox entry's destination: "<queue id>,<project id>,<type>,<retention ms>",
// all that finishing the move needs without the metadata store, or discard.
func destination(q *engine.Queue) string {
	if q == engine.Discard {
		return discard
	}
	return fmt.Sprintf("%s,%s,%s,%d", q.ID, q.Project, q.Type, retention(*q).Milliseconds())
}

func parseDestination(s string) (engine.Queue, error) {
	parts := strings.Split(s, ",")
	bad := errors.New("malformed move destination")
	if len(parts) != 4 {
		return engine.Queue{}, bad
	}
	qid, err1 := ids.ParseUUID(parts[0])
	pid, err2 := ids.ParseUUID(parts[1])
	ret, err3 := strconv.ParseInt(parts[3], 10, 64)
	t := engine.Type(parts[2])
	if err1 != nil || err2 != nil || err3 != nil || ret <= 0 || (t != engine.Standard && t != engine.FIFO) {
		return engine.Queue{}, bad
	}
	return engine.Queue{ID: qid, Project: pid, Type: t, Retention: time.Duration(ret) * time.Millisecond}, nil
}

// finishTransfers is the second step of moves out of partition p of src: insert each message
// into its destination (idempotently, by message id), then clear its move outbox entry. A
// failure leaves the entry for FinishMoves or Sweep.
func (e *Engine) finishTransfers(ctx context.Context, src engine.Queue, p int, entries [][2]string) {
	if len(entries) == 0 {
		return
	}
	type batch struct {
		q      engine.Queue
		fields []string
		ins    []insert
		fifo   []*fitem
	}
	byDst := map[ids.ID]*batch{}
	var fields []string // entries to clear
	for _, kv := range entries {
		ob, err := parseOutbox(kv[0], kv[1])
		var pl *payload
		var dst engine.Queue
		if err == nil {
			pl, err = decodePayload(ob.Payload)
		}
		if err == nil && ob.Reason == discard {
			fields = append(fields, kv[0]) // deleted: clearing the entry is all
			continue
		}
		if err == nil {
			dst, err = parseDestination(ob.Reason)
		}
		if err != nil {
			e.log.Error("redisengine: dropping an undecodable move", "queue", src.ID.String(), "error", err)
			fields = append(fields, kv[0])
			continue
		}
		pl.DeadLetter = nil
		pl.arriving()
		b := byDst[dst.ID]
		if b == nil {
			b = &batch{q: dst}
			byDst[dst.ID] = b
		}
		b.fields = append(b.fields, kv[0])
		expires := ob.At + dst.Retention.Milliseconds()
		if dst.Type == engine.FIFO {
			if pl.GroupID == "" {
				pl.GroupID = noGroup
			}
			b.fifo = append(b.fifo, &fitem{idx: len(b.fifo), id: ob.ID, pl: *pl, visible: ob.At,
				expires: expires, sent: ob.SentAt, mode: "n", move: true})
			continue
		}
		b.ins = append(b.ins, insert{id: ob.ID, payload: string(pl.encode()), at: ob.At, expires: expires, sent: ob.SentAt})
	}
	for _, b := range byDst {
		fields = append(fields, e.insertMoved(ctx, src, b.q, b.fields, b.ins, b.fifo)...)
	}
	if len(fields) == 0 {
		return
	}
	k := keysOf(src.ID, p)
	args := make([]any, len(fields))
	for i, f := range fields {
		args[i] = f
	}
	if err := outboxClearScript.Run(ctx, e.rdb, e.withBytes(src, k, k.MoveOutbox), args...).Err(); err != nil {
		e.log.Warn("redisengine: clearing the move outbox failed; Sweep will retry", "queue", src.ID.String(), "error", err)
	}
	e.fold(ctx, src.Project, []partKeys{k})
}

// insertMoved inserts one destination's share of a move and answers the outbox fields whose
// insert succeeded (ins and fields in step, or moved and fields on a fifo destination).
func (e *Engine) insertMoved(ctx context.Context, src, dst engine.Queue, fields []string, ins []insert, moved []*fitem) []string {
	dn, err := e.partitions(ctx, dst.ID)
	if err == nil {
		err = e.touch(ctx, dst.ID)
	}
	if err != nil {
		e.log.Warn("redisengine: move postponed", "queue", src.ID.String(), "error", err)
		return nil
	}
	if len(moved) > 0 {
		if err := e.insertFIFO(ctx, dst, moved); err != nil {
			e.log.Warn("redisengine: move insert failed; Sweep will retry", "queue", src.ID.String(), "error", err)
			return nil
		}
		return fields
	}
	var done []string
	for i, ok := range e.insertStandard(ctx, dst, dn, ins, "move") {
		if ok {
			done = append(done, fields[i])
		}
	}
	return done
}

// sweepTransfers finishes the moves out of partition p of q left for longer than the outbox
// grace (a move under way is left to the replica running it).
func (e *Engine) sweepTransfers(ctx context.Context, q engine.Queue, p int, now int64) error {
	return e.finishPartition(ctx, q, p, now-outboxGrace.Milliseconds())
}

func (e *Engine) finishPartition(ctx context.Context, q engine.Queue, p int, before int64) error {
	k := keysOf(q.ID, p)
	var cursor uint64
	for {
		kvs, next, err := e.rdb.HScan(ctx, k.MoveOutbox, cursor, "", outboxPage).Result()
		if err != nil {
			return e.wrap(ctx, "move", err)
		}
		var due [][2]string
		for i := 0; i+1 < len(kvs); i += 2 {
			ob, err := parseOutbox(kvs[i], kvs[i+1])
			if err != nil || ob.At <= before {
				due = append(due, [2]string{kvs[i], kvs[i+1]})
			}
		}
		e.finishTransfers(ctx, q, p, due)
		if cursor = next; cursor == 0 {
			return nil
		}
	}
}

// FinishMoves completes every interrupted move out of src now (a resumed task calls it first).
func (e *Engine) FinishMoves(ctx context.Context, src engine.Queue) error {
	if err := e.clockOK(); err != nil {
		return err
	}
	now := e.nowMs()
	var errs []error
	for p := range engine.MaxPartitions {
		n, err := e.rdb.Exists(ctx, keysOf(src.ID, p).MoveOutbox).Result()
		if err != nil {
			return e.wrap(ctx, "move", err)
		}
		if n > 0 {
			errs = append(errs, e.finishPartition(ctx, src, p, now))
		}
	}
	return errors.Join(errs...)
}

// MovedCount sums tag's counters over every partition src may have had.
func (e *Engine) MovedCount(ctx context.Context, src engine.Queue, tag string) (int64, error) {
	cmds := make([]*redis.StringCmd, engine.MaxPartitions)
	if _, err := e.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for p := range engine.MaxPartitions {
			cmds[p] = pipe.HGet(ctx, keysOf(src.ID, p).MoveTasks, tag)
		}
		return nil
	}); err != nil && !errors.Is(err, redis.Nil) {
		return 0, e.wrap(ctx, "move count", err)
	}
	var n int64
	for _, c := range cmds {
		v, _ := c.Int64()
		n += v
	}
	return n, nil
}

// ForgetMoved drops tag's counters.
func (e *Engine) ForgetMoved(ctx context.Context, src engine.Queue, tag string) error {
	_, err := e.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for p := range engine.MaxPartitions {
			pipe.HDel(ctx, keysOf(src.ID, p).MoveTasks, tag)
		}
		return nil
	})
	if err != nil {
		return e.wrap(ctx, "move count", err)
	}
	return nil
}
