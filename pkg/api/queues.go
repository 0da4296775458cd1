package api

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/service"
)

// Queue setting defaults and ranges (docs/api-tour.md).
const (
	defaultVisibility = service.DefaultVisibilitySeconds
	maxVisibility     = service.MaxVisibilitySeconds
	defaultRetention  = service.DefaultRetentionSeconds
	minRetention      = service.MinRetentionSeconds
	maxRetention      = service.MaxRetentionSeconds
	maxDelay          = service.MaxDelaySeconds
	maxReceiveWait    = service.MaxReceiveWaitSeconds
)

func itoa(i int) string { return strconv.Itoa(i) }

type redriveJSON struct {
	DeadLetterQueue string `json:"deadLetterQueue"`
	MaxReceiveCount int    `json:"maxReceiveCount"`
}

type countsJSON struct {
	Visible                 int64 `json:"visible"`
	InFlight                int64 `json:"inFlight"`
	Delayed                 int64 `json:"delayed"`
	Truncated               bool  `json:"truncated"`
	OldestMessageAgeSeconds int64 `json:"oldestMessageAgeSeconds"`
}

type queueJSON struct {
	ID                       string       `json:"id"`
	Slug                     string       `json:"slug"`
	Name                     string       `json:"name"`
	Type                     string       `json:"type"`
	CreatedAt                string       `json:"createdAt"`
	UpdatedAt                string       `json:"updatedAt"`
	VisibilityTimeoutSeconds int          `json:"visibilityTimeoutSeconds"`
	RetentionSeconds         int          `json:"retentionSeconds"`
	DelaySeconds             int          `json:"delaySeconds"`
	ReceiveWaitSeconds       int          `json:"receiveWaitSeconds"`
	Redrive                  *redriveJSON `json:"redrive"`
	ContentBasedDedup        bool         `json:"contentBasedDedup"`
	Fairness                 string       `json:"fairness"`
	MaxCancels               int          `json:"maxCancels"`
	MaxMessageBytes          int          `json:"maxMessageBytes"`
	// The group policy settings, on fifo queues only (grouppolicy.go).
	GroupPolicy          *string    `json:"groupPolicy,omitempty"`
	GroupAffinitySeconds *int       `json:"groupAffinitySeconds,omitempty"`
	MaxGroupsPerConsumer *int       `json:"maxGroupsPerConsumer,omitempty"`
	OnDeadLetter         string     `json:"onDeadLetter"`
	Delivery             string     `json:"delivery"`
	Partitions           int        `json:"partitions"`
	Counts               countsJSON `json:"counts"`
}

func (s *Server) queueOut(q meta.Queue, st engine.Stats) queueJSON {
	out := queueJSON{
		ID: q.ID.String(), Slug: q.ID.Slug(ids.QueuePrefix), Name: q.Name, Type: q.Type,
		CreatedAt: formatTime(q.CreatedAt), UpdatedAt: formatTime(q.UpdatedAt),
		VisibilityTimeoutSeconds: q.VisibilityTimeoutSeconds, RetentionSeconds: q.RetentionSeconds,
		DelaySeconds: q.DelaySeconds, ReceiveWaitSeconds: q.ReceiveWaitSeconds,
		ContentBasedDedup: q.ContentBasedDedup, Delivery: q.DeliveryMode(), Partitions: max(st.Partitions, 1), Fairness: fairnessOf(q),
		MaxCancels: q.MaxCancelsOrDefault(), MaxMessageBytes: q.MaxMessageBytesOrDefault(), OnDeadLetter: q.OnDeadLetterOrDefault(),
		Counts: countsJSON{Visible: st.Visible, InFlight: st.InFlight, Delayed: st.Delayed, Truncated: st.Truncated},
	}
	groupPolicyOut(q, &out) // grouppolicy.go
	if q.Redrive != nil {
		out.Redrive = &redriveJSON{DeadLetterQueue: q.Redrive.DeadLetterQueue.String(), MaxReceiveCount: q.Redrive.MaxReceiveCount}
	}
	if !st.OldestSentAt.IsZero() {
		out.Counts.OldestMessageAgeSeconds = max(int64(s.cfg.Clock.Now().Sub(st.OldestSentAt)/time.Second), 0)
	}
	return out
}

func (s *Server) queue(c echo.Context) (meta.Queue, error) {
	ctx, cancel := s.storageCtx(c)
	defer cancel()
	q, err := s.lookupQueue(ctx, principal(c).ProjectID, c.Param("queue"))
	if err == nil {
		traceQueue(c, q.ID)
	}
	if apierr.CodeOf(err) == apierr.NotFound {
		return q, apierr.New(apierr.NotFound, "no queue %q in this project", c.Param("queue"))
	}
	return q, err
}

// target resolves the path's queue with the settings the engine needs.
func (s *Server) target(c echo.Context) (meta.Queue, engine.Queue, error) {
	q, err := s.queue(c)
	if err != nil {
		return q, engine.Queue{}, err
	}
	ctx, cancel := s.storageCtx(c)
	defer cancel()
	eq, err := s.engineQueue(ctx, q)
	return q, eq, err
}

// engineQueue turns stored settings into what the engine needs, with the dead-letter queue's.
func (s *Server) engineQueue(ctx context.Context, q meta.Queue) (engine.Queue, error) {
	return meta.EngineQueue(ctx, s.cfg.Meta, q)
}

// applySettings validates and applies the settings present in o to q. Immutable fields are
// rejected by the caller's allowed-field list or here.
func (s *Server) applySettings(ctx context.Context, o *object, q *meta.Queue) error {
	ints := []struct {
		name   string
		lo, hi int64
		dst    *int
	}{
		{"visibilityTimeoutSeconds", 0, maxVisibility, &q.VisibilityTimeoutSeconds},
		{"retentionSeconds", minRetention, maxRetention, &q.RetentionSeconds},
		{"delaySeconds", 0, maxDelay, &q.DelaySeconds},
		{"receiveWaitSeconds", 0, maxReceiveWait, &q.ReceiveWaitSeconds},
		{"maxMessageBytes", engine.MinMaxMessageBytes, engine.MaxMessageBytes, &q.MaxMessageBytes},
	}
	for _, f := range ints {
		v, ok, err := o.integer(f.name, f.lo, f.hi)
		if err != nil {
			return err
		}
		if ok {
			*f.dst = int(v)
		}
	}
	if v, ok, err := o.boolean("contentBasedDedup"); err != nil {
		return err
	} else if ok {
		if v && q.Type != string(engine.FIFO) {
			return apierr.Invalid("contentBasedDedup", "content-based deduplication exists only on fifo queues")
		}
		q.ContentBasedDedup = v
	}
	if err := applyFairness(o, q); err != nil {
		return err
	}
	if err := applyGroupPolicy(o, q); err != nil { // grouppolicy.go
		return err
	}
	if v, ok, err := o.integer("maxCancels", 0, engine.MaxCancelsHi); err != nil {
		return err
	} else if ok {
		q.MaxCancels = ptr(int(v))
	}
	if err := s.applyRedrive(ctx, o, q); err != nil {
		return err
	}
	return applyOnDeadLetter(o, q)
}

// applyOnDeadLetter reads the poison policy (docs/fifo.md): fifo queues only, and "park" and
// "parkGroup" need a dead-letter queue (a message dead-lettered without one is deleted, and
// nothing could come back to end the parking). Checked after the redrive policy is applied,
// so that one request may set both, or remove the redrive while the policy parks.
func applyOnDeadLetter(o *object, q *meta.Queue) error {
	v, ok, err := o.str("onDeadLetter")
	if err != nil {
		return err
	}
	if ok {
		if p := engine.PoisonPolicy(v); p == "" || !p.Valid() {
			return apierr.Invalid("onDeadLetter", "must be %q, %q or %q", engine.PoisonContinue, engine.PoisonPark, engine.PoisonParkGroup)
		}
		if v != string(engine.PoisonContinue) && q.Type != string(engine.FIFO) {
			return apierr.Invalid("onDeadLetter", "poison policies exist only on fifo queues")
		}
		q.OnDeadLetter = v
	}
	if q.OnDeadLetterOrDefault() != string(engine.PoisonContinue) && q.Redrive == nil {
		return apierr.Invalid("onDeadLetter", "%q needs a dead-letter queue: set redrive too", q.OnDeadLetter)
	}
	return nil
}

// applyRedrive reads the redrive policy, when present.
func (s *Server) applyRedrive(ctx context.Context, o *object, q *meta.Queue) error {
	if !o.has("redrive") {
		return nil
	}
	if o.isNull("redrive") {
		q.Redrive = nil
		return nil
	}
	ro, err := o.child("redrive", "deadLetterQueue", "maxReceiveCount")
	if err != nil {
		return err
	}
	ref, ok, err := ro.str("deadLetterQueue")
	if err != nil {
		return err
	}
	if !ok {
		return apierr.Invalid("redrive.deadLetterQueue", "is required: the dead-letter queue's id")
	}
	dlqID, perr := ids.Parse(ids.QueuePrefix, ref)
	if perr != nil {
		return apierr.Invalid("redrive.deadLetterQueue", "must be a queue id or que_ slug")
	}
	mrc, ok, err := ro.integer("maxReceiveCount", 1, engine.MaxReceiveCountHi)
	if err != nil {
		return err
	}
	if !ok {
		return apierr.Invalid("redrive.maxReceiveCount", "is required: 1 to %d", engine.MaxReceiveCountHi)
	}
	return s.setRedrive(ctx, q, dlqID, ref, int(mrc))
}

var settingFields = []string{"visibilityTimeoutSeconds", "retentionSeconds", "delaySeconds", "receiveWaitSeconds", "redrive", "contentBasedDedup", "fairness", "maxCancels", "maxMessageBytes",
	"groupPolicy", "groupAffinitySeconds", "maxGroupsPerConsumer", "onDeadLetter"}

func (s *Server) createQueue(c echo.Context) error {
	data, err := readBody(c)
	if err != nil {
		return err
	}
	o, aerr := parseObject(data, "", false, append([]string{"name", "type", "delivery"}, settingFields...)...)
	if aerr != nil {
		return aerr
	}
	name, ok, aerr := o.str("name")
	if aerr != nil {
		return aerr
	}
	if !ok {
		return apierr.Invalid("name", "is required")
	}
	typ, ok, aerr := o.str("type")
	if aerr != nil {
		return aerr
	}
	if !ok {
		typ = string(engine.Standard)
	}
	if typ != string(engine.Standard) && typ != string(engine.FIFO) {
		return apierr.Invalid("type", "must be \"standard\" or \"fifo\"")
	}
	if err := ValidateQueueName(name, typ == string(engine.FIFO)); err != nil {
		return err
	}
	q := s.NewQueue(principal(c).ProjectID, name, typ)
	if q.Delivery, aerr = delivery(o, typ); aerr != nil {
		return aerr
	}
	ctx, cancel := s.storageCtx(c)
	defer cancel()
	if err := s.applySettings(ctx, o, &q); err != nil {
		return err
	}
	if err := s.CreateQueue(ctx, q); err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, s.queueOut(q, engine.Stats{Partitions: 1}))
}

// delivery reads a new queue's delivery mode (docs/delivery-options.md#at-most-once-queues):
// atLeastOnce (the default) or atMostOnce, which only a standard queue may have.
func delivery(o *object, typ string) (string, *apierr.Error) {
	v, ok, err := o.str("delivery")
	switch {
	case err != nil:
		return "", err
	case !ok || v == meta.DeliveryAtLeastOnce:
		return meta.DeliveryAtLeastOnce, nil
	case v != meta.DeliveryAtMostOnce:
		return "", apierr.Invalid("delivery", "must be %q or %q", meta.DeliveryAtLeastOnce, meta.DeliveryAtMostOnce)
	case typ != string(engine.Standard):
		return "", apierr.Invalid("delivery", "at-most-once delivery exists only on standard queues")
	}
	return v, nil
}

func (s *Server) getQueue(c echo.Context) error {
	q, eq, err := s.target(c)
	if err != nil {
		return err
	}
	ctx, cancel := s.storageCtx(c)
	defer cancel()
	st, err := s.cfg.Engine.Stats(ctx, eq)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, s.queueOut(q, st))
}

func (s *Server) listQueues(c echo.Context) error {
	page, prefix, err := listParams(c)
	if err != nil {
		return err
	}
	ctx, cancel := s.storageCtx(c)
	defer cancel()
	qs, next, err := s.cfg.Meta.ListQueues(ctx, principal(c).ProjectID, prefix, page)
	if err != nil {
		return err
	}
	out, err := eachDetail(qs, func(q meta.Queue) (queueJSON, error) {
		st, err := s.stats(ctx, q)
		return s.queueOut(q, st), err
	})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"queues": out, "nextCursor": cursorOut(next)})
}

// listParams reads a name listing's limit, cursor and prefix (queues and topics alike).
func listParams(c echo.Context) (meta.Page, string, error) {
	page, err := pageParams(c, 100, 1000)
	if err != nil {
		return page, "", err
	}
	prefix := c.QueryParam("prefix")
	if prefix != "" && !prefixPattern.MatchString(prefix) {
		return page, "", apierr.Invalid("prefix", "must be 1 to 80 of A-Z, a-z, 0-9, _, . and -")
	}
	return page, prefix, nil
}

// eachDetail answers detail(item) for every item of a listed page, 16 at a time (each reads
// its counts from the engine), in the page's order; the first item's error in that order
// fails the page.
func eachDetail[T, O any](items []T, detail func(T) (O, error)) ([]O, error) {
	out := make([]O, len(items))
	errs := make([]error, len(items))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i, it := range items {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			out[i], errs[i] = detail(it)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (s *Server) updateQueue(c echo.Context) error {
	data, err := readBody(c)
	if err != nil {
		return err
	}
	o, aerr := parseObject(data, "", false, append([]string{"name", "type", "delivery"}, settingFields...)...)
	if aerr != nil {
		return aerr
	}
	for _, f := range []string{"name", "type", "delivery"} {
		if o.has(f) {
			return apierr.Invalid(f, "a queue's %s is fixed at creation", f)
		}
	}
	ref, err := s.queue(c)
	if err != nil {
		return err
	}
	ctx, cancel := s.storageCtx(c)
	defer cancel()
	out, err := s.UpdateQueue(ctx, ref, func(q *meta.Queue) error { return s.applySettings(ctx, o, q) })
	if err != nil {
		return err
	}
	st, err := s.stats(ctx, out)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, s.queueOut(out, st))
}

func (s *Server) deleteQueue(c echo.Context) error {
	q, err := s.queue(c)
	if err != nil {
		return err
	}
	ctx, cancel := s.storageCtx(c)
	defer cancel()
	if err := s.DeleteQueue(ctx, q); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) purgeQueue(c echo.Context) error {
	_, eq, err := s.target(c)
	if err != nil {
		return err
	}
	ctx, cancel := s.storageCtx(c)
	defer cancel()
	at := s.cfg.Clock.Now()
	if err := s.cfg.Engine.Purge(ctx, eq); err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, map[string]string{"purgedAt": formatTime(at)})
}

// pageParams reads limit and cursor query parameters.
func pageParams(c echo.Context, def, hi int) (meta.Page, error) {
	p := meta.Page{Limit: def, Cursor: c.QueryParam("cursor")}
	if v := c.QueryParam("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > hi {
			return p, apierr.Invalid("limit", "must be an integer from 1 to %d", hi)
		}
		p.Limit = n
	}
	if len(p.Cursor) > 2048 {
		return p, apierr.Invalid("cursor", "malformed cursor")
	}
	return p, nil
}

func cursorOut(next string) *string {
	if next == "" {
		return nil
	}
	return &next
}

func secs(n int64) time.Duration { return time.Duration(n) * time.Second }
