package redisengine

// Parked groups: a fifo queue's poison policies park and parkGroup (engine.PoisonPolicy,
// docs/fifo.md). The scripts keep a partition's parkings (prelude.lua: gpark, gunpark; keys in
// rediskeys, gp): a parked group waits in gl at a score no time reaches, and each of its
// messages sent to the dead-letter queue is recorded with its old place (its gm member
// prefix, whose sequence number orders it in the group). A move that brings one back
// (insertFIFO) puts it at that place, not at the group's end, and the last one back ends the
// parking; so the group's order holds however the move task's batches and new sends to the
// group interleave: the new sends have higher sequence numbers and wait behind.

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
)

// parkScore is prelude.lua's PARK: a parked group's score in gl (2^50 ms, never due).
const parkScore = "1125899906842624"

// parkedGroups counts the parked groups of q's n partitions.
func (e *Engine) parkedGroups(ctx context.Context, q ids.ID, n int) (int64, error) {
	cmds := make([]*redis.IntCmd, n)
	if _, err := e.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for p := range n {
			cmds[p] = pipe.ZCount(ctx, keysOf(q, p).GroupsLocked, parkScore, "+inf")
		}
		return nil
	}); err != nil {
		return 0, e.wrap(ctx, "stats", err)
	}
	var total int64
	for _, c := range cmds {
		total += c.Val()
	}
	return total, nil
}

// parkArg is fifo_receive.lua's poison policy argument for q.
func parkArg(q engine.Queue) string {
	switch p := q.Parking(); p {
	case engine.PoisonPark, engine.PoisonParkGroup:
		return string(p)
	}
	return ""
}

// markBack finds, among the messages a move brings into fifo queue q, those recorded by a
// parking of their group (in the partition the group lives in) and gives them their old
// place: partition, sequence number, back. fifo_send.lua checks the record again when it stores
// them, atomically with the parking.
func (e *Engine) markBack(ctx context.Context, q ids.ID, items []*fitem) error {
	groups := map[string]*redis.StringCmd{}
	_, err := e.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for _, it := range items {
			if g := it.pl.GroupID; groups[g] == nil {
				groups[g] = pipe.HGet(ctx, groupMapKey(q), g)
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return e.wrap(ctx, "move", err)
	}
	byPart := map[int][]*fitem{}
	for _, it := range items {
		v, err := groups[it.pl.GroupID].Result()
		if err != nil {
			continue // no mapping: the group is not parked anywhere
		}
		ps, _, _ := strings.Cut(v, "|")
		if p, err := strconv.Atoi(ps); err == nil && p >= 0 && p < engine.MaxPartitions {
			byPart[p] = append(byPart[p], it)
		}
	}
	for p, its := range byPart {
		fields := make([]string, len(its))
		for i, it := range its {
			fields[i] = "i" + string(it.id[:])
		}
		vals, err := e.rdb.HMGet(ctx, keysOf(q, p).GroupsParked, fields...).Result()
		if err != nil {
			return e.wrap(ctx, "move", err)
		}
		for i, it := range its {
			s, ok := vals[i].(string)
			if !ok {
				continue
			}
			_, prefix, _ := strings.Cut(s, "|")
			g, hex, ok := strings.Cut(prefix, "\x00")
			seq, err := strconv.ParseUint(hex, 16, 64)
			if !ok || err != nil || g != it.pl.GroupID {
				continue
			}
			it.back, it.p, it.seq = true, p, seq
		}
	}
	return nil
}

// ReleaseGroup ends a parked group's parking (fifo_release_group.lua) in the partition it lives in.
func (e *Engine) ReleaseGroup(ctx context.Context, q engine.Queue, groupID string) error {
	if err := e.clockOK(); err != nil {
		return err
	}
	if q.Type != engine.FIFO {
		return errNoGroups
	}
	if !validGroupID(groupID) {
		return engine.ErrBadGroupID
	}
	parts, err := e.groupPartitions(ctx, q.ID, groupID)
	if err != nil {
		return err
	}
	found := false
	for _, p := range parts {
		k := keysOf(q.ID, p)
		code, err := fifoReleaseGroupScript.Run(ctx, e.rdb, []string{k.Scheduled, k.InFlight, k.GroupMessages, k.GroupsAvailable, k.GroupsLocked, k.GroupsParked},
			e.nowMs(), groupID, e.opts.Channel, q.ID.String()).Int()
		if err != nil {
			return e.wrap(ctx, "release group", err)
		}
		switch code {
		case 1:
			return nil
		case 2:
			found = true
		}
	}
	if found {
		return engine.ErrGroupNotParked
	}
	return engine.ErrNoSuchGroup
}

// groupPartitions is the partition group g lives in, or every partition of q when it has no
// mapping.
func (e *Engine) groupPartitions(ctx context.Context, q ids.ID, g string) ([]int, error) {
	v, err := e.rdb.HGet(ctx, groupMapKey(q), g).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, e.wrap(ctx, "group", err)
	}
	if ps, _, ok := strings.Cut(v, "|"); ok {
		if p, err := strconv.Atoi(ps); err == nil && p >= 0 && p < engine.MaxPartitions {
			return []int{p}, nil
		}
	}
	n, err := e.partitionsFresh(ctx, q)
	if err != nil {
		return nil, err
	}
	parts := make([]int, n)
	for p := range n {
		parts[p] = p
	}
	return parts, nil
}
