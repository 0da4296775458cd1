package api

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/movetask"
	"github.com/queueshq/queues/pkg/service"
	"github.com/queueshq/queues/pkg/tenancy"
)

// Move tasks (docs/redrive.md): the routes write and read tasks in the metadata store; the
// replicas' movetask.Runner does the moving.
const (
	defaultMoveRate = 500
	maxMoveRate     = 10_000
	defaultMoveList = 20
)

var moveTaskFields = []string{"destination", "filter", "maxMessagesPerSecond", "dryRun", "action"}

// MoveTaskRequest is what starting a move task asks for (service.MoveTaskRequest).
type MoveTaskRequest = service.MoveTaskRequest

// MoveTaskRunner is what the API needs of the replica's runner: a nudge when a task was just
// created here, so it starts at once rather than at the next poll.
type MoveTaskRunner interface{ Kick() }

type moveTaskJSON struct {
	ID                   string           `json:"id"`
	Status               string           `json:"status"`
	Source               string           `json:"source"`
	Destination          *string          `json:"destination"`
	Filter               *movetask.Filter `json:"filter"`
	Action               string           `json:"action"`
	MaxMessagesPerSecond int              `json:"maxMessagesPerSecond"`
	DryRun               bool             `json:"dryRun"`
	Moved                int64            `json:"moved"`
	ToMove               int64            `json:"toMove"`
	Failed               int64            `json:"failed"`
	Error                *string          `json:"error"`
	StartedAt            string           `json:"startedAt"`
	FinishedAt           *string          `json:"finishedAt"`
}

func moveTaskOut(t meta.MoveTask) moveTaskJSON {
	out := moveTaskJSON{
		ID: t.ID.String(), Status: t.Status, Source: t.QueueID.String(), Action: meta.ActionMove, MaxMessagesPerSecond: t.MaxPerSecond,
		DryRun: t.DryRun, Moved: t.Moved, ToMove: t.ToMove, Failed: t.Failed, StartedAt: formatTime(t.StartedAt),
	}
	if t.Deletes() {
		out.Action = meta.ActionDelete
	}
	if !t.Destination.IsZero() {
		d := t.Destination.String()
		out.Destination = &d
	}
	out.Filter, _ = movetask.DecodeFilter(t.Filter)
	if t.Error != "" {
		e := t.Error
		out.Error = &e
	}
	if !t.FinishedAt.IsZero() {
		f := formatTime(t.FinishedAt)
		out.FinishedAt = &f
	}
	return out
}

// startMoveTask is POST /v1/queues/{queue}/move-tasks.
func (s *Server) startMoveTask(c echo.Context) error {
	data, err := readBody(c)
	if err != nil {
		return err
	}
	o, aerr := parseObject(data, "", true, moveTaskFields...)
	if aerr != nil {
		return aerr
	}
	rate, ok, aerr := o.integer("maxMessagesPerSecond", 1, maxMoveRate)
	if aerr != nil {
		return aerr
	}
	if !ok {
		rate = defaultMoveRate
	}
	dry, _, aerr := o.boolean("dryRun")
	if aerr != nil {
		return aerr
	}
	action, aerr := moveAction(o)
	if aerr != nil {
		return aerr
	}
	var f *movetask.Filter
	if o.has("filter") && !o.isNull("filter") {
		if f, aerr = movetask.ParseFilter(o.fields["filter"]); aerr != nil {
			return aerr
		}
	}
	src, err := s.queue(c)
	if err != nil {
		return err
	}
	ctx, cancel := s.storageCtx(c)
	defer cancel()
	var dst *meta.Queue
	if o.has("destination") && !o.isNull("destination") {
		if action == meta.ActionDelete {
			return apierr.Invalid("destination", "must be absent when action is delete")
		}
		ref, _, aerr := o.str("destination")
		if aerr != nil {
			return aerr
		}
		d, err := s.lookupQueue(ctx, src.ProjectID, ref)
		if apierr.CodeOf(err) == apierr.NotFound {
			return apierr.New(apierr.NotFound, "no queue %q in this project", ref).WithPrefix("destination")
		}
		if err != nil {
			return err
		}
		dst = &d
	}
	t, err := s.StartMoveTask(ctx, src, MoveTaskRequest{Destination: dst, Filter: f, Rate: int(rate), DryRun: dry, Action: action})
	if err != nil {
		return err
	}
	if t.Status == meta.MoveCompleted { // a dry run counted whole in the request
		return c.JSON(http.StatusOK, moveTaskOut(t))
	}
	return c.JSON(http.StatusCreated, moveTaskOut(t))
}

// moveAction reads the optional "action" field: "move" (default) or "delete".
func moveAction(o *object) (string, *apierr.Error) {
	if !o.has("action") || o.isNull("action") {
		return meta.ActionMove, nil
	}
	a, _, aerr := o.str("action")
	if aerr != nil {
		return "", aerr
	}
	if a != meta.ActionMove && a != meta.ActionDelete {
		return "", apierr.Invalid("action", "must be move or delete")
	}
	return a, nil
}

// StartMoveTask starts a move task of src (docs/redrive.md) as req asks: it is stored running, and
// the runner counts toMove, then moves; a dry run is a task too, which ends once counted. It
// is the /v1 route's and the SQS door's StartMessageMoveTask.
func (s *Server) StartMoveTask(ctx context.Context, src meta.Queue, req MoveTaskRequest) (meta.MoveTask, error) {
	if s.cfg.MoveTasks == nil {
		return meta.MoveTask{}, apierr.New(apierr.Unavailable, "move tasks are not served here")
	}
	now := s.cfg.Clock.Now().UTC().Truncate(time.Millisecond)
	t := meta.MoveTask{ID: ids.New(), ProjectID: src.ProjectID, QueueID: src.ID, Filter: req.Filter.Encode(),
		MaxPerSecond: req.Rate, Status: meta.MoveRunning, StartedAt: now, Action: req.Action,
		DryRun: req.DryRun, Counting: true}
	if req.Destination != nil {
		t.Destination = req.Destination.ID
	}
	// The destination is checked now (a few lookups), and one batch of the source is counted
	// (at most engine.MaxMoveBatch messages, engine.MaxMoveBatchBytes read): a queue that
	// small has its exact toMove at once and a dry run its answer (not stored, like before);
	// a larger one is counted on by the runner from there (Counting), so the request costs
	// the same whatever the queue holds.
	ch, err := movetask.NewChooser(ctx, t, src, s.cfg.Meta)
	if err != nil {
		return t, err
	}
	matched, failed, next, err := movetask.CountBatch(ctx, s.cfg.Engine, t, ch, src.Engine(nil), engine.MaxMoveBatch)
	if err != nil {
		return t, err
	}
	t.ToMove, t.Failed, t.Cursor = int64(matched), int64(failed), next
	if next == "" {
		t.Counting = false
		if req.DryRun {
			t.Status, t.FinishedAt = meta.MoveCompleted, now
			return t, nil
		}
		t.Failed = 0 // counted again as the moves meet them
	}
	if err := s.cfg.MoveTasks.CreateMoveTask(ctx, t); err != nil {
		if apierr.CodeOf(err) == apierr.MoveTaskRunning {
			return t, apierr.New(apierr.MoveTaskRunning, "queue %q has a running move task; cancel it or wait for its end", src.Name)
		}
		return t, err
	}
	t.Version = 1
	if s.cfg.MoveRunner != nil {
		s.cfg.MoveRunner.Kick()
	}
	return t, nil
}

// ListMoveTasks lists src's move tasks, newest first.
func (s *Server) ListMoveTasks(ctx context.Context, src meta.Queue, page meta.Page) ([]meta.MoveTask, string, error) {
	if s.cfg.MoveTasks == nil {
		return nil, "", apierr.New(apierr.Unavailable, "move tasks are not served here")
	}
	return s.cfg.MoveTasks.ListMoveTasks(ctx, src.ID, page)
}

// listMoveTasks is GET /v1/queues/{queue}/move-tasks, newest first.
func (s *Server) listMoveTasks(c echo.Context) error {
	page, err := pageParams(c, defaultMoveList, meta.MaxLimit)
	if err != nil {
		return err
	}
	q, err := s.queue(c)
	if err != nil {
		return err
	}
	ctx, cancel := s.storageCtx(c)
	defer cancel()
	ts, next, err := s.ListMoveTasks(ctx, q, page)
	if err != nil {
		return err
	}
	out := make([]moveTaskJSON, len(ts))
	for i, t := range ts {
		out[i] = moveTaskOut(t)
	}
	return c.JSON(http.StatusOK, map[string]any{"moveTasks": out, "nextCursor": cursorOut(next)})
}

// moveTask resolves {queue} and {task}.
func (s *Server) moveTask(c echo.Context) (meta.MoveTask, error) {
	q, err := s.queue(c)
	if err != nil {
		return meta.MoveTask{}, err
	}
	id, perr := ids.ParseUUID(c.Param("task"))
	if perr != nil {
		return meta.MoveTask{}, apierr.New(apierr.NotFound, "no move task %q on queue %q", c.Param("task"), q.Name)
	}
	ctx, cancel := s.storageCtx(c)
	defer cancel()
	t, err := s.cfg.MoveTasks.GetMoveTask(ctx, q.ID, id)
	if apierr.CodeOf(err) == apierr.NotFound {
		return t, apierr.New(apierr.NotFound, "no move task %q on queue %q", c.Param("task"), q.Name)
	}
	return t, err
}

// getMoveTask is GET /v1/queues/{queue}/move-tasks/{task}.
func (s *Server) getMoveTask(c echo.Context) error {
	t, err := s.moveTask(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, moveTaskOut(t))
}

// cancelMoveTask is POST /v1/queues/{queue}/move-tasks/{task}/cancel: a running task stops
// (the runner sees it at its next batch; what it moved stays moved); cancelling a finished
// task answers it unchanged.
func (s *Server) cancelMoveTask(c echo.Context) error {
	t, err := s.moveTask(c)
	if err != nil {
		return err
	}
	ctx, cancel := s.storageCtx(c)
	defer cancel()
	up, err := s.CancelMoveTask(ctx, t)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, moveTaskOut(up))
}

// CancelMoveTask stops a running task (the runner sees it at its next batch); a finished one
// is answered as it is.
func (s *Server) CancelMoveTask(ctx context.Context, t meta.MoveTask) (meta.MoveTask, error) {
	for range 10 {
		if t.Status != meta.MoveRunning {
			return t, nil
		}
		t.Status, t.FinishedAt = meta.MoveCancelled, s.cfg.Clock.Now().UTC().Truncate(time.Millisecond)
		up, err := s.cfg.MoveTasks.UpdateMoveTask(ctx, t)
		if err == nil {
			return up, nil
		}
		if !errors.Is(err, meta.ErrMoveTaskConflict) {
			return t, err
		}
		if t, err = s.cfg.MoveTasks.GetMoveTask(ctx, t.QueueID, t.ID); err != nil {
			return t, err
		}
	}
	return t, apierr.New(apierr.Unavailable, "the move task keeps changing; retry")
}

// GetMoveTask reads one of src's tasks.
func (s *Server) GetMoveTask(ctx context.Context, src meta.Queue, id ids.ID) (meta.MoveTask, error) {
	if s.cfg.MoveTasks == nil {
		return meta.MoveTask{}, apierr.New(apierr.Unavailable, "move tasks are not served here")
	}
	return s.cfg.MoveTasks.GetMoveTask(ctx, src.ID, id)
}

var _ movetask.Budget = (*Server)(nil)

// Charge is movetask.Budget: a move task's batch takes requests from its project's
// requestsPerSecond and bytes from its sendBytesPerSecond (in pieces no larger than the
// rate), waiting while either has no room, so a move costs its project what sends of the
// same bytes would and neighbours keep their share. The budgets fail open, as for calls.
// false: ctx ended first, or the project's limits cannot be read (the runner lets its lease
// lapse and a later scan retries the batch).
func (s *Server) Charge(ctx context.Context, project ids.ID, requests int, bytes int64) bool {
	if s.cfg.Limiter == nil || s.cfg.Tenancy == nil {
		return ctx.Err() == nil
	}
	lim, err := s.effectiveLimits(ctx, project)
	if err != nil {
		return false
	}
	for range requests {
		if !s.takeWaiting(ctx, func() (time.Duration, error) {
			return s.cfg.Limiter.Allow(ctx, tenancy.RateKey(project), int(lim.RequestsPerSecond))
		}) {
			return false
		}
	}
	bl, ok := s.cfg.Limiter.(ByteLimiter)
	for rate := lim.SendBytesPerSecond; ok && rate > 0 && bytes > 0; {
		n := min(bytes, rate)
		if !s.takeWaiting(ctx, func() (time.Duration, error) {
			return bl.AllowN(ctx, tenancy.ByteRateKey(project), int(rate), int(n))
		}) {
			return false
		}
		bytes -= n
	}
	return ctx.Err() == nil
}

// takeWaiting calls take until it answers no wait (or fails: the budget fails open),
// sleeping each wait; false: ctx ended first.
func (s *Server) takeWaiting(ctx context.Context, take func() (time.Duration, error)) bool {
	for {
		wait, err := take()
		if err != nil {
			s.warnLimiter(err)
			return ctx.Err() == nil
		}
		if wait <= 0 {
			return true
		}
		if !sleepCtx(ctx, wait) {
			return false
		}
	}
}
