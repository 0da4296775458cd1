package engine

import (
	"context"
)

// MaxMoveBatch bounds the messages one MoveBatch examines.
const MaxMoveBatch = 1000

// MaxMoveBatchBytes bounds the bytes of the messages one MoveBatch reads (BrowseRequest's
// MaxBytes): at most 4 MiB in the replica's memory and in one storage reply, where 1,000
// messages of the largest size would be 256 MiB.
const MaxMoveBatchBytes = 4 << 20

// Discard, as Choose's destination, deletes the message instead of moving it (a move task
// with "action": "delete"). It is compared by identity; it names no queue.
var Discard = &Queue{}

// MoveRequest asks for one batch of a move task (docs/redrive.md, redrive and replay): the engine
// pages through the source queue's visible messages from Cursor, asks Choose about each, and
// moves the chosen ones.
type MoveRequest struct {
	// Tag names the move task. The engine counts the messages moved under it durably, in the
	// same step as each take-out (MovedCount), so a task resumed after a crash knows exactly
	// how many it moved.
	Tag string
	// Cursor is where the previous batch ended ("" for the first).
	Cursor string
	// Limit is how many messages the batch examines at most (1..MaxMoveBatch); the batch also
	// reads at most MaxMoveBatchBytes of them (at least one message).
	Limit int
	// Choose decides one message: a destination queue to move it to, Discard to delete it,
	// or nil to leave it (fail true: it matched but cannot be moved, and counts as failed).
	Choose func(BrowsedMessage) (dst *Queue, fail bool)
}

// MoveResult is the outcome of one batch.
type MoveResult struct {
	// Moved counts the messages taken out of the source by this batch (each one's copy is in
	// its destination before MoveBatch returns, or, after a failure there, is finished by
	// Sweep; a discarded one is deleted). Failed counts those Choose failed.
	Moved, Failed int
	// Examined counts the messages Choose was asked about.
	Examined int
	// NextCursor continues the scan; "" when it reached the end of the visible messages.
	NextCursor string
}

// Mover is the move primitive of move tasks. Each message is moved atomically or
// idempotently by its id: it leaves the source only if still visible, lands in its
// destination with the same id, body, attributes and group (receiveCount 0, no dead-letter
// information, retention counted from the move), and an interrupted move is finished by
// Sweep without duplicating it while the copy still waits in the destination.
//
// A move keeps the project's stored bytes (source and destination share the project), so it
// is never refused for maxStoredBytes.
type Mover interface {
	MoveBatch(ctx context.Context, src Queue, req MoveRequest) (MoveResult, error)
	// MovedCount is the number of messages moved out of src under tag so far.
	MovedCount(ctx context.Context, src Queue, tag string) (int64, error)
	// FinishMoves completes every move out of src that a crash interrupted (a task resumed on
	// another replica calls it first; Sweep does it too, after a grace period).
	FinishMoves(ctx context.Context, src Queue) error
	// ForgetMoved drops tag's count (once the task recorded its final figures).
	ForgetMoved(ctx context.Context, src Queue, tag string) error
}
