package service

import (
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/movetask"
)

// MoveTaskRequest is what starting a move task asks for (docs/redrive.md).
type MoveTaskRequest struct {
	// Destination is the queue moved to; nil: each message back to its dead-letter source.
	// A delete task has none.
	Destination *meta.Queue
	Filter      *movetask.Filter
	// Rate is in messages a second.
	Rate int
	// DryRun only counts what the task would move or delete.
	DryRun bool
	// Action is meta.ActionMove or meta.ActionDelete.
	Action string
}
