package redisengine

// A fifo queue's groups: listing them and purging one (docs/fifo.md). fifo.go has the rest.

import (
	"context"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/queueshq/queues/pkg/engine"
)

// Groups lists a fifo queue's groups, partition by partition and in group id order within a
// partition, each with its message count and whether a batch is in flight. The cursor names
// the last group returned; a page costs O(limit) group lookups.
func (e *Engine) Groups(ctx context.Context, q engine.Queue, limit int, cursor string, state engine.GroupState) (engine.GroupPage, error) {
	if err := e.clockOK(); err != nil {
		return engine.GroupPage{}, err
	}
	return idempotent(ctx, func() (engine.GroupPage, error) { return e.groups(ctx, q, limit, cursor, state) })
}

func (e *Engine) groups(ctx context.Context, q engine.Queue, limit int, cursor string, state engine.GroupState) (engine.GroupPage, error) {
	if q.Type != engine.FIFO {
		return engine.GroupPage{}, errNoGroups
	}
	if !state.Valid() {
		return engine.GroupPage{}, engine.ErrInvalidState
	}
	if limit <= 0 {
		limit = DefaultGroupsLimit
	}
	limit = min(limit, MaxGroupsLimit)
	p, after := 0, ""
	if cursor != "" {
		var err error
		if p, after, err = decodeGroupCursor(cursor); err != nil {
			return engine.GroupPage{}, err
		}
	}
	n, err := e.partitions(ctx, q.ID)
	if err != nil {
		return engine.GroupPage{}, err
	}
	now := e.nowMs()
	var page engine.GroupPage
	// One group beyond the page is looked for, so that a full last page ends the list.
	want := limit + 1
	var parts []int // the partition of each group listed
	for ; p < n && len(page.Groups) < want; p++ {
		k := keysOf(q.ID, p)
		ask := want - len(page.Groups)
		vals, err := fifoGroupsScript.Run(ctx, e.rdb, []string{k.Scheduled, k.InFlight, k.GroupMessages, k.GroupsLocked, k.Messages, k.LegacyStates, k.GroupsParked}, now, after, ask, string(state)).Slice()
		if err != nil {
			return engine.GroupPage{}, e.wrap(ctx, "groups", err)
		}
		for i := 0; i+5 < len(vals); i += 6 {
			cnt, _ := vals[i+1].(int64)
			fl, _ := vals[i+2].(int64)
			pk, _ := vals[i+3].(int64)
			rc, _ := vals[i+4].(int64)
			g := engine.Group{GroupID: str(vals[i]), Messages: cnt, InFlight: fl == 1, State: engine.GroupActive,
				HeadReceiveCount: int(rc)}
			if pk == 1 {
				g.State, g.LastError = engine.GroupParked, str(vals[i+5])
			}
			page.Groups = append(page.Groups, g)
			parts = append(parts, p)
		}
		after = ""
	}
	if len(page.Groups) > limit {
		page.Groups = page.Groups[:limit]
		page.NextCursor = encodeGroupCursor(parts[limit-1], page.Groups[limit-1].GroupID)
	}
	if err := e.withBindings(ctx, q, page.Groups, parts, now); err != nil { // groupbind.go
		return engine.GroupPage{}, err
	}
	return page, nil
}

func encodeGroupCursor(p int, g string) string {
	return base64.RawURLEncoding.EncodeToString([]byte("g|" + strconv.Itoa(p) + "|" + g))
}

func decodeGroupCursor(v string) (int, string, error) {
	bad := engine.ErrBadCursor
	raw, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil {
		return 0, "", bad
	}
	parts := strings.SplitN(string(raw), "|", 3)
	if len(parts) != 3 || parts[0] != "g" || !validGroupID(parts[2]) {
		return 0, "", bad
	}
	p, err := strconv.Atoi(parts[1])
	if err != nil || p < 0 || p >= engine.MaxPartitions {
		return 0, "", bad
	}
	return p, parts[2], nil
}

// validGroupID: 1–128 characters from "!" to "~".
func validGroupID(g string) bool {
	if len(g) == 0 || len(g) > 128 {
		return false
	}
	for i := range len(g) {
		if g[i] < '!' || g[i] > '~' {
			return false
		}
	}
	return true
}

// PurgeGroup deletes the messages of one group sent before the call, in chunks, in the
// partition the group lives in (all partitions when it has no mapping). When it returns, the
// counts no longer include them and their handles are stale.
func (e *Engine) PurgeGroup(ctx context.Context, q engine.Queue, groupID string) error {
	if err := e.clockOK(); err != nil {
		return err
	}
	if q.Type != engine.FIFO {
		return errNoGroups
	}
	if !validGroupID(groupID) {
		return engine.ErrBadGroupID
	}
	var seq uint64
	var parts []int
	var getSeq, getMap *redis.StringCmd
	_, _ = e.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		getSeq = pipe.Get(ctx, seqKey(q.ID))
		getMap = pipe.HGet(ctx, groupMapKey(q.ID), groupID)
		return nil
	})
	for _, c := range []*redis.StringCmd{getSeq, getMap} {
		if err := c.Err(); err != nil && !errors.Is(err, redis.Nil) {
			return e.wrap(ctx, "purge group", err)
		}
	}
	if s, err := getSeq.Result(); err == nil {
		seq, _ = strconv.ParseUint(s, 10, 64)
	}
	if v, err := getMap.Result(); err == nil {
		if ps, _, ok := strings.Cut(v, "|"); ok {
			if p, err := strconv.Atoi(ps); err == nil && p >= 0 && p < engine.MaxPartitions {
				parts = []int{p}
			}
		}
	}
	if parts == nil {
		n, err := e.partitionsFresh(ctx, q.ID)
		if err != nil {
			return err
		}
		for p := range n {
			parts = append(parts, p)
		}
	}
	bound := groupPrefix(groupID, seq+1)
	for _, p := range parts {
		k := keysOf(q.ID, p)
		for {
			deleted, err := fifoPurgeGroupScript.Run(ctx, e.rdb, e.withBytes(q, k, k.fifo()...), groupID, bound, purgeGroupChunk, e.nowMs()).Int()
			e.fold(ctx, q.Project, []partKeys{k})
			if err != nil {
				return e.wrap(ctx, "purge group", err)
			}
			if deleted < purgeGroupChunk {
				break
			}
		}
	}
	return nil
}
