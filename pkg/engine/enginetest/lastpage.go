package enginetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/engine"
)

// testLastPageNoCursor: a page that ends a listing answers no cursor, even when it is full
// (docs/api-tour.md: nextCursor is null exactly when nothing follows) — browse in every state, on
// standard and fifo queues, and fifo groups.
func testLastPageNoCursor(t *testing.T, s *suite) {
	for _, typ := range []engine.Type{engine.Standard, engine.FIFO} {
		q := s.queue(func(q *engine.Queue) { q.Type = typ })
		msg := func(i int, delay bool) engine.Message {
			m := engine.Message{Body: fmt.Sprint("m", i)}
			if typ == engine.FIFO {
				m.GroupID = fmt.Sprint("g", i) // one group each, so all can be in flight at once
			}
			if delay {
				d := time.Hour
				m.Delay = &d
			}
			return m
		}
		// 4 in flight, 4 visible; on standard also 4 delayed.
		for i := range 8 {
			s.sendMsgs(q, msg(i, false))
		}
		if got := len(s.receive(q, 4, time.Hour)); got != 4 {
			t.Fatalf("%s: received %d, want 4", typ, got)
		}
		states := []engine.State{engine.StateVisible, engine.StateInFlight}
		if typ == engine.Standard {
			for i := 8; i < 12; i++ {
				s.sendMsgs(q, msg(i, true))
			}
			states = append(states, engine.StateDelayed)
		}
		for _, st := range states {
			for _, limit := range []int{4, 2, 1} {
				pages := s.browsePages(q, st, limit)
				if len(pages) != 4/limit {
					t.Fatalf("%s %s limit %d: pages %v, want %d full pages and no cursor after the last", typ, st, limit, pages, 4/limit)
				}
				for _, n := range pages {
					if n != limit {
						t.Fatalf("%s %s limit %d: pages %v", typ, st, limit, pages)
					}
				}
			}
			page, err := s.e.Browse(s.ctx, q, engine.BrowseRequest{State: st, Limit: 3})
			wantNil(t, "browse", err)
			if len(page.Messages) != 3 || page.NextCursor == "" {
				t.Fatalf("%s %s limit 3 of 4: %d messages, cursor %q", typ, st, len(page.Messages), page.NextCursor)
			}
		}
		if typ == engine.FIFO {
			// 8 groups: 4 in flight, 4 not.
			for _, limit := range []int{8, 4, 2} {
				var sizes []int
				cursor := ""
				for len(sizes) <= 8 {
					page, err := s.e.Groups(s.ctx, q, limit, cursor, "")
					wantNil(t, "groups", err)
					sizes = append(sizes, len(page.Groups))
					if cursor = page.NextCursor; cursor == "" {
						break
					}
				}
				if len(sizes) != 8/limit || sizes[len(sizes)-1] != limit {
					t.Fatalf("groups limit %d: pages %v, want %d full pages and no cursor after the last", limit, sizes, 8/limit)
				}
			}
		}
	}
}

// browsePages pages through one state and returns the page sizes (at most 20 pages).
func (s *suite) browsePages(q engine.Queue, st engine.State, limit int) []int {
	s.t.Helper()
	var sizes []int
	cursor := ""
	for len(sizes) < 20 {
		page, err := s.e.Browse(s.ctx, q, engine.BrowseRequest{State: st, Limit: limit, Cursor: cursor})
		wantNil(s.t, "browse", err)
		sizes = append(sizes, len(page.Messages))
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	return sizes
}
