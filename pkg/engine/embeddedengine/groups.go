package embeddedengine

import (
	"context"
	"encoding/base64"
	"slices"
	"strings"

	"github.com/queueshq/queues/pkg/engine"
)

var errNoGroups = engine.ErrNoGroups

// Group listing limits.
const (
	DefaultGroupsLimit = 100
	MaxGroupsLimit     = 1000
)

// Groups lists a fifo queue's groups in state ("": any) in group id order: those with messages
// and the parked ones (park.go), which may have none.
func (e *Engine) Groups(ctx context.Context, q engine.Queue, limit int, cursor string, state engine.GroupState) (engine.GroupPage, error) {
	if err := ctxErr(ctx); err != nil {
		return engine.GroupPage{}, err
	}
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
	after := ""
	if cursor != "" {
		raw, err := base64.RawURLEncoding.DecodeString(cursor)
		a, ok := strings.CutPrefix(string(raw), "g|")
		if err != nil || !ok || a == "" {
			return engine.GroupPage{}, engine.ErrBadCursor
		}
		after = a
	}
	if err := e.check(); err != nil {
		return engine.GroupPage{}, err
	}
	now := e.nowMs()
	e.mu.Lock()
	defer e.mu.Unlock()
	var page engine.GroupPage
	qi := e.queues[q.ID]
	if qi == nil {
		return page, nil
	}
	qi.advance(now)
	var names []string
	if state == engine.GroupParked {
		names = qi.parkedNames(after)
	} else {
		names = make([]string, 0, len(qi.groups))
		for id := range qi.groups {
			if id > after && !(state == engine.GroupActive && qi.isParked(id)) {
				names = append(names, id)
			}
		}
		if state == "" {
			for _, id := range qi.parkedNames(after) {
				if qi.groups[id] == nil {
					names = append(names, id)
				}
			}
		}
		slices.Sort(names)
	}
	more := len(names) > limit
	names = names[:min(limit, len(names))]
	for _, id := range names {
		out := engine.Group{GroupID: id, State: engine.GroupActive, ConsumerID: qi.boundTo(q, id, now)}
		if g := qi.groups[id]; g != nil {
			out.Messages, out.InFlight = g.count, g.inflight > 0
			out.HeadReceiveCount = g.head.receiveCount()
		}
		if p := qi.parked[id]; p != nil {
			out.State, out.LastError = engine.GroupParked, p.reason
		}
		page.Groups = append(page.Groups, out)
	}
	if more {
		page.NextCursor = base64.RawURLEncoding.EncodeToString([]byte("g|" + names[len(names)-1]))
	}
	return page, nil
}

// PurgeGroup removes one fifo group's messages, in flight or not; their handles go stale.
func (e *Engine) PurgeGroup(ctx context.Context, q engine.Queue, groupID string) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	if q.Type != engine.FIFO {
		return errNoGroups
	}
	if err := e.check(); err != nil {
		return err
	}
	var w writes
	e.mu.Lock()
	if qi := e.queues[q.ID]; qi != nil {
		if g := qi.groups[groupID]; g != nil {
			for m := g.head; m != nil; {
				next := m.gnext
				qi.remove(m)
				w.delMsg(qi, m)
				m = next
			}
		}
	}
	done := e.commit(&w)
	e.mu.Unlock()
	if err := wait(done); err != nil {
		return err
	}
	e.notify(q.ID)
	return nil
}
