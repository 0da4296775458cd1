package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/filter"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/movetask"
)

// Replays (docs/topics.md#replay): a replay is a move task whose source is a
// topic's log (meta.MoveTask with TopicID), stored and listed under the topic and run by the
// replicas' movetask.Runner; it holds its destination queue while it runs (one running task
// per queue: 409 move_task_running) and counts in the project's running move tasks.

// replayRoutes registers the replay routes (with the topic routes, when move tasks are kept).
func (s *Server) replayRoutes(v1 *echo.Group, admin, read echo.MiddlewareFunc) {
	v1.POST("/topics/:topic/replays", s.startReplay, admin)
	v1.GET("/topics/:topic/replays", s.listReplays, read)
	v1.GET("/topics/:topic/replays/:replay", s.getReplay, read)
	v1.POST("/topics/:topic/replays/:replay/cancel", s.cancelReplay, admin)
}

type replayJSON struct {
	ID                   string          `json:"id"`
	TopicID              string          `json:"topicId"`
	Topic                string          `json:"topic"`
	QueueID              string          `json:"queueId"`
	Queue                *string         `json:"queue"` // null once the queue is deleted
	From                 uint64          `json:"from"`
	To                   uint64          `json:"to"`
	Filter               json.RawMessage `json:"filter"`
	Status               string          `json:"status"`
	Moved                int64           `json:"moved"`
	ToMove               int64           `json:"toMove"`
	Failed               int64           `json:"failed"`
	MaxMessagesPerSecond int             `json:"maxMessagesPerSecond"`
	DryRun               bool            `json:"dryRun"`
	StartedAt            string          `json:"startedAt"`
	FinishedAt           *string         `json:"finishedAt"`
	Error                string          `json:"error,omitempty"`
}

// replayOut is a replay's answer; queue is the destination's name ("" once deleted).
func replayOut(t meta.MoveTask, topic meta.Topic, queue string) replayJSON {
	out := replayJSON{
		ID: t.ID.String(), TopicID: t.TopicID.String(), Topic: topic.Name, QueueID: t.Destination.String(),
		From: t.FromSequence, To: t.ToSequence, Filter: json.RawMessage("null"), Status: t.Status,
		Moved: t.Moved, ToMove: t.ToMove, Failed: t.Failed, MaxMessagesPerSecond: t.MaxPerSecond, DryRun: t.DryRun,
		StartedAt: formatTime(t.StartedAt), Error: t.Error,
	}
	if queue != "" {
		out.Queue = &queue
	}
	if t.Filter != "" {
		out.Filter = json.RawMessage(t.Filter)
	}
	if !t.FinishedAt.IsZero() {
		f := formatTime(t.FinishedAt)
		out.FinishedAt = &f
	}
	return out
}

// replayBound is a replay's from or to: a sequence, or an RFC 3339 time.
type replayBound struct {
	seq uint64
	at  time.Time
	set bool
}

// parseReplayBound reads from or to: a sequence (a JSON number or a decimal string, 1 or
// more) or an RFC 3339 time.
func parseReplayBound(o *object, name string) (replayBound, *apierr.Error) {
	raw, ok := o.fields[name]
	if !ok || o.isNull(name) {
		return replayBound{}, nil
	}
	const why = "must be a sequence (1 or more, a number or a decimal string) or an RFC 3339 time"
	if t := strings.TrimSpace(string(raw)); t != "" && t[0] != '"' {
		n, err := parseInteger(raw, o.path(name), 1, 1<<53)
		if err != nil {
			return replayBound{}, apierr.Invalid(o.path(name), why)
		}
		return replayBound{seq: uint64(n), set: true}, nil
	}
	v, _, err := o.str(name)
	if err != nil {
		return replayBound{}, err
	}
	if seq, ok := parseSequence(v); ok {
		return replayBound{seq: seq, set: true}, nil
	}
	if at, perr := time.Parse(time.RFC3339Nano, v); perr == nil {
		return replayBound{at: at, set: true}, nil
	}
	return replayBound{}, apierr.Invalid(o.path(name), why)
}

// replayRequest is a parsed POST /v1/topics/{topic}/replays.
type replayRequest struct {
	queue    string
	from, to replayBound
	flt      *filter.Filter
	rate     int
	dryRun   bool
}

func parseReplayRequest(data []byte) (replayRequest, error) {
	var r replayRequest
	o, aerr := parseObject(data, "", false, "queue", "from", "to", "filter", "maxMessagesPerSecond", "dryRun")
	if aerr != nil {
		return r, aerr
	}
	q, ok, aerr := o.str("queue")
	if aerr != nil {
		return r, aerr
	}
	if !ok || q == "" {
		return r, apierr.Invalid("queue", "is required: the destination queue's id or name")
	}
	r.queue = q
	if r.from, aerr = parseReplayBound(o, "from"); aerr != nil {
		return r, aerr
	}
	if !r.from.set {
		return r, apierr.Invalid("from", "is required: a sequence or an RFC 3339 time")
	}
	if r.to, aerr = parseReplayBound(o, "to"); aerr != nil {
		return r, aerr
	}
	rate, ok, aerr := o.integer("maxMessagesPerSecond", 1, maxMoveRate)
	if aerr != nil {
		return r, aerr
	}
	if r.rate = int(rate); !ok {
		r.rate = defaultMoveRate
	}
	if r.dryRun, _, aerr = o.boolean("dryRun"); aerr != nil {
		return r, aerr
	}
	var err error
	r.flt, err = filterOfBody(o)
	return r, err
}

// replayRange resolves a request's bounds against the log: from a time is the first entry
// published at or after it, to a time the last published at or before it, an absent to the
// log's last sequence now.
func (s *Server) replayRange(ctx context.Context, et engine.Topic, r replayRequest) (from, to uint64, err error) {
	from, to = r.from.seq, r.to.seq
	if !r.from.at.IsZero() {
		if from, err = s.cfg.TopicEngine.SequenceAt(ctx, et, r.from.at); err != nil {
			return 0, 0, err
		}
	}
	switch {
	case !r.to.set:
		b, err := s.cfg.TopicEngine.Bounds(ctx, et)
		if err != nil {
			return 0, 0, err
		}
		to = b.Last
		if to < from {
			return 0, 0, apierr.Invalid("from", "is after the log's last sequence (%d): nothing to replay", b.Last)
		}
	case !r.to.at.IsZero():
		next, err := s.cfg.TopicEngine.SequenceAt(ctx, et, r.to.at.Add(time.Nanosecond))
		if err != nil {
			return 0, 0, err
		}
		to = next - 1
	}
	if to < from {
		return 0, 0, apierr.Invalid("to", "must not be before from (the range %d..%d is empty)", from, to)
	}
	return from, to, nil
}

// startReplay is POST /v1/topics/{topic}/replays.
func (s *Server) startReplay(c echo.Context) error {
	data, err := readBody(c)
	if err != nil {
		return err
	}
	req, err := parseReplayRequest(data)
	if err != nil {
		return err
	}
	tp, err := s.topic(c)
	if err != nil {
		return err
	}
	ctx, cancel := s.storageCtx(c)
	defer cancel()
	q, err := s.lookupQueue(ctx, tp.ProjectID, req.queue)
	if apierr.CodeOf(err) == apierr.NotFound {
		return apierr.New(apierr.NotFound, "no queue %q in this project", req.queue).WithPrefix("queue")
	}
	if err != nil {
		return err
	}
	if q.Type != tp.Type {
		return apierr.Invalid("queue", "must be a %s queue like the topic", tp.Type)
	}
	t, err := s.StartReplay(ctx, tp, q, req)
	if err != nil {
		return err
	}
	status := http.StatusCreated
	if t.Status == meta.MoveCompleted { // a dry run counted whole in the request
		status = http.StatusOK
	}
	return c.JSON(status, replayOut(t, tp, q.Name))
}

// StartReplay starts a replay of tp's log into q as req asks. One log read is counted in the
// request (engine.MaxLogRead entries at most): a range that small has its toMove at once, and
// a dry run of it its answer, not stored (as a move task's); a larger one is counted on by
// the runner.
func (s *Server) StartReplay(ctx context.Context, tp meta.Topic, q meta.Queue, req replayRequest) (meta.MoveTask, error) {
	et := movetask.EngineTopic(tp)
	from, to, err := s.replayRange(ctx, et, req)
	if err != nil {
		return meta.MoveTask{}, err
	}
	now := s.cfg.Clock.Now().UTC().Truncate(time.Millisecond)
	t := meta.MoveTask{ID: ids.New(), ProjectID: tp.ProjectID, QueueID: tp.ID, TopicID: tp.ID, Destination: q.ID,
		FromSequence: from, ToSequence: to, Filter: filterJSON(req.flt), MaxPerSecond: req.rate, Status: meta.MoveRunning,
		StartedAt: now, Action: meta.ActionMove, DryRun: req.dryRun, Counting: true}
	matched, next, done, err := movetask.CountReplayBatch(ctx, s.cfg.TopicEngine, et, t, req.flt)
	if err != nil {
		return t, err
	}
	t.ToMove = matched
	if done {
		t.Counting = false
		if req.dryRun {
			t.Status, t.FinishedAt = meta.MoveCompleted, now
			return t, nil
		}
	} else {
		t.Cursor = strconv.FormatUint(next, 10)
	}
	if err := s.cfg.MoveTasks.CreateMoveTask(ctx, t); err != nil {
		if apierr.CodeOf(err) == apierr.MoveTaskRunning {
			return t, apierr.New(apierr.MoveTaskRunning, "queue %q has a running move task or replay; cancel it or wait for its end", q.Name)
		}
		return t, err
	}
	t.Version = 1
	if s.cfg.MoveRunner != nil {
		s.cfg.MoveRunner.Kick()
	}
	return t, nil
}

// replayQueueName is the name of a replay's destination ("" once deleted).
func (s *Server) replayQueueName(ctx context.Context, t meta.MoveTask) (string, error) {
	q, err := s.cfg.Meta.GetQueueByID(ctx, t.Destination)
	switch {
	case apierr.CodeOf(err) == apierr.NotFound || (err == nil && q.ProjectID != t.ProjectID):
		return "", nil
	case err != nil:
		return "", err
	}
	return q.Name, nil
}

// listReplays is GET /v1/topics/{topic}/replays, newest first.
func (s *Server) listReplays(c echo.Context) error {
	page, err := pageParams(c, defaultMoveList, meta.MaxLimit)
	if err != nil {
		return err
	}
	tp, err := s.topic(c)
	if err != nil {
		return err
	}
	ctx, cancel := s.storageCtx(c)
	defer cancel()
	ts, next, err := s.cfg.MoveTasks.ListMoveTasks(ctx, tp.ID, page)
	if err != nil {
		return err
	}
	out := make([]replayJSON, 0, len(ts))
	for _, t := range ts {
		name, err := s.replayQueueName(ctx, t)
		if err != nil {
			return err
		}
		out = append(out, replayOut(t, tp, name))
	}
	return c.JSON(http.StatusOK, map[string]any{"replays": out, "nextCursor": cursorOut(next)})
}

// replay resolves {topic} and {replay}.
func (s *Server) replay(c echo.Context) (meta.Topic, meta.MoveTask, error) {
	tp, err := s.topic(c)
	if err != nil {
		return tp, meta.MoveTask{}, err
	}
	missing := apierr.New(apierr.NotFound, "no replay %q of topic %q", c.Param("replay"), tp.Name)
	id, perr := ids.ParseUUID(c.Param("replay"))
	if perr != nil {
		return tp, meta.MoveTask{}, missing
	}
	ctx, cancel := s.storageCtx(c)
	defer cancel()
	t, err := s.cfg.MoveTasks.GetMoveTask(ctx, tp.ID, id)
	if apierr.CodeOf(err) == apierr.NotFound || (err == nil && !t.IsReplay()) {
		return tp, t, missing
	}
	return tp, t, err
}

// answerReplay answers t with its destination's name.
func (s *Server) answerReplay(c echo.Context, tp meta.Topic, t meta.MoveTask) error {
	ctx, cancel := s.storageCtx(c)
	defer cancel()
	name, err := s.replayQueueName(ctx, t)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, replayOut(t, tp, name))
}

// getReplay is GET /v1/topics/{topic}/replays/{replay}.
func (s *Server) getReplay(c echo.Context) error {
	tp, t, err := s.replay(c)
	if err != nil {
		return err
	}
	return s.answerReplay(c, tp, t)
}

// cancelReplay is POST /v1/topics/{topic}/replays/{replay}/cancel: a running replay stops
// after the batch in transit (what it sent stays); a finished one is answered unchanged.
func (s *Server) cancelReplay(c echo.Context) error {
	tp, t, err := s.replay(c)
	if err != nil {
		return err
	}
	ctx, cancel := s.storageCtx(c)
	defer cancel()
	up, err := s.CancelMoveTask(ctx, t)
	if err != nil {
		return err
	}
	return s.answerReplay(c, tp, up)
}
