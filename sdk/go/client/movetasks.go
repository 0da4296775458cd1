package client

import (
	"context"
	"net/http"
	"time"
)

// MoveFilter selects the messages a move task moves; every field set must match.
type MoveFilter struct {
	Reason     string              `json:"reason,omitempty"`
	SentAfter  *time.Time          `json:"sentAfter,omitempty"`
	SentBefore *time.Time          `json:"sentBefore,omitempty"`
	GroupID    string              `json:"groupId,omitempty"`
	Attributes map[string][]string `json:"attributes,omitempty"`
}

// Move task actions: a task moves the messages it selects (the default), or deletes them.
const (
	MoveActionMove   = "move"
	MoveActionDelete = "delete"
)

// StartMoveTaskInput starts a move task (redrive and replay). Destination empty: each
// message goes back to its dead-letter source queue. MaxMessagesPerSecond nil: 500. Action
// empty: MoveActionMove; MoveActionDelete deletes the matching messages (no Destination).
type StartMoveTaskInput struct {
	Destination          string      `json:"destination,omitempty"`
	Action               string      `json:"action,omitempty"`
	Filter               *MoveFilter `json:"filter,omitempty"`
	MaxMessagesPerSecond *int        `json:"maxMessagesPerSecond,omitempty"`
	DryRun               bool        `json:"dryRun,omitempty"`
}

// MoveTask is a move task and its progress.
type MoveTask struct {
	ID                   string      `json:"id"`
	Status               string      `json:"status"` // running, completed, cancelled, failed
	Source               string      `json:"source"`
	Destination          *string     `json:"destination"`
	Filter               *MoveFilter `json:"filter"`
	Action               string      `json:"action"` // move or delete
	MaxMessagesPerSecond int         `json:"maxMessagesPerSecond"`
	DryRun               bool        `json:"dryRun"`
	Moved                int64       `json:"moved"` // deleted, for a delete task
	ToMove               int64       `json:"toMove"`
	Failed               int64       `json:"failed"`
	Error                *string     `json:"error"`
	StartedAt            time.Time   `json:"startedAt"`
	FinishedAt           *time.Time  `json:"finishedAt"`
}

// MoveTaskPage is one page of a queue's move tasks, newest first.
type MoveTaskPage struct {
	MoveTasks  []MoveTask `json:"moveTasks"`
	NextCursor *string    `json:"nextCursor"`
}

// StartMoveTask starts a move task of queue (scope queues:admin), answered running with
// ToMove (the whole count for a queue within one batch; a larger one's task counts on, then
// moves). With DryRun it only counts: answered completed for a queue within one batch, else
// running (follow it with GetMoveTask until it is no longer running).
func (c *Client) StartMoveTask(ctx context.Context, queue string, in StartMoveTaskInput) (*MoveTask, error) {
	var t MoveTask
	if err := c.Do(ctx, http.MethodPost, "/v1/queues/"+seg(queue)+"/move-tasks", nil, in, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// ListMoveTasks lists queue's move tasks, newest first (scope queues:read).
func (c *Client) ListMoveTasks(ctx context.Context, queue string, page Page) (*MoveTaskPage, error) {
	var p MoveTaskPage
	if err := c.Do(ctx, http.MethodGet, "/v1/queues/"+seg(queue)+"/move-tasks", page.query(), nil, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// GetMoveTask reads one move task (scope queues:read).
func (c *Client) GetMoveTask(ctx context.Context, queue, id string) (*MoveTask, error) {
	var t MoveTask
	if err := c.Do(ctx, http.MethodGet, "/v1/queues/"+seg(queue)+"/move-tasks/"+seg(id), nil, nil, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// CancelMoveTask stops a running move task (scope queues:admin).
func (c *Client) CancelMoveTask(ctx context.Context, queue, id string) (*MoveTask, error) {
	var t MoveTask
	if err := c.Do(ctx, http.MethodPost, "/v1/queues/"+seg(queue)+"/move-tasks/"+seg(id)+"/cancel", nil, nil, &t); err != nil {
		return nil, err
	}
	return &t, nil
}
