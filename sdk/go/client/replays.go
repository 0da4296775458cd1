package client

import (
	"context"
	"net/http"
	"time"
)

// ReplayOf names the topic log entry a replayed message copies: the topic's id and the
// entry's sequence. A replayed copy has a message id of its own.
type ReplayOf struct {
	Topic    string `json:"topic"`
	Sequence uint64 `json:"sequence"`
}

// StartReplayInput replays the log entries From..To (inclusive) of a topic into Queue (id or
// name; same project, the topic's type). From (required) and To are sequences (a uint64, an
// int or a decimal string) or RFC 3339 times (a time.Time or a string); To nil: the log's last
// sequence when the replay starts. Filter nil replays every entry of the range.
// MaxMessagesPerSecond nil: 500.
type StartReplayInput struct {
	Queue                string  `json:"queue"`
	From                 any     `json:"from"`
	To                   any     `json:"to,omitempty"`
	Filter               *Filter `json:"filter,omitempty"`
	MaxMessagesPerSecond *int    `json:"maxMessagesPerSecond,omitempty"`
	DryRun               bool    `json:"dryRun,omitempty"`
}

// Replay is a topic's replay into a queue and its progress.
type Replay struct {
	ID      string `json:"id"`
	TopicID string `json:"topicId"`
	Topic   string `json:"topic"` // the topic's name
	QueueID string `json:"queueId"`
	// Queue is the destination's name; nil once the queue is deleted.
	Queue                *string    `json:"queue"`
	From                 uint64     `json:"from"`
	To                   uint64     `json:"to"`
	Filter               *Filter    `json:"filter"`
	Status               string     `json:"status"` // running, completed, cancelled, failed
	Moved                int64      `json:"moved"`
	ToMove               int64      `json:"toMove"`
	Failed               int64      `json:"failed"`
	MaxMessagesPerSecond int        `json:"maxMessagesPerSecond"`
	DryRun               bool       `json:"dryRun"`
	StartedAt            time.Time  `json:"startedAt"`
	FinishedAt           *time.Time `json:"finishedAt"`
	Error                string     `json:"error,omitempty"` // why a failed replay failed
}

// ReplayPage is one page of a topic's replays, newest first.
type ReplayPage struct {
	Replays    []Replay `json:"replays"`
	NextCursor *string  `json:"nextCursor"`
}

// StartReplay replays a range of topic's log into a queue (scope queues:admin), answered
// running with ToMove (the whole count for a range within one log read of 1,000 entries;
// a larger one's replay counts on, then copies). With DryRun it only counts: answered
// completed for a range within one read, else running (follow it with GetReplay). A queue
// runs one task at a time (a replay into it or a move task from it): else a *Error with
// code move_task_running.
func (c *Client) StartReplay(ctx context.Context, topic string, in StartReplayInput) (*Replay, error) {
	var r Replay
	if err := c.Do(ctx, http.MethodPost, "/v1/topics/"+seg(topic)+"/replays", nil, in, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// ListReplays lists topic's replays, newest first (scope queues:read).
func (c *Client) ListReplays(ctx context.Context, topic string, page Page) (*ReplayPage, error) {
	var p ReplayPage
	if err := c.Do(ctx, http.MethodGet, "/v1/topics/"+seg(topic)+"/replays", page.query(), nil, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// GetReplay reads one replay (scope queues:read).
func (c *Client) GetReplay(ctx context.Context, topic, id string) (*Replay, error) {
	var r Replay
	if err := c.Do(ctx, http.MethodGet, "/v1/topics/"+seg(topic)+"/replays/"+seg(id), nil, nil, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// CancelReplay stops a running replay after the batch in transit (scope queues:admin); a
// finished one is answered as it is.
func (c *Client) CancelReplay(ctx context.Context, topic, id string) (*Replay, error) {
	var r Replay
	if err := c.Do(ctx, http.MethodPost, "/v1/topics/"+seg(topic)+"/replays/"+seg(id)+"/cancel", nil, nil, &r); err != nil {
		return nil, err
	}
	return &r, nil
}
