package movetask

import (
	"context"
	"errors"
	"time"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
)

// Queues reads queues by id (the metadata store or its cache).
type Queues interface {
	GetQueueByID(ctx context.Context, queueID ids.ID) (meta.Queue, error)
}

// Chooser decides, message by message, what a task moves and where: a message that arrived
// in the source after the task started is left (so a message that fails again and comes back
// to a dead-letter queue is not moved round in a loop), one the filter rejects is left, and
// one that matches goes to the destination, or, without one, back to its dead-letter source
// queue (or, for a task with the delete action, is deleted: engine.Discard). A matching message that cannot go anywhere — no dead-letter source, or that queue
// deleted or no longer of the same project and type — counts as failed and stays.
type Chooser struct {
	Task   meta.MoveTask
	Source meta.Queue
	Filter *Filter
	Queues Queues
	// Dest is the destination (explicit destination only).
	Dest *engine.Queue

	back map[ids.ID]*engine.Queue // dead-letter sources looked up, nil for unusable ones
	err  error                    // the metadata store failed during a batch
}

// NewChooser prepares a task's chooser; with an explicit destination it must exist in the
// source's project with its type (else apierr NotFound / InvalidArgument, field destination).
func NewChooser(ctx context.Context, t meta.MoveTask, src meta.Queue, qs Queues) (*Chooser, error) {
	f, err := DecodeFilter(t.Filter)
	if err != nil {
		return nil, apierr.New(apierr.Internal, "stored filter of task %s: %v", t.ID, err)
	}
	c := &Chooser{Task: t, Source: src, Filter: f, Queues: qs, back: map[ids.ID]*engine.Queue{}}
	if !t.Destination.IsZero() {
		d, err := qs.GetQueueByID(ctx, t.Destination)
		if errors.Is(err, meta.ErrNotFound) || (err == nil && d.ProjectID != src.ProjectID) {
			return nil, apierr.New(apierr.NotFound, "destination queue %s not found", t.Destination).WithPrefix("destination")
		}
		if err != nil {
			return nil, err
		}
		if d.Type != src.Type {
			return nil, apierr.Invalid("destination", "must be a %s queue like the source", src.Type)
		}
		if d.ID == src.ID {
			return nil, apierr.Invalid("destination", "must be another queue than the source")
		}
		eq := d.Engine(nil)
		c.Dest = &eq
	}
	return c, nil
}

// arrival is when m came to the source: its dead-lettering, else its send.
func arrival(m engine.BrowsedMessage) time.Time {
	if m.DeadLetter != nil {
		return m.DeadLetter.At
	}
	return m.SentAt
}

// Choose is engine.MoveRequest's Choose.
func (c *Chooser) Choose(ctx context.Context) func(engine.BrowsedMessage) (*engine.Queue, bool) {
	return func(m engine.BrowsedMessage) (*engine.Queue, bool) {
		if arrival(m).After(c.Task.StartedAt) || !c.Filter.Match(m) {
			return nil, false
		}
		if c.Task.Deletes() {
			return engine.Discard, false
		}
		if c.Dest != nil {
			return c.Dest, false
		}
		if m.DeadLetter == nil || m.DeadLetter.SourceQueue == c.Source.ID {
			return nil, true
		}
		q, seen := c.back[m.DeadLetter.SourceQueue]
		if !seen {
			mq, err := c.Queues.GetQueueByID(ctx, m.DeadLetter.SourceQueue)
			switch {
			case err == nil && mq.ProjectID == c.Source.ProjectID && mq.Type == c.Source.Type:
				eq := mq.Engine(nil)
				q = &eq
			case err != nil && !errors.Is(err, meta.ErrNotFound):
				c.err = err // not known now: leave it, the batch is retried
				return nil, false
			}
			c.back[m.DeadLetter.SourceQueue] = q
		}
		return q, q == nil
	}
}

// Forget drops the dead-letter sources looked up so far, so the next batch reads them again
// (one lookup per distinct source and batch, through the metadata cache).
func (c *Chooser) Forget() { clear(c.back) }
