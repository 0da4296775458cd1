package api

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/auth"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
)

// Topics (docs/topics.md): a topic's settings live in Config.Topics (through the
// metadata cache, so a publish does not read the store), its log, keyed state and binding
// cursors in Config.TopicEngine.

// topicRoutes registers the /v1 routes of topics and queue sources.
func (s *Server) topicRoutes(v1 *echo.Group, admin, read echo.MiddlewareFunc) {
	v1.POST("/topics", s.createTopic, admin)
	v1.GET("/topics", s.listTopics, read)
	v1.GET("/topics/:topic", s.getTopic, read)
	v1.PATCH("/topics/:topic", s.updateTopic, admin)
	v1.DELETE("/topics/:topic", s.deleteTopic, admin)
	v1.POST("/topics/:topic/messages", s.publish, s.require(auth.ScopeMessagesSend))
	v1.GET("/topics/:topic/messages", s.readLog, read)
	v1.GET("/topics/:topic/state", s.readState, read)
	v1.GET("/topics/:topic/bindings", s.topicBindings, read)
	v1.GET("/topics/:topic/stream", s.topicStream, s.require(auth.ScopeMessagesReceive)) // topicstream.go
	v1.POST("/queues/:queue/sources", s.createBinding, admin)
	v1.GET("/queues/:queue/sources", s.queueBindings, read)
	v1.GET("/queues/:queue/sources/:binding", s.getBinding, read)
	v1.PATCH("/queues/:queue/sources/:binding", s.updateBinding, admin)
	v1.DELETE("/queues/:queue/sources/:binding", s.deleteBinding, admin)
}

type topicJSON struct {
	ID               string `json:"id"`
	Slug             string `json:"slug"`
	Name             string `json:"name"`
	Type             string `json:"type"`
	RetentionSeconds int    `json:"retentionSeconds"`
	CreatedAt        string `json:"createdAt"`
	UpdatedAt        string `json:"updatedAt"`
	FirstSequence    uint64 `json:"firstSequence"`
	LastSequence     uint64 `json:"lastSequence"`
	StoredBytes      int64  `json:"storedBytes"`
	Bindings         int    `json:"bindings"`
}

func topicOut(t meta.Topic, b engine.LogBounds, bindings int) topicJSON {
	return topicJSON{
		ID: t.ID.String(), Slug: t.ID.Slug(ids.TopicPrefix), Name: t.Name, Type: t.Type,
		RetentionSeconds: t.RetentionSeconds, CreatedAt: formatTime(t.CreatedAt), UpdatedAt: formatTime(t.UpdatedAt),
		FirstSequence: b.First, LastSequence: b.Last, StoredBytes: b.Bytes, Bindings: bindings,
	}
}

// lookupTopic resolves a {topic} reference of the caller's project as lookupQueue does a
// queue's: a top_ value is a slug, a UUID-shaped value an id and then a name (a topic's name
// may look like a UUID), anything else a name. Another project's topic is NotFound.
func (s *Server) lookupTopic(ctx context.Context, project ids.ID, ref, field string) (meta.Topic, error) {
	switch {
	case strings.HasPrefix(ref, ids.TopicPrefix):
		id, err := ids.ParseSlug(ids.TopicPrefix, ref)
		if err != nil {
			return meta.Topic{}, apierr.Invalid(field, "malformed topic slug %q", ref)
		}
		return s.cfg.Topics.GetTopic(ctx, project, id)
	case ids.LooksLikeUUID(ref):
		id, _ := ids.ParseUUID(ref)
		t, err := s.cfg.Topics.GetTopic(ctx, project, id)
		if apierr.CodeOf(err) != apierr.NotFound {
			return t, err
		}
		return s.cfg.Topics.GetTopicByName(ctx, project, ref)
	case !looksLikeQueueName(ref):
		return meta.Topic{}, apierr.ErrNotFound
	default:
		return s.cfg.Topics.GetTopicByName(ctx, project, ref)
	}
}

// topic resolves the path's {topic}.
func (s *Server) topic(c echo.Context) (meta.Topic, error) {
	ctx, cancel := s.storageCtx(c)
	defer cancel()
	t, err := s.lookupTopic(ctx, principal(c).ProjectID, c.Param("topic"), "topic")
	if apierr.CodeOf(err) == apierr.NotFound {
		return t, apierr.New(apierr.NotFound, "no topic %q in this project", c.Param("topic"))
	}
	return t, err
}

// ValidateTopicName checks a new topic's name (field "name"): a queue's rules (1 to 80 of
// A-Z, a-z, 0-9, _ and -, a fifo topic's may end in ".fifo"), not starting with "top_".
func ValidateTopicName(name string, fifo bool) *apierr.Error {
	switch {
	case !looksLikeQueueName(name):
		return apierr.Invalid("name", "must be 1 to 80 of A-Z, a-z, 0-9, _ and - (a fifo topic's may end in %q)", FIFOSuffix)
	case strings.HasSuffix(name, FIFOSuffix) && !fifo:
		return apierr.Invalid("name", "only a fifo topic's name may end in %q", FIFOSuffix)
	case strings.HasPrefix(name, ids.TopicPrefix):
		return apierr.Invalid("name", "must not start with %q (it would be read as a topic slug)", ids.TopicPrefix)
	}
	return nil
}

// parseNewTopic reads POST /v1/topics's body.
func (s *Server) parseNewTopic(data []byte, project ids.ID) (meta.Topic, *apierr.Error) {
	o, err := parseObject(data, "", false, "name", "type", "retentionSeconds")
	if err != nil {
		return meta.Topic{}, err
	}
	name, ok, err := o.str("name")
	if err != nil {
		return meta.Topic{}, err
	}
	if !ok {
		return meta.Topic{}, apierr.Invalid("name", "is required")
	}
	typ, ok, err := o.str("type")
	if err != nil {
		return meta.Topic{}, err
	}
	if !ok {
		typ = string(engine.Standard)
	}
	if typ != string(engine.Standard) && typ != string(engine.FIFO) {
		return meta.Topic{}, apierr.Invalid("type", "must be \"standard\" or \"fifo\"")
	}
	if err := ValidateTopicName(name, typ == string(engine.FIFO)); err != nil {
		return meta.Topic{}, err
	}
	ret, ok, err := o.integer("retentionSeconds", 0, meta.MaxTopicRetentionSeconds)
	if err != nil {
		return meta.Topic{}, err
	}
	if !ok {
		ret = meta.DefaultTopicRetentionSeconds
	}
	now := s.cfg.Clock.Now().UTC().Truncate(time.Millisecond)
	return meta.Topic{ID: ids.New(), ProjectID: project, Name: name, Type: typ, RetentionSeconds: int(ret),
		CreatedAt: now, UpdatedAt: now}, nil
}

func (s *Server) createTopic(c echo.Context) error {
	data, err := readBody(c)
	if err != nil {
		return err
	}
	t, aerr := s.parseNewTopic(data, principal(c).ProjectID)
	if aerr != nil {
		return aerr
	}
	ctx, cancel := s.storageCtx(c)
	defer cancel()
	if err := s.CreateTopic(ctx, t); err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, topicOut(t, engine.LogBounds{First: 1}, 0))
}

// CreateTopic stores a new topic (validated): engine storage first, so a topic visible in
// metadata always has its log ready; a refused create frees it. A taken name is TopicExists
// (field "name"); past maxTopics QuotaExceeded.
func (s *Server) CreateTopic(ctx context.Context, t meta.Topic) error {
	max, err := s.topicQuota(ctx, t.ProjectID)
	if err != nil {
		return err
	}
	if err := s.cfg.TopicEngine.CreateTopic(ctx, engineTopic(t)); err != nil {
		return err
	}
	err = s.cfg.Topics.CreateTopicWithin(ctx, t, max)
	if err == nil {
		return nil
	}
	// Nothing refers to the storage made for it.
	if derr := s.cfg.TopicEngine.DeleteTopic(ctx, engineTopic(t)); derr != nil {
		s.cfg.Logger.Warn("freeing a refused topic's storage", "topic", t.ID.String(), "err", derr)
	}
	if apierr.CodeOf(err) == apierr.TopicExists {
		return apierr.Field(apierr.TopicExists, "name", "a topic named %q already exists in this project", t.Name)
	}
	return err
}

// topicQuota is the project's maxTopics as CreateTopicWithin takes it (0: no limit, when
// the server keeps no limits), read afresh as every create's limits are. A project already
// at it is refused here, before the engine does any work (the create's conditional write is
// what guarantees the limit).
func (s *Server) topicQuota(ctx context.Context, project ids.ID) (int64, error) {
	if s.cfg.Tenancy == nil {
		return 0, nil
	}
	lim, err := s.currentLimits(ctx, project)
	if err != nil {
		return 0, err
	}
	if lim.MaxTopics == 0 {
		return 0, apierr.Quota(meta.LimitMaxTopics, 0, "this project may not create topics")
	}
	counts, err := s.cfg.Tenancy.Counts(ctx, project)
	if err != nil {
		return 0, err
	}
	if counts.Topics >= lim.MaxTopics {
		return 0, apierr.Quota(meta.LimitMaxTopics, lim.MaxTopics, "delete a topic or ask for a higher limit")
	}
	return lim.MaxTopics, nil
}

// topicDetail is a topic's answer: its log's bounds and its binding count.
func (s *Server) topicDetail(ctx context.Context, t meta.Topic) (topicJSON, error) {
	b, err := s.cfg.TopicEngine.Bounds(ctx, engineTopic(t))
	if err != nil {
		return topicJSON{}, err
	}
	bs, err := s.cfg.Topics.TopicBindings(ctx, t.ID)
	if err != nil {
		return topicJSON{}, err
	}
	return topicOut(t, b, len(bs)), nil
}

func (s *Server) getTopic(c echo.Context) error {
	t, err := s.topic(c)
	if err != nil {
		return err
	}
	ctx, cancel := s.storageCtx(c)
	defer cancel()
	out, err := s.topicDetail(ctx, t)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

func (s *Server) listTopics(c echo.Context) error {
	page, prefix, err := listParams(c)
	if err != nil {
		return err
	}
	ctx, cancel := s.storageCtx(c)
	defer cancel()
	ts, next, err := s.cfg.Topics.ListTopics(ctx, principal(c).ProjectID, prefix, page)
	if err != nil {
		return err
	}
	out, err := eachDetail(ts, func(t meta.Topic) (topicJSON, error) { return s.topicDetail(ctx, t) })
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"topics": out, "nextCursor": cursorOut(next)})
}

// parseTopicPatch reads PATCH /v1/topics/{topic}'s body: only retentionSeconds may change
// (ok false: not given).
func parseTopicPatch(data []byte) (retention int64, ok bool, err *apierr.Error) {
	o, err := parseObject(data, "", false, "name", "type", "retentionSeconds")
	if err != nil {
		return 0, false, err
	}
	for _, f := range []string{"name", "type"} {
		if o.has(f) {
			return 0, false, apierr.Invalid(f, "a topic's %s is fixed at creation", f)
		}
	}
	return o.integer("retentionSeconds", 0, meta.MaxTopicRetentionSeconds)
}

func (s *Server) updateTopic(c echo.Context) error {
	data, err := readBody(c)
	if err != nil {
		return err
	}
	ret, ok, aerr := parseTopicPatch(data)
	if aerr != nil {
		return aerr
	}
	ref, err := s.topic(c)
	if err != nil {
		return err
	}
	ctx, cancel := s.storageCtx(c)
	defer cancel()
	t, err := s.storeTopic(ctx, ref, func(t *meta.Topic) {
		if ok {
			t.RetentionSeconds = int(ret)
		}
	})
	if err != nil {
		return err
	}
	if ok {
		// An idle topic is next trimmed at the wake time its old retention set: listing it
		// now has a shortened retention applied within seconds.
		if err := s.cfg.TopicEngine.WakeTopic(ctx, t.ID); err != nil {
			return err
		}
	}
	out, err := s.topicDetail(ctx, t)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

// storeTopic applies change to the stored topic, re-reading when another writer got there first.
func (s *Server) storeTopic(ctx context.Context, t meta.Topic, change func(*meta.Topic)) (meta.Topic, error) {
	for attempt := 0; ; attempt++ {
		cur, err := s.cfg.Topics.GetTopic(ctx, t.ProjectID, t.ID)
		if err != nil {
			return cur, err
		}
		change(&cur)
		cur.UpdatedAt = s.cfg.Clock.Now().UTC().Truncate(time.Millisecond)
		out, err := s.cfg.Topics.UpdateTopic(ctx, cur)
		if errors.Is(err, meta.ErrTopicConflict) && attempt < 5 {
			continue
		}
		return out, err
	}
}

func (s *Server) deleteTopic(c echo.Context) error {
	t, err := s.topic(c)
	if err != nil {
		return err
	}
	ctx, cancel := s.storageCtx(c)
	defer cancel()
	if err := s.DeleteTopic(ctx, t); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// DeleteTopic deletes a topic and its bindings; the queues stay. The metadata goes first, so
// the topic is gone for every caller; its log, state and the bindings' marks kept with the
// queues are freed after, and a failure there leaves only unreachable data (logged).
func (s *Server) DeleteTopic(ctx context.Context, t meta.Topic) error {
	_, bs, err := s.cfg.Topics.DeleteTopic(ctx, t.ProjectID, t.ID)
	if err != nil {
		return err
	}
	et := engineTopic(t)
	for _, b := range bs {
		if err := s.cfg.TopicEngine.Unbind(ctx, et, b.ID, b.QueueID); err != nil {
			s.cfg.Logger.Error("unbinding a deleted topic's binding", "topic", t.ID.String(), "binding", b.ID.String(), "err", err)
		}
	}
	if err := s.cfg.TopicEngine.DeleteTopic(ctx, et); err != nil {
		s.cfg.Logger.Error("deleting a deleted topic's log", "topic", t.ID.String(), "err", err)
	}
	return nil
}
