package api

import (
	"context"
	"encoding/json"
	"errors"
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
)

// Bindings: a queue's sources (docs/topics.md). The stored binding (filter, from)
// is in Config.Topics, its fan-out state (cursor, counts, last refusal) beside the topic's
// log in Config.TopicEngine; answers merge the two.

type failureJSON struct {
	Reason string `json:"reason"`
	At     string `json:"at"`
}

type bindingJSON struct {
	ID            string          `json:"id"`
	Slug          string          `json:"slug"`
	QueueID       string          `json:"queueId"`
	Queue         string          `json:"queue"`
	TopicID       string          `json:"topicId"`
	Topic         string          `json:"topic"`
	Filter        json.RawMessage `json:"filter"`
	From          string          `json:"from"`
	StartSequence uint64          `json:"startSequence"`
	Sequence      uint64          `json:"sequence"`
	Lag           uint64          `json:"lag"`
	Copied        int64           `json:"copied"`
	Failed        int64           `json:"failed"`
	LastFailure   *failureJSON    `json:"lastFailure"`
	CreatedAt     string          `json:"createdAt"`
	UpdatedAt     string          `json:"updatedAt"`
}

// bindingOut merges a stored binding with its fan-out state (st nil: none yet, as just
// after the bind) and the topic's last sequence.
func bindingOut(b meta.Binding, queue, topic string, st *engine.Binding, last uint64) bindingJSON {
	out := bindingJSON{
		ID: b.ID.String(), Slug: b.ID.Slug(ids.BindingPrefix), QueueID: b.QueueID.String(), Queue: queue,
		TopicID: b.TopicID.String(), Topic: topic, Filter: json.RawMessage("null"), From: b.From,
		StartSequence: b.StartSequence, Sequence: max(b.StartSequence, 1) - 1,
		CreatedAt: formatTime(b.CreatedAt), UpdatedAt: formatTime(b.UpdatedAt),
	}
	if b.Filter != "" {
		out.Filter = json.RawMessage(b.Filter)
	}
	if st != nil {
		out.Sequence, out.Copied, out.Failed = st.Sequence, st.Copied, st.Failed
		if st.LastError != "" {
			out.LastFailure = &failureJSON{Reason: st.LastError, At: formatTime(st.LastErrorAt)}
		}
	}
	if last > out.Sequence {
		out.Lag = last - out.Sequence
	}
	return out
}

// filterJSON is the stored form of a binding's filter ("" for none).
func filterJSON(f *filter.Filter) string {
	if f.Empty() {
		return ""
	}
	b, _ := json.Marshal(map[string]any{"attributes": f.Attributes}) // strings only: cannot fail
	return string(b)
}

// bindingFrom is a create's "from": where the binding starts, as asked.
type bindingFrom struct {
	asked string // "now", "earliest", a decimal sequence or an RFC 3339 time
	seq   uint64 // a sequence (0: not one)
	at    time.Time
}

// parseFrom reads a binding's "from": "now" (absent too), "earliest", a sequence (a JSON
// number or a decimal string, at least 1) or an RFC 3339 time.
func parseFrom(o *object) (bindingFrom, *apierr.Error) {
	raw, ok := o.fields["from"]
	if !ok || o.isNull("from") {
		return bindingFrom{asked: "now"}, nil
	}
	const why = "must be \"now\", \"earliest\", a sequence (1 or more) or an RFC 3339 time"
	if t := strings.TrimSpace(string(raw)); t != "" && t[0] != '"' {
		n, err := parseInteger(raw, o.path("from"), 1, 1<<53)
		if err != nil {
			return bindingFrom{}, apierr.Invalid(o.path("from"), why)
		}
		return bindingFrom{asked: strconv.FormatInt(n, 10), seq: uint64(n)}, nil
	}
	v, _, err := o.str("from")
	if err != nil {
		return bindingFrom{}, err
	}
	switch v {
	case "now", "earliest":
		return bindingFrom{asked: v}, nil
	}
	if seq, ok := parseSequence(v); ok && seq <= 1<<53 {
		return bindingFrom{asked: strconv.FormatUint(seq, 10), seq: seq}, nil
	}
	if at, perr := time.Parse(time.RFC3339Nano, v); perr == nil {
		return bindingFrom{asked: v, at: at}, nil
	}
	return bindingFrom{}, apierr.Invalid(o.path("from"), why)
}

// parseSequence reads a decimal sequence of 1 or more.
func parseSequence(v string) (uint64, bool) {
	if v == "" || v[0] < '0' || v[0] > '9' {
		return 0, false
	}
	n, err := strconv.ParseUint(v, 10, 64)
	return n, err == nil && n >= 1
}

// startSequence is the first sequence a binding starting at f takes.
func (s *Server) startSequence(ctx context.Context, et engine.Topic, f bindingFrom) (uint64, error) {
	if !f.at.IsZero() {
		return s.cfg.TopicEngine.SequenceAt(ctx, et, f.at)
	}
	b, err := s.cfg.TopicEngine.Bounds(ctx, et)
	switch {
	case err != nil:
		return 0, err
	case f.seq > b.Last+1:
		// A bookmark past the log's end names nothing published yet: a typo, or another
		// topic's sequence. The topic stream refuses it the same way.
		return 0, apierr.Invalid("from", "sequence %d is past the topic's next sequence %d", f.seq, b.Last+1)
	case f.seq > 0:
		return f.seq, nil
	case f.asked == "earliest":
		return b.First, nil
	}
	return b.Last + 1, nil
}

// parseNewBinding reads POST /v1/queues/{queue}/sources's body.
func parseNewBinding(data []byte) (ref string, f *filter.Filter, from bindingFrom, err error) {
	o, aerr := parseObject(data, "", false, "topic", "filter", "from")
	if aerr != nil {
		return "", nil, from, aerr
	}
	ref, ok, aerr := o.str("topic")
	if aerr != nil {
		return "", nil, from, aerr
	}
	if !ok || ref == "" {
		return "", nil, from, apierr.Invalid("topic", "is required: the topic's id, slug or name")
	}
	if f, err = filterOfBody(o); err != nil {
		return "", nil, from, err
	}
	if from, aerr = parseFrom(o); aerr != nil {
		return "", nil, from, aerr
	}
	return ref, f, from, nil
}

func (s *Server) createBinding(c echo.Context) error {
	data, err := readBody(c)
	if err != nil {
		return err
	}
	ref, f, from, err := parseNewBinding(data)
	if err != nil {
		return err
	}
	q, err := s.queue(c)
	if err != nil {
		return err
	}
	ctx, cancel := s.storageCtx(c)
	defer cancel()
	t, err := s.lookupTopic(ctx, q.ProjectID, ref, "topic")
	if apierr.CodeOf(err) == apierr.NotFound {
		return apierr.Field(apierr.NotFound, "topic", "no topic %q in this project", ref)
	} else if err != nil {
		return err
	}
	if t.Type != q.Type {
		return apierr.Invalid("topic", "a %s topic binds %s queues only; queue %q is %s", t.Type, t.Type, q.Name, q.Type)
	}
	b, err := s.bind(ctx, q, t, filterJSON(f), from)
	if err != nil {
		return err
	}
	bounds, err := s.cfg.TopicEngine.Bounds(ctx, engineTopic(t))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, bindingOut(b, q.Name, t.Name, nil, bounds.Last))
}

// bind binds queue q to topic t (same project and type, checked by the caller): the
// engine's binding first, so a stored binding always has its cursor; a refused store
// (binding_exists, quota_exceeded) removes it again.
func (s *Server) bind(ctx context.Context, q meta.Queue, t meta.Topic, filterJSON string, from bindingFrom) (meta.Binding, error) {
	et := engineTopic(t)
	start, err := s.startSequence(ctx, et, from)
	if err != nil {
		return meta.Binding{}, err
	}
	now := s.cfg.Clock.Now().UTC().Truncate(time.Millisecond)
	b := meta.Binding{ID: ids.New(), ProjectID: q.ProjectID, QueueID: q.ID, TopicID: t.ID, Filter: filterJSON,
		From: from.asked, StartSequence: start, CreatedAt: now, UpdatedAt: now}
	if err := s.cfg.TopicEngine.Bind(ctx, et, engine.Binding{ID: b.ID, Queue: q.ID, Filter: filterJSON, Sequence: start - 1}); err != nil {
		return b, err
	}
	if err := s.cfg.Topics.CreateBinding(ctx, b); err != nil {
		if uerr := s.cfg.TopicEngine.Unbind(ctx, et, b.ID, q.ID); uerr != nil {
			s.cfg.Logger.Warn("unbinding a refused binding", "binding", b.ID.String(), "err", uerr)
		}
		if apierr.CodeOf(err) == apierr.BindingExists {
			return b, apierr.Field(apierr.BindingExists, "topic", "queue %q is bound to topic %q already; change that binding's filter instead", q.Name, t.Name)
		}
		return b, err
	}
	return b, nil
}

// bindingRef reads the path's {binding}: its id or qbd_ slug.
func bindingRef(c echo.Context) (ids.ID, error) {
	id, err := ids.Parse(ids.BindingPrefix, c.Param("binding"))
	if err != nil {
		return id, apierr.Invalid("binding", "must be a binding id or qbd_ slug")
	}
	return id, nil
}

// sourceOf reads the path's queue and binding.
func (s *Server) sourceOf(c echo.Context) (meta.Queue, meta.Binding, error) {
	id, err := bindingRef(c)
	if err != nil {
		return meta.Queue{}, meta.Binding{}, err
	}
	q, err := s.queue(c)
	if err != nil {
		return q, meta.Binding{}, err
	}
	ctx, cancel := s.storageCtx(c)
	defer cancel()
	b, err := s.cfg.Topics.GetBinding(ctx, q.ID, id)
	if apierr.CodeOf(err) == apierr.NotFound {
		return q, b, apierr.New(apierr.NotFound, "queue %q has no source %q", q.Name, c.Param("binding"))
	}
	return q, b, err
}

// bindingsOut answers stored bindings merged with their fan-out state, naming each queue
// (queueName) and topic (topicOf) by name. Bindings whose topic or queue is gone (a delete
// under way) are left out.
func (s *Server) bindingsOut(ctx context.Context, bs []meta.Binding, queueName func(ids.ID) (string, error), topicOf func(ids.ID) (meta.Topic, error)) ([]bindingJSON, error) {
	topics := map[ids.ID]*topicState{}
	out := make([]bindingJSON, 0, len(bs))
	for _, b := range bs {
		ts, ok := topics[b.TopicID]
		if !ok {
			t, err := topicOf(b.TopicID)
			if apierr.CodeOf(err) == apierr.NotFound {
				continue
			} else if err != nil {
				return nil, err
			}
			if ts, err = s.topicState(ctx, t); err != nil {
				return nil, err
			}
			topics[b.TopicID] = ts
		}
		qn, err := queueName(b.QueueID)
		if apierr.CodeOf(err) == apierr.NotFound {
			continue
		} else if err != nil {
			return nil, err
		}
		out = append(out, bindingOut(b, qn, ts.t.Name, ts.states[b.ID], ts.last))
	}
	return out, nil
}

// topicState is a topic with its last sequence and its bindings' fan-out state.
type topicState struct {
	t      meta.Topic
	last   uint64
	states map[ids.ID]*engine.Binding
}

func (s *Server) topicState(ctx context.Context, t meta.Topic) (*topicState, error) {
	et := engineTopic(t)
	b, err := s.cfg.TopicEngine.Bounds(ctx, et)
	if err != nil {
		return nil, err
	}
	ebs, err := s.cfg.TopicEngine.Bindings(ctx, et)
	if err != nil {
		return nil, err
	}
	ts := &topicState{t: t, last: b.Last, states: make(map[ids.ID]*engine.Binding, len(ebs))}
	for i := range ebs {
		ts.states[ebs[i].ID] = &ebs[i]
	}
	return ts, nil
}

// sourcesOut answers a queue's bindings.
func (s *Server) sourcesOut(ctx context.Context, q meta.Queue, bs []meta.Binding) ([]bindingJSON, error) {
	return s.bindingsOut(ctx, bs,
		func(ids.ID) (string, error) { return q.Name, nil },
		func(id ids.ID) (meta.Topic, error) { return s.cfg.Topics.GetTopic(ctx, q.ProjectID, id) })
}

func (s *Server) queueBindings(c echo.Context) error {
	q, err := s.queue(c)
	if err != nil {
		return err
	}
	ctx, cancel := s.storageCtx(c)
	defer cancel()
	bs, err := s.cfg.Topics.QueueBindings(ctx, q.ID)
	if err != nil {
		return err
	}
	out, err := s.sourcesOut(ctx, q, bs)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"sources": out, "nextCursor": nil})
}

func (s *Server) topicBindings(c echo.Context) error {
	t, err := s.topic(c)
	if err != nil {
		return err
	}
	ctx, cancel := s.storageCtx(c)
	defer cancel()
	bs, err := s.cfg.Topics.TopicBindings(ctx, t.ID)
	if err != nil {
		return err
	}
	out, err := s.bindingsOut(ctx, bs,
		func(id ids.ID) (string, error) {
			q, err := s.cfg.Meta.GetQueue(ctx, t.ProjectID, id)
			return q.Name, err
		},
		func(ids.ID) (meta.Topic, error) { return t, nil })
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"bindings": out, "nextCursor": nil})
}

// answerSource answers one binding of queue q.
func (s *Server) answerSource(c echo.Context, ctx context.Context, q meta.Queue, b meta.Binding) error {
	out, err := s.sourcesOut(ctx, q, []meta.Binding{b})
	if err != nil {
		return err
	}
	if len(out) == 0 {
		return apierr.New(apierr.NotFound, "queue %q has no source %q", q.Name, c.Param("binding"))
	}
	return c.JSON(http.StatusOK, out[0])
}

func (s *Server) getBinding(c echo.Context) error {
	q, b, err := s.sourceOf(c)
	if err != nil {
		return err
	}
	ctx, cancel := s.storageCtx(c)
	defer cancel()
	return s.answerSource(c, ctx, q, b)
}

// parseFilterPatch reads PATCH …/sources/{binding}'s body: {"filter": <filter> | null}.
func parseFilterPatch(data []byte) (*filter.Filter, error) {
	o, aerr := parseObject(data, "", false, "filter")
	if aerr != nil {
		return nil, aerr
	}
	if !o.has("filter") {
		return nil, apierr.Invalid("filter", "is required: a filter object, or null to remove the filter")
	}
	return filterOfBody(o)
}

func (s *Server) updateBinding(c echo.Context) error {
	data, err := readBody(c)
	if err != nil {
		return err
	}
	f, err := parseFilterPatch(data)
	if err != nil {
		return err
	}
	q, b, err := s.sourceOf(c)
	if err != nil {
		return err
	}
	ctx, cancel := s.storageCtx(c)
	defer cancel()
	out, err := s.SetBindingFilter(ctx, b, filterJSON(f))
	if err != nil {
		return err
	}
	return s.answerSource(c, ctx, q, out)
}

// SetBindingFilter replaces a binding's filter: the engine's first, so the answer comes only
// once the fan-out judges later publishes by it, then the stored one (re-read and written
// again when another writer got there first).
func (s *Server) SetBindingFilter(ctx context.Context, b meta.Binding, filterJSON string) (meta.Binding, error) {
	t, err := s.cfg.Topics.GetTopic(ctx, b.ProjectID, b.TopicID)
	if err != nil {
		return b, err
	}
	if err := s.cfg.TopicEngine.SetFilter(ctx, engineTopic(t), b.ID, filterJSON); err != nil {
		return b, err
	}
	for attempt := 0; ; attempt++ {
		cur, err := s.cfg.Topics.GetBinding(ctx, b.QueueID, b.ID)
		if err != nil {
			return cur, err
		}
		cur.Filter = filterJSON
		cur.UpdatedAt = s.cfg.Clock.Now().UTC().Truncate(time.Millisecond)
		out, err := s.cfg.Topics.UpdateBinding(ctx, cur)
		if errors.Is(err, meta.ErrBindingConflict) && attempt < 5 {
			continue
		}
		return out, err
	}
}

func (s *Server) deleteBinding(c echo.Context) error {
	q, b, err := s.sourceOf(c)
	if err != nil {
		return err
	}
	ctx, cancel := s.storageCtx(c)
	defer cancel()
	if _, err := s.cfg.Topics.DeleteBinding(ctx, q.ID, b.ID); err != nil {
		return err
	}
	s.unbind(ctx, q.ProjectID, b)
	return c.NoContent(http.StatusNoContent)
}
