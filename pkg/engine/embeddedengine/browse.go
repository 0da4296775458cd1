package embeddedengine

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strconv"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/filter"
)

// Browse limits.
const (
	DefaultBrowseLimit = 100
	MaxBrowseLimit     = 1000
)

func encodeCursor(s engine.State, at int64, seq uint64) string {
	return base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, "%s|%d|%d", s, at, seq))
}

func decodeCursor(s engine.State, v string) (int64, uint64, error) {
	bad := engine.ErrBadCursor
	raw, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil {
		return 0, 0, bad
	}
	parts := strings.Split(string(raw), "|")
	if len(parts) != 3 || parts[0] != string(s) {
		return 0, 0, bad
	}
	at, err1 := strconv.ParseInt(parts[1], 10, 64)
	seq, err2 := strconv.ParseUint(parts[2], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, bad
	}
	return at, seq, nil
}

// Browse pages through the messages of one state in (time, sequence) order without changing
// any. Expired messages are left out. A page costs one pass over the state's messages.
func (e *Engine) Browse(ctx context.Context, q engine.Queue, req engine.BrowseRequest) (engine.BrowsePage, error) {
	if err := ctxErr(ctx); err != nil {
		return engine.BrowsePage{}, err
	}
	st, ok := browseStates[req.State]
	if !ok {
		return engine.BrowsePage{}, engine.ErrInvalidState
	}
	limit := req.Limit
	if limit <= 0 {
		limit = DefaultBrowseLimit
	}
	limit = min(limit, MaxBrowseLimit)
	var curAt int64
	var curSeq uint64
	hasCur := req.Cursor != ""
	if hasCur {
		var err error
		if curAt, curSeq, err = decodeCursor(req.State, req.Cursor); err != nil {
			return engine.BrowsePage{}, err
		}
	}
	if err := e.check(); err != nil {
		return engine.BrowsePage{}, err
	}
	now := e.nowMs()
	var sel []browseSnap
	more := false
	e.mu.Lock()
	if qi := e.queues[q.ID]; qi != nil {
		qi.advance(now)
		after := func(m *msg) bool { return !hasCur || m.at > curAt || (m.at == curAt && m.seq > curSeq) }
		// The limit+1 first candidates: one beyond the page tells whether anything follows
		// it. A filter examines up to filter.MaxCandidates (decoding only their attributes);
		// filter.MaxScanBytes of messages looked at ends a page either way.
		n := limit
		if !req.Filter.Empty() {
			n = filter.MaxCandidates
		}
		best := firstAfter(qi.browsable(st), n+1, func(m *msg) bool { return m.expiresAt > now && after(m) })
		more = len(best) > n
		for _, m := range best[:min(len(best), n)] {
			b := engine.BrowsedMessage{
				MessageID: m.id, ReceiveCount: m.receiveCount(), SentAt: fromMs(m.sentAt),
				VisibleAt: fromMs(m.at), State: req.State, Priority: int(m.prio),
			}
			if m.g != nil {
				b.GroupID, b.SequenceNumber = m.g.id, m.seq
			}
			sel = append(sel, browseSnap{m: b, at: m.at, seq: m.seq, k: key(qi.id, m.id)})
		}
	}
	e.mu.Unlock()
	if len(sel) == 0 {
		return engine.BrowsePage{}, nil
	}
	page, end, beyond, err := e.browseRead(sel, req.Filter, limit)
	more = more || beyond
	if err != nil {
		return engine.BrowsePage{}, engine.StoreUnavailable("browse", err)
	}
	if more {
		if end < 0 {
			end = len(sel) - 1 // the candidate bound ended the page, not the list
		}
		last := sel[end]
		page.NextCursor = encodeCursor(req.State, last.at, last.seq)
	}
	return page, nil
}

// browseSnap is a browse candidate chosen under the engine's lock: its message as browsed so
// far (no body yet), its position and its payload's key.
type browseSnap struct {
	m   engine.BrowsedMessage
	at  int64
	seq uint64
	k   []byte
}

// browseRead reads the payloads of sel in one read transaction and keeps those f selects, up
// to limit. When more is true the next page starts after sel[end] (end -1: after the last of
// sel): a match beyond the page was seen, or filter.MaxScanBytes of messages were looked at.
// Only attributes are decoded until a message is kept.
func (e *Engine) browseRead(sel []browseSnap, f *filter.Filter, limit int) (page engine.BrowsePage, end int, more bool, err error) {
	end, lastTaken := -1, -1 // where the page ends when a match beyond it was seen
	err = e.db.View(func(tx *bolt.Tx) error {
		b := payloadsIn(tx)
		read := 0 // bytes of messages looked at: filter.MaxScanBytes ends the page
		for i, s := range sel {
			if read >= filter.MaxScanBytes {
				end, more = i-1, true // the next page starts after the last one looked at
				break
			}
			raw := b.get(s.k)
			if raw == nil {
				continue
			}
			read += len(raw)
			attrs, err := decodeAttributes(raw)
			if err != nil || !f.Match(attrs) {
				continue
			}
			if len(page.Messages) == limit { // only with a filter: a match beyond the page
				end, more = lastTaken, true
				break
			}
			pl, err := decodePayload(raw)
			if err != nil {
				continue
			}
			s.m.Body, s.m.Attributes, s.m.DeadLetter = pl.Body, pl.Attributes, pl.DeadLetter
			page.Messages, lastTaken = append(page.Messages, s.m), i
		}
		return nil
	})
	return page, end, more, err
}

// browseStates maps a browsable state to the embedded engine's own.
var browseStates = map[engine.State]uint8{
	engine.StateVisible: stVisible, engine.StateInFlight: stInFlight, engine.StateDelayed: stDelayed,
}

// browseLess orders messages as browse pages through them: by time, then sequence.
func browseLess(a, b *msg) bool { return a.at < b.at || (a.at == b.at && a.seq < b.seq) }

// firstAfter answers, in browse order, the first keep messages of ms that take accepts,
// keeping them in a bounded max-heap: one pass, O(len(ms) · log keep).
func firstAfter(ms []*msg, keep int, take func(*msg) bool) []*msg {
	best := make([]*msg, 0, keep)
	down := func(i int) {
		for {
			l := 2*i + 1
			if l >= len(best) {
				return
			}
			j := l
			if r := l + 1; r < len(best) && browseLess(best[l], best[r]) {
				j = r
			}
			if !browseLess(best[i], best[j]) {
				return
			}
			best[i], best[j] = best[j], best[i]
			i = j
		}
	}
	for _, m := range ms {
		if !take(m) {
			continue
		}
		if len(best) < keep {
			best = append(best, m)
			for j := len(best) - 1; j > 0; {
				i := (j - 1) / 2
				if !browseLess(best[i], best[j]) {
					break
				}
				best[i], best[j] = best[j], best[i]
				j = i
			}
		} else if browseLess(m, best[0]) {
			best[0] = m
			down(0)
		}
	}
	slices.SortFunc(best, func(a, b *msg) int {
		if browseLess(a, b) {
			return -1
		}
		return 1
	})
	return best
}
