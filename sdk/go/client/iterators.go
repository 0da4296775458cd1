package client

import (
	"context"
	"iter"
	"net/http"
)

// The iterators over the lists the API answers a page at a time. Each yields the items of
// one page, then reads the next (following nextCursor until it is null), so a loop that
// breaks reads no further page; each stops at the first error, which it yields with the
// zero item. Those taking a Page read page.Limit items a page (0: the server's default) and
// start after page.Cursor (empty: from the first page), so an iteration can resume where a
// ListX call left off.

// pagesFrom iterates over the items of a cursor-paged list from the page after start; next
// reads the page after cursor.
func pagesFrom[T any](start string, next func(cursor string) ([]T, *string, error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		cursor := start
		for {
			items, nc, err := next(cursor)
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, it := range items {
				if !yield(it, nil) {
					return
				}
			}
			if nc == nil || *nc == "" {
				return
			}
			cursor = *nc
		}
	}
}

// AllProjects iterates over every project, oldest first (operator credential).
func (c *Client) AllProjects(ctx context.Context, page Page) iter.Seq2[Project, error] {
	return pagesFrom(page.Cursor, func(cursor string) ([]Project, *string, error) {
		p, err := c.ListProjects(ctx, Page{Limit: page.Limit, Cursor: cursor})
		if err != nil {
			return nil, nil, err
		}
		return p.Projects, p.NextCursor, nil
	})
}

// AllGroups iterates over every message group of a fifo queue (scope queues:read).
func (c *Client) AllGroups(ctx context.Context, queue string, page Page) iter.Seq2[Group, error] {
	return c.AllGroupsInState(ctx, queue, "", page)
}

// AllGroupsInState iterates over a fifo queue's message groups in state ("": any; scope
// queues:read).
func (c *Client) AllGroupsInState(ctx context.Context, queue string, state GroupState, page Page) iter.Seq2[Group, error] {
	return pagesFrom(page.Cursor, func(cursor string) ([]Group, *string, error) {
		p, err := c.ListGroupsInState(ctx, queue, state, Page{Limit: page.Limit, Cursor: cursor})
		if err != nil {
			return nil, nil, err
		}
		return p.Groups, p.NextCursor, nil
	})
}

// AllConsumers iterates over the queue's consumers seen in the last 5 minutes, by
// consumerId (scope queues:read).
func (c *Client) AllConsumers(ctx context.Context, queue string, page Page) iter.Seq2[Consumer, error] {
	return pagesFrom(page.Cursor, func(cursor string) ([]Consumer, *string, error) {
		p, err := c.ListConsumers(ctx, queue, Page{Limit: page.Limit, Cursor: cursor})
		if err != nil {
			return nil, nil, err
		}
		return p.Consumers, p.NextCursor, nil
	})
}

// BrowseAll iterates over the queue's messages in one state without leasing them, as
// Browse reads them page by page with in's State and Filter (scope queues:read). A filtered
// page may be empty and still not the last; the iteration goes on to the next.
func (c *Client) BrowseAll(ctx context.Context, queue string, in BrowseInput) iter.Seq2[BrowsedMessage, error] {
	return pagesFrom(in.Cursor, func(cursor string) ([]BrowsedMessage, *string, error) {
		in.Cursor = cursor
		p, err := c.Browse(ctx, queue, in)
		if err != nil {
			return nil, nil, err
		}
		return p.Messages, p.NextCursor, nil
	})
}

// AllMoveTasks iterates over the queue's move tasks, newest first (scope queues:read).
func (c *Client) AllMoveTasks(ctx context.Context, queue string, page Page) iter.Seq2[MoveTask, error] {
	return pagesFrom(page.Cursor, func(cursor string) ([]MoveTask, *string, error) {
		p, err := c.ListMoveTasks(ctx, queue, Page{Limit: page.Limit, Cursor: cursor})
		if err != nil {
			return nil, nil, err
		}
		return p.MoveTasks, p.NextCursor, nil
	})
}

// AllAttempts iterates over the subscription's kept push attempts, newest first (scope
// queues:read).
func (c *Client) AllAttempts(ctx context.Context, queue string, page Page) iter.Seq2[Attempt, error] {
	return pagesFrom(page.Cursor, func(cursor string) ([]Attempt, *string, error) {
		p, err := c.ListAttemptsPage(ctx, queue, Page{Limit: page.Limit, Cursor: cursor})
		if err != nil {
			return nil, nil, err
		}
		return p.Attempts, p.NextCursor, nil
	})
}

// AllReplays iterates over the topic's replays, newest first (scope queues:read).
func (c *Client) AllReplays(ctx context.Context, topic string, page Page) iter.Seq2[Replay, error] {
	return pagesFrom(page.Cursor, func(cursor string) ([]Replay, *string, error) {
		p, err := c.ListReplays(ctx, topic, Page{Limit: page.Limit, Cursor: cursor})
		if err != nil {
			return nil, nil, err
		}
		return p.Replays, p.NextCursor, nil
	})
}

// AllBindings iterates over the topic's bindings, like the other lists (the route answers
// them in one page: a topic has at most 100) (scope queues:read).
func (c *Client) AllBindings(ctx context.Context, topic string) iter.Seq2[Binding, error] {
	return oneList(func() ([]Binding, error) { return c.TopicBindings(ctx, topic) })
}

// AllSources iterates over the bindings feeding the queue, like the other lists (one page: a
// queue has at most 10 sources) (scope queues:read).
func (c *Client) AllSources(ctx context.Context, queue string) iter.Seq2[Binding, error] {
	return oneList(func() ([]Binding, error) { return c.ListSources(ctx, queue) })
}

// oneList iterates over a list the API answers whole, read when the iteration starts.
func oneList[T any](read func() ([]T, error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		items, err := read()
		if err != nil {
			var zero T
			yield(zero, err)
			return
		}
		for _, it := range items {
			if !yield(it, nil) {
				return
			}
		}
	}
}

// ListAttemptsPage lists one page of the subscription's recent push attempts, newest first,
// after page.Cursor (scope queues:read); ListAttempts is its first page.
func (c *Client) ListAttemptsPage(ctx context.Context, queue string, page Page) (*AttemptPage, error) {
	var p AttemptPage
	if err := c.Do(ctx, http.MethodGet, subPath(queue)+"/attempts", page.query(), nil, &p); err != nil {
		return nil, err
	}
	return &p, nil
}
