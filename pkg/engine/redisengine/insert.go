package redisengine

import (
	"context"
	"encoding/binary"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
)

// Inserting messages that arrive in a standard queue other than by a send: dead-letter moves
// into a dead-letter queue, move tasks into their destination (move.go) or back into their
// source. Each goes to the partition its id names, so a retried insert finds the first
// (insert.lua leaves an id already there alone). A message arriving while the queue has a
// barrier pending is accepted after that barrier (docs/delivery-options.md#barrier-messages): the
// partition's fence refuses it and it goes to the barrier hold like a send (barrier.go).

// insert is one message on its way into a standard queue.
type insert struct {
	id                ids.ID
	payload           string
	at, expires, sent int64 // visible from at (ms), its expiry and its send time
}

// insertTries bounds the rounds of insertStandard: a round ends early only when barrier mode
// ended between a fence's refusal and the hold (the stale fence is lifted, the insert redone).
const insertTries = 3

// insertStandard inserts ins into standard queue q of n partitions and answers which are
// done: inserted, found there already, or held behind the queue's pending barrier. The rest
// failed (logged, what names the operation); the caller keeps them to retry later.
func (e *Engine) insertStandard(ctx context.Context, q engine.Queue, n int, ins []insert, what string) []bool {
	done := make([]bool, len(ins))
	todo := make([]int, len(ins))
	for i := range ins {
		todo[i] = i
	}
	for try := 0; try < insertTries && len(todo) > 0; try++ {
		calls := make([]scriptCall, len(todo))
		parts := make([]int, len(todo))
		touched := make([]partKeys, len(todo))
		for j, i := range todo {
			in := ins[i]
			p := int(binary.BigEndian.Uint64(in.id[8:]) % uint64(n))
			k := keysOf(q.ID, p)
			calls[j] = scriptCall{insertScript, e.withBytes(q, k, k.Scheduled, k.Messages, k.LegacyStates, k.Expiry, k.BarrierFence),
				[]any{string(in.id[:]), in.payload, in.at, in.expires, in.sent, e.opts.Channel, q.ID.String(), q.Project.String(), "0"}}
			parts[j], touched[j] = p, k
		}
		var fenced, fencedParts []int
		seen := map[int]bool{}
		for j, cmd := range e.run(ctx, calls) {
			v, err := cmd.Int64()
			switch {
			case err != nil:
				e.log.Warn("redisengine: "+what+" insert failed; Sweep will retry", "queue", q.ID.String(), "error", err)
			case v == insertFenced:
				fenced = append(fenced, todo[j])
				if !seen[parts[j]] {
					seen[parts[j]] = true
					fencedParts = append(fencedParts, parts[j])
				}
			default:
				done[todo[j]] = true
			}
		}
		e.fold(ctx, q.Project, touched)
		if len(fenced) == 0 {
			break
		}
		ok, err := e.holdInserts(ctx, q, ins, fenced, fencedParts)
		if err != nil {
			e.log.Warn("redisengine: "+what+" insert behind a barrier failed; Sweep will retry", "queue", q.ID.String(), "error", err)
			break
		}
		if ok {
			for _, i := range fenced {
				done[i] = true
			}
			break
		}
		todo = fenced // barrier mode had ended: the stale fences are lifted now
	}
	return done
}

// holdInserts appends the messages idx of ins to q's barrier hold (see hold). A move is never
// refused for the project's stored-bytes limit, so none is checked.
func (e *Engine) holdInserts(ctx context.Context, q engine.Queue, ins []insert, idx, fenced []int) (bool, error) {
	hs := make([]held, len(idx))
	for j, i := range idx {
		in := ins[i]
		hs[j] = held{id: in.id, sentAt: in.sent, expiresAt: in.expires, visible: in.at, payload: in.payload}
	}
	q.MaxStoredBytes = 0
	return e.hold(ctx, q, hs, 0, fenced)
}

// finishMoves is the second step of dead-letter moves out of partition p of q: insert each
// message into the dead-letter queue (idempotently, by message id), then clear its outbox
// entry. A failure leaves the entry for Sweep to finish; the first step already took the
// message out of q, so the caller's answer does not depend on this one.
//
// The dead-letter copy keeps the message id, body, attributes, group id and send time, starts
// at receiveCount 0, records {source queue, reason, at}, and expires at + the dead-letter
// queue's retention (its retention counts from its arrival there, like a send).
func (e *Engine) finishMoves(ctx context.Context, src engine.Queue, p int, entries [][2]string) {
	if src.Redrive == nil || src.Redrive.DeadLetter == nil {
		return // left in the outbox until a policy names a dead-letter queue again
	}
	dlq := src.Redrive.DeadLetter
	dn, err := e.partitions(ctx, dlq.ID)
	if err == nil {
		err = e.touch(ctx, dlq.ID)
	}
	if err != nil {
		e.log.Warn("redisengine: dead-letter move postponed", "queue", src.ID.String(), "error", err)
		return
	}
	var ins []insert
	var fields []string // outbox fields to clear once their insert succeeded (or cannot ever)
	var callField []string
	var moved []*fitem // into a fifo dead-letter queue
	for _, kv := range entries {
		ob, err := parseOutbox(kv[0], kv[1])
		var pl *payload
		if err == nil {
			pl, err = decodePayload(ob.Payload)
		}
		if err != nil {
			e.log.Error("redisengine: dropping an undecodable dead-letter move", "queue", src.ID.String(), "error", err)
			fields = append(fields, kv[0])
			continue
		}
		pl.DeadLetter = &engine.DeadLetterInfo{SourceQueue: src.ID, Reason: ob.Reason, At: fromMs(ob.At)}
		pl.arriving()
		callField = append(callField, kv[0])
		if dlq.Type == engine.FIFO {
			if pl.GroupID == "" {
				pl.GroupID = noGroup
			}
			moved = append(moved, &fitem{idx: len(moved), id: ob.ID, pl: *pl, visible: ob.At,
				expires: ob.At + retention(*dlq).Milliseconds(), sent: ob.SentAt, mode: "n", move: true})
			continue
		}
		ins = append(ins, insert{id: ob.ID, payload: string(pl.encode()), at: ob.At,
			expires: ob.At + retention(*dlq).Milliseconds(), sent: ob.SentAt})
	}
	if len(moved) > 0 {
		if err := e.insertFIFO(ctx, *dlq, moved); err != nil {
			e.log.Warn("redisengine: dead-letter insert failed; Sweep will retry", "queue", src.ID.String(), "error", err)
		} else {
			fields = append(fields, callField...)
		}
	}
	if len(ins) > 0 {
		for i, ok := range e.insertStandard(ctx, *dlq, dn, ins, "dead-letter") {
			if ok {
				fields = append(fields, callField[i])
			}
		}
	}
	if len(fields) > 0 {
		k := keysOf(src.ID, p)
		args := make([]any, len(fields))
		for i, f := range fields {
			args[i] = f
		}
		if err := outboxClearScript.Run(ctx, e.rdb, e.withBytes(src, k, k.DeadLetterOutbox), args...).Err(); err != nil {
			e.log.Warn("redisengine: clearing the dead-letter outbox failed; Sweep will retry", "queue", src.ID.String(), "error", err)
		}
		e.fold(ctx, src.Project, []partKeys{k})
	}
}
