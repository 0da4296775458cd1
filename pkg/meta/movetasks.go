package meta

import (
	"context"
	"errors"
	"time"

	"github.com/queueshq/queues/pkg/ids"
)

// ErrMoveTaskConflict is returned by UpdateMoveTask when the task changed since it was read.
var ErrMoveTaskConflict = errors.New("meta: move task changed concurrently")

// Move task statuses (docs/redrive.md).
const (
	MoveRunning   = "running"
	MoveCompleted = "completed"
	MoveCancelled = "cancelled"
	MoveFailed    = "failed"
)

// Move task actions (docs/redrive.md): a task moves the messages it selects, or deletes them.
const (
	ActionMove   = "move"
	ActionDelete = "delete"
)

// MaxRunningMoveTasks bounds the running move tasks of one project (dry runs included): each
// holds a runner's goroutine and scans storage at up to its rate, so one project could
// otherwise start one per queue it owns. Past it, CreateMoveTask fails with ErrQuota
// naming LimitRunningMoveTasks.
const MaxRunningMoveTasks = 10

// LimitRunningMoveTasks is the details.limit of that quota_exceeded (not a limit a project
// sets).
const LimitRunningMoveTasks = "runningMoveTasks"

// RunningQuota is the error of a project at MaxRunningMoveTasks.
func RunningQuota() error {
	return QuotaReached(LimitRunningMoveTasks, MaxRunningMoveTasks)
}

// MoveTask is a move task (redrive and replay) as stored: its request, its progress, and the
// lease of the replica running it. The store keeps it durably, so a task outlives the replica
// running it: another replica takes the lease once it expires and resumes from Cursor.
type MoveTask struct {
	ID        ids.ID
	ProjectID ids.ID
	// QueueID is the source: the queue moved from, or, for a replay, the topic replayed (its
	// tasks are listed by it).
	QueueID ids.ID
	// TopicID is non-zero for a replay (docs/topics.md#replay): the topic whose log range
	// FromSequence to ToSequence (inclusive) is copied into Destination; it equals QueueID.
	TopicID      ids.ID
	FromSequence uint64
	ToSequence   uint64
	// Destination is the queue moved to; zero: each message back to its dead-letter source.
	Destination ids.ID
	// Action is ActionMove or ActionDelete ("" is a move: tasks stored before actions).
	Action string
	// Filter is the task's filter as the API accepted it (JSON; "" for none).
	Filter       string
	MaxPerSecond int
	Status       string
	// DryRun only counts: the task ends completed once Counting ends, having moved nothing.
	DryRun bool
	// Counting is true while the runner's first pass counts ToMove (and, for a dry run,
	// Failed); Cursor is then that pass's position. A task starts counting (the request does
	// no work proportional to the queue); false for tasks stored before counting moved here.
	Counting bool
	Moved    int64
	ToMove   int64
	Failed   int64
	// Error says why a failed task failed ("" otherwise).
	Error      string
	Cursor     string // where the scan of the source continues (a replay: the next sequence)
	StartedAt  time.Time
	FinishedAt time.Time // zero while running
	// Owner is the replica holding the lease, until LeaseUntil.
	Owner      string
	LeaseUntil time.Time
	// Version increases with every update (optimistic concurrency for UpdateMoveTask).
	Version int64
}

// MoveTaskStore keeps move tasks, by source queue (replays by topic). Errors carry apierr
// codes: NotFound, MoveTaskRunning when the task's queue (RunQueue) already has a running
// task, ErrBadCursor (InvalidArgument) for a bad cursor, Unavailable when the backend cannot
// be reached.
type MoveTaskStore interface {
	// CreateMoveTask stores a new running task with Version 1, unless its RunQueue has a
	// running task already (MoveTaskRunning: a queue runs one task at a time, a move task
	// from it or a replay into it) or its project has MaxRunningMoveTasks running
	// (RunningQuota), both checked atomically with the store.
	CreateMoveTask(ctx context.Context, t MoveTask) error
	// GetMoveTask reads one task of a queue.
	GetMoveTask(ctx context.Context, queueID, taskID ids.ID) (MoveTask, error)
	// ListMoveTasks lists a queue's tasks, newest first.
	ListMoveTasks(ctx context.Context, queueID ids.ID, page Page) (ts []MoveTask, nextCursor string, err error)
	// RunningMoveTasks lists every running task of every project (the runners' work list).
	RunningMoveTasks(ctx context.Context) ([]MoveTask, error)
	// UpdateMoveTask replaces t if its stored Version equals t.Version (else
	// ErrMoveTaskConflict) and returns it with the new Version; a task that leaves "running"
	// frees its queue for another task in the same step. ID, ProjectID, QueueID, TopicID,
	// Destination and StartedAt never change. A finished task never runs again (ErrMoveTaskConflict).
	UpdateMoveTask(ctx context.Context, t MoveTask) (MoveTask, error)
}

// IsReplay reports whether t replays a topic's log (docs/topics.md#replay) rather than moving a
// queue's messages.
func (t MoveTask) IsReplay() bool { return !t.TopicID.IsZero() }

// RunQueue is the queue t holds while it runs, at most one running task per queue: a move
// task's source, a replay's destination.
func (t MoveTask) RunQueue() ids.ID {
	if t.IsReplay() {
		return t.Destination
	}
	return t.QueueID
}

// Deletes reports whether t deletes what it selects rather than moving it.
func (t MoveTask) Deletes() bool { return t.Action == ActionDelete }

// Clone returns t with its times in UTC (stores return what they keep in one shape).
func (t MoveTask) Clone() MoveTask {
	t.StartedAt, t.LeaseUntil = t.StartedAt.UTC(), t.LeaseUntil.UTC()
	if !t.FinishedAt.IsZero() {
		t.FinishedAt = t.FinishedAt.UTC()
	}
	return t
}

// MoveTaskKey orders a queue's tasks newest first: the task id (UUIDv7, so in creation order)
// in hex with every digit inverted, so ascending keys are descending ids.
func MoveTaskKey(id ids.ID) string {
	const hex = "0123456789abcdef"
	b := make([]byte, 32)
	for i, c := range id {
		b[2*i], b[2*i+1] = hex[15-c>>4], hex[15-c&15]
	}
	return string(b)
}
