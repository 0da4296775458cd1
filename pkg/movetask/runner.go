package movetask

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/clock"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
)

// Defaults of a Runner.
const (
	DefaultLease = 15 * time.Second
	DefaultPoll  = time.Second
	// maxErrors is how many batches in a row may fail on storage before the task fails.
	maxErrors = 30
	// countSpeedup is how much faster than its rate a task counts (each batch still reads at
	// most engine.MaxMoveBatchBytes and is charged a request of its project's budget).
	countSpeedup = 10
)

// Runner runs the move tasks of the deployment: every replica runs one. It takes the lease of
// a running task whose lease is free or expired (compare-and-set on the task's Version, so
// one replica wins), then scans the source batch by batch: a task the start request could
// not count whole (it counts one batch, so its cost is bounded whatever the queue holds)
// first counts on what matches (toMove, at ten times its rate; a dry run ends there), then
// moves at its rate. After every batch it records the
// scan's cursor, the counts and a renewed lease. A replica that dies loses its
// lease within Lease; another resumes from the last cursor, after finishing the moves the
// dead one left half done (engine.Mover.FinishMoves). The moved count is the engine's, kept
// with each take-out, so it is exact across a crash.
type Runner struct {
	Store  meta.MoveTaskStore
	Queues Queues
	Engine engine.Engine
	Clock  clock.Clock
	// Owner names this replica in leases (unique per process).
	Owner string
	Log   *slog.Logger
	Lease time.Duration // default DefaultLease
	Poll  time.Duration // how often the work list is read (default DefaultPoll)
	// Budget charges each batch to its project's rate budgets (nil: none).
	Budget Budget
	// Replays lets the runner run replay tasks (replay.go; nil: a replay fails as not
	// served).
	Replays *ReplaySource

	mu      sync.Mutex
	running map[ids.ID]bool
	kick    chan struct{}
	once    sync.Once
}

func (r *Runner) init() {
	r.once.Do(func() {
		r.running = map[ids.ID]bool{}
		r.kick = make(chan struct{}, 1)
		if r.Lease <= 0 {
			r.Lease = DefaultLease
		}
		if r.Poll <= 0 {
			r.Poll = DefaultPoll
		}
		if r.Clock == nil {
			r.Clock = clock.Real{}
		}
		if r.Log == nil {
			r.Log = slog.Default()
		}
		if r.Owner == "" {
			r.Owner = ids.New().String()
		}
	})
}

// Kick makes the runner read its work list now (a task was just created here).
func (r *Runner) Kick() {
	r.init()
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// Run runs tasks until ctx ends; the tasks it runs stop with it, leaving their leases to
// expire.
func (r *Runner) Run(ctx context.Context) {
	r.init()
	var wg sync.WaitGroup
	defer wg.Wait()
	t := time.NewTicker(r.Poll)
	defer t.Stop()
	for {
		r.scan(ctx, &wg)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-r.kick:
		}
	}
}

func (r *Runner) scan(ctx context.Context, wg *sync.WaitGroup) {
	tasks, err := r.Store.RunningMoveTasks(ctx)
	if err != nil {
		if ctx.Err() == nil {
			r.Log.Warn("movetask: reading the running tasks failed", "error", err)
		}
		return
	}
	now := r.Clock.Now()
	for _, t := range tasks {
		r.mu.Lock()
		mine := r.running[t.ID]
		r.mu.Unlock()
		if mine || (t.Owner != "" && t.Owner != r.Owner && t.LeaseUntil.After(now)) {
			continue
		}
		t.Owner, t.LeaseUntil = r.Owner, now.Add(r.Lease)
		up, err := r.Store.UpdateMoveTask(ctx, t)
		if err != nil {
			continue // another replica took it, or it ended
		}
		r.mu.Lock()
		r.running[t.ID] = true
		r.mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				r.mu.Lock()
				delete(r.running, up.ID)
				r.mu.Unlock()
			}()
			r.run(ctx, up)
		}()
	}
}

// Budget is the project rate budgets a task's batches are charged to (the API server's): a
// move is work the project asked for, so it spends what sends would — one request a batch,
// and the bytes of the messages it moves or deletes from sendBytesPerSecond.
type Budget interface {
	// Charge takes requests and bytes from project's budgets, waiting (until ctx ends) while
	// they have no room; false: ctx ended first.
	Charge(ctx context.Context, project ids.ID, requests int, bytes int64) bool
}

// errLost ends a run whose task this replica no longer holds (cancelled, or taken over).
var errLost = errors.New("movetask: the task is no longer this replica's")

// run moves a task to its end, or until ctx ends or the task is lost.
func (r *Runner) run(ctx context.Context, t meta.MoveTask) {
	if t.IsReplay() {
		r.runReplay(ctx, t)
		return
	}
	src, err := r.Queues.GetQueueByID(ctx, t.QueueID)
	if errors.Is(err, meta.ErrNotFound) {
		r.finish(ctx, t, meta.MoveFailed, "the source queue was deleted")
		return
	}
	var ch *Chooser
	if err == nil {
		ch, err = NewChooser(ctx, t, src, r.Queues)
	}
	var ae *apierr.Error
	if errors.As(err, &ae) && ae.Code != apierr.Unavailable {
		r.finish(ctx, t, meta.MoveFailed, ae.Message)
		return
	}
	if err != nil {
		return // the lease lapses; a later scan retries
	}
	sq := src.Engine(nil)
	if err := r.Engine.FinishMoves(ctx, sq); err != nil {
		return
	}
	if t.Counting {
		var ok bool
		if t, ok = r.pass(ctx, t, ch, sq, true); !ok {
			return
		}
		t.Counting = false
		if t.DryRun {
			r.finish(ctx, t, meta.MoveCompleted, "")
			return
		}
		t.Failed = 0 // counted again as the moves meet them
		if t, err = r.checkpoint(ctx, t); err != nil {
			return
		}
	}
	if t, ok := r.pass(ctx, t, ch, sq, false); ok {
		if err := r.Engine.FinishMoves(ctx, sq); err != nil {
			return
		}
		r.finish(ctx, t, meta.MoveCompleted, "")
	}
}

// pass scans the source from t.Cursor to its end, batch by batch at the task's rate,
// checkpointing after each batch: counting (toMove, and failed) without moving anything,
// or moving. ok: the scan reached the end; otherwise the task was finished as failed, or lost,
// or ctx ended.
func (r *Runner) pass(ctx context.Context, t meta.MoveTask, ch *Chooser, sq engine.Queue, counting bool) (_ meta.MoveTask, ok bool) {
	rate := t.MaxPerSecond
	if counting {
		rate *= countSpeedup // a count takes nothing: it need not last as long as the moves
	}
	pace := newPacer(r.Clock.Now(), rate)
	errs := 0
	for ctx.Err() == nil {
		limit := min(engine.MaxMoveBatch, max(1, t.MaxPerSecond/10))
		if !counting {
			if why, err := r.destinationsGone(ctx, t, ch); err != nil || why != "" {
				if why != "" {
					r.finish(ctx, t, meta.MoveFailed, why)
				}
				return t, false // err: the lease lapses; a later scan retries
			}
		}
		ch.err = nil
		pick, matched, size := ch.Choose(ctx), 0, int64(0)
		choose := func(m engine.BrowsedMessage) (*engine.Queue, bool) {
			q, fail := pick(m)
			if q != nil {
				matched++
				size += engine.PayloadBytes(m.Body, m.Attributes)
			}
			if counting {
				return nil, fail
			}
			return q, fail
		}
		res, err := r.Engine.MoveBatch(ctx, sq, engine.MoveRequest{Tag: t.ID.String(), Cursor: t.Cursor, Limit: limit, Choose: choose})
		if err == nil {
			err = ch.err
		}
		if err != nil {
			if errors.Is(err, engine.ErrBadCursor) { // the stored cursor: not one the engine reads
				r.finish(ctx, t, meta.MoveFailed, "the task's position in the source is no longer valid")
				return t, false
			}
			if errs++; errs >= maxErrors {
				r.finish(ctx, t, meta.MoveFailed, "storage kept failing")
				return t, false
			}
			if !sleep(ctx, time.Duration(errs)*100*time.Millisecond) {
				return t, false
			}
			if t, err = r.checkpoint(ctx, t); err != nil {
				return t, false
			}
			continue
		}
		errs = 0
		if !counting && ch.Dest != nil && res.Moved > 0 {
			if why, back, err := r.takeBack(ctx, t, ch, sq); err == nil && why != "" {
				r.end(ctx, t, meta.MoveFailed, why, back)
				return t, false
			}
		}
		if counting {
			size = 0 // a count moves nothing: its batch costs a request
		}
		if r.Budget != nil && !r.Budget.Charge(ctx, t.ProjectID, 1, size) {
			return t, false
		}
		n := res.Moved
		if counting {
			t.ToMove, n = t.ToMove+int64(matched), matched
		}
		t.Failed += int64(res.Failed)
		t.Cursor = res.NextCursor
		if t.Cursor == "" {
			return t, true
		}
		if t, err = r.checkpoint(ctx, t); err != nil {
			return t, false
		}
		if d := pace.wait(r.Clock.Now(), n); d > 0 {
			if !sleep(ctx, d) || r.stopped(ctx, t) {
				return t, false
			}
		}
	}
	return t, false
}

// destinationsGone checks, before each batch that moves, that the task's destination still
// exists: a queue deleted while the task runs must not take the rest of the source with it
// (an insert recreates a deleted queue's storage, where nothing would ever read the messages
// again). It answers why the task fails ("" while the destination lives). Without a
// destination, the dead-letter sources looked up are forgotten, so a source deleted meanwhile
// makes its messages fail (and stay) rather than go into the void.
func (r *Runner) destinationsGone(ctx context.Context, t meta.MoveTask, ch *Chooser) (string, error) {
	ch.Forget()
	if ch.Dest == nil {
		return "", nil
	}
	_, err := r.Queues.GetQueueByID(ctx, ch.Dest.ID)
	switch {
	case errors.Is(err, meta.ErrNotFound):
		return "the destination queue was deleted while the task ran; the messages not yet moved stay in the source", nil
	case err != nil:
		return "", err
	}
	return "", nil
}

// takeBack reads the destination again after a batch moved into it: a replica whose metadata
// cache had not yet seen its deletion may have inserted the batch into the deleted queue's
// storage, which its insert recreated and nothing reads. Those messages are moved back to the
// source and the remains of the deleted queue wiped. It answers why the task fails ("" while
// the destination lives) and how many messages came back (they do not count as moved).
func (r *Runner) takeBack(ctx context.Context, t meta.MoveTask, ch *Chooser, sq engine.Queue) (string, int64, error) {
	if _, err := r.Queues.GetQueueByID(ctx, ch.Dest.ID); !errors.Is(err, meta.ErrNotFound) {
		return "", 0, nil
	}
	ghost, tag := *ch.Dest, t.ID.String()+"/back"
	back := func(engine.BrowsedMessage) (*engine.Queue, bool) { return &sq, false }
	for cursor := ""; ; {
		res, err := r.Engine.MoveBatch(ctx, ghost, engine.MoveRequest{Tag: tag, Cursor: cursor, Limit: engine.MaxMoveBatch, Choose: back})
		if err != nil {
			return "", 0, err
		}
		if cursor = res.NextCursor; cursor == "" {
			break
		}
	}
	if err := r.Engine.FinishMoves(ctx, ghost); err != nil {
		return "", 0, err
	}
	n, err := r.Engine.MovedCount(ctx, ghost, tag)
	if err != nil {
		return "", 0, err
	}
	if err := r.Engine.DeleteQueue(ctx, ghost.ID); err != nil {
		return "", 0, err
	}
	return "the destination queue was deleted while the task ran; the messages not yet moved stay in the source", n, nil
}

// stopped reads t after the runner waited out its pace: a cancel that came meanwhile stops the
// task before another batch moves (otherwise the next checkpoint would find it, one batch
// after the cancel's answer). Running at full speed the runner does not wait, and the
// checkpoint after each batch is the check.
func (r *Runner) stopped(ctx context.Context, t meta.MoveTask) bool {
	cur, err := r.Store.GetMoveTask(ctx, t.QueueID, t.ID)
	return err == nil && (cur.Status != meta.MoveRunning || cur.Owner != r.Owner)
}

// checkpoint records the cursor, the failed count, the engine's moved count and a renewed
// lease. errLost: the task was cancelled or taken over (the moved count of a cancelled task
// is still brought up to date).
func (r *Runner) checkpoint(ctx context.Context, t meta.MoveTask) (meta.MoveTask, error) {
	if n, err := r.movedCount(ctx, t); err == nil && n > t.Moved {
		t.Moved = n
	}
	t.LeaseUntil = r.Clock.Now().Add(r.Lease)
	up, err := r.Store.UpdateMoveTask(ctx, t)
	if err == nil {
		return up, nil
	}
	if !errors.Is(err, meta.ErrMoveTaskConflict) {
		return t, err
	}
	cur, gerr := r.Store.GetMoveTask(ctx, t.QueueID, t.ID)
	if gerr != nil {
		return t, gerr
	}
	if cur.Status != meta.MoveRunning && cur.Moved != t.Moved {
		cur.Moved = t.Moved
		_, _ = r.Store.UpdateMoveTask(ctx, cur)
	}
	if cur.Status != meta.MoveRunning || cur.Owner != r.Owner {
		return t, errLost
	}
	return t, err
}

// finish ends a task with status (completed or failed) and its final counts.
func (r *Runner) finish(ctx context.Context, t meta.MoveTask, status, why string) {
	r.end(ctx, t, status, why, 0)
}

// end is finish with less messages taken off the engine's moved count (moved back).
func (r *Runner) end(ctx context.Context, t meta.MoveTask, status, why string, less int64) {
	for range 5 {
		if n, err := r.movedCount(ctx, t); err == nil && n-less > t.Moved {
			t.Moved = n - less
		}
		t.Status, t.Error, t.FinishedAt = status, why, r.Clock.Now()
		_, err := r.Store.UpdateMoveTask(ctx, t)
		if err == nil {
			if !t.IsReplay() {
				_ = r.Engine.ForgetMoved(ctx, engineQueueOf(t), t.ID.String())
			}
			return
		}
		if !errors.Is(err, meta.ErrMoveTaskConflict) {
			if !sleep(ctx, time.Second) {
				return
			}
			continue
		}
		cur, err := r.Store.GetMoveTask(ctx, t.QueueID, t.ID)
		if err != nil || cur.Status != meta.MoveRunning || cur.Owner != r.Owner {
			return
		}
		cur.Cursor, cur.Failed, cur.ToMove = t.Cursor, t.Failed, t.ToMove
		if t.IsReplay() { // a replay's moved count is its own, not the engine's
			cur.Moved = max(cur.Moved, t.Moved)
		}
		t = cur
	}
}

// movedCount is the engine's count of what t moved (a replay counts its own: 0 here).
func (r *Runner) movedCount(ctx context.Context, t meta.MoveTask) (int64, error) {
	if t.IsReplay() {
		return 0, nil
	}
	return r.Engine.MovedCount(ctx, engineQueueOf(t), t.ID.String())
}

// engineQueueOf names a task's source for the engine's counters (id and project are all they
// read).
func engineQueueOf(t meta.MoveTask) engine.Queue {
	return engine.Queue{ID: t.QueueID, Project: t.ProjectID}
}

func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-tm.C:
		return true
	}
}

// pacer holds a task to its rate: after n messages moved since start, the next batch may go
// at start + n/rate.
type pacer struct {
	start time.Time
	rate  int
	n     int64
}

func newPacer(now time.Time, rate int) *pacer { return &pacer{start: now, rate: max(rate, 1)} }

func (p *pacer) wait(now time.Time, moved int) time.Duration {
	p.n += int64(moved)
	due := p.start.Add(time.Duration(p.n * int64(time.Second) / int64(p.rate)))
	return due.Sub(now)
}
