package api

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/tenancy"
)

// StoredBytesReader reads a project's stored payload bytes (the engine keeps the count).
type StoredBytesReader interface {
	StoredBytes(ctx context.Context, project ids.ID) (int64, error)
}

// limitsTTL bounds how long a replica uses a project's limits for its request rate, parked
// long polls and stored bytes before reading them again: a changed limit applies there on the
// replica that changed it at once, on the others within this. Creates read the limits afresh.
const limitsTTL = 2 * time.Second

type limitsCache struct {
	mu sync.Mutex
	m  map[ids.ID]cachedLimits
}

type cachedLimits struct {
	own   meta.Limits
	until time.Time
}

// maxCachedLimits bounds the limits cache (about 10 MB).
const maxCachedLimits = 100_000

// ownLimits returns a project's own limits, cached for limitsTTL. When the store cannot be
// read, the last known entry is used however old, so a metadata outage does not stop
// traffic that needs only the limits — and a throttled project keeps its lower limits, never
// the operator's higher defaults. A project this replica has no entry for is refused 503
// until the store answers: its limits are unknown, and the defaults could lift them.
func (s *Server) ownLimits(ctx context.Context, project ids.ID) (meta.Limits, error) {
	now := s.cfg.Clock.Now()
	c := &s.limits
	c.mu.Lock()
	e, ok := c.m[project]
	c.mu.Unlock()
	if ok && now.Before(e.until) {
		return e.own, nil
	}
	own, err := s.cfg.Tenancy.GetLimits(ctx, project)
	if err != nil {
		if !ok {
			s.cfg.Logger.Warn("reading project limits; none known, refusing", "project", project.String(), "err", err)
			return meta.Limits{}, apierr.New(apierr.Unavailable, "the project's limits cannot be read; retry").WithRetryAfter(limitsTTL)
		}
		s.cfg.Logger.Warn("reading project limits; using the last known", "project", project.String(), "err", err)
		return e.own, nil
	}
	s.rememberLimits(project, own)
	return own, nil
}

func (s *Server) rememberLimits(project ids.ID, own meta.Limits) {
	c := &s.limits
	c.mu.Lock()
	if c.m == nil {
		c.m = map[ids.ID]cachedLimits{}
	}
	if _, ok := c.m[project]; !ok && len(c.m) >= maxCachedLimits {
		c.evictOne()
	}
	c.m[project] = cachedLimits{own: own, until: s.cfg.Clock.Now().Add(limitsTTL)}
	c.mu.Unlock()
}

// evictOne forgets one project, not all: a wiped cache would leave every throttled project
// without its last known limits in an outage. Among a few (the map's order is random), one
// without limits of its own goes first. The caller holds mu.
func (c *limitsCache) evictOne() {
	var victim ids.ID
	n := 0
	for k, e := range c.m {
		victim = k
		if n++; len(e.own) == 0 || n >= 64 {
			break
		}
	}
	delete(c.m, victim)
}

// effectiveLimits are a project's limits: its own values over the operator's defaults. It
// fails (503) only when the store cannot be read and the project's limits were never known.
func (s *Server) effectiveLimits(ctx context.Context, project ids.ID) (tenancy.Limits, error) {
	if s.cfg.Tenancy == nil {
		return s.cfg.DefaultLimits, nil
	}
	own, err := s.ownLimits(ctx, project)
	if err != nil {
		return tenancy.Limits{}, err
	}
	return s.cfg.DefaultLimits.With(own), nil
}

// currentLimits reads a project's limits from the store (and refreshes the cache): the
// quota checks of creates use it, so a changed limit applies to them at once on every replica.
func (s *Server) currentLimits(ctx context.Context, project ids.ID) (tenancy.Limits, error) {
	own, err := s.cfg.Tenancy.GetLimits(ctx, project)
	if err != nil {
		return tenancy.Limits{}, err
	}
	s.rememberLimits(project, own)
	return s.cfg.DefaultLimits.With(own), nil
}

// admit applies the project's request rate to a call made with one of its tokens (or a
// receipt call on one of its queues) and meters it.
func (s *Server) admit(ctx context.Context, project ids.ID) error {
	if err := s.allow(ctx, project); err != nil {
		return err
	}
	s.cfg.Meter.Add(project, meta.Counters{Requests: 1})
	return nil
}

// allow applies the project's request rate (without metering the request).
func (s *Server) allow(ctx context.Context, project ids.ID) error {
	if s.cfg.Limiter == nil || s.cfg.Tenancy == nil {
		return nil
	}
	lim, err := s.effectiveLimits(ctx, project)
	if err != nil {
		return err
	}
	rate := lim.RequestsPerSecond
	wait, err := s.cfg.Limiter.Allow(ctx, tenancy.RateKey(project), int(rate))
	if err != nil {
		// The project budget fails open: a Redis that cannot take the limiter's write
		// (full memory, a failover) must not stop receives, settlements, purges and
		// deletes that drain it. The call itself still needs its storage.
		s.warnLimiter(err)
	}
	if wait > 0 {
		return apierr.New(apierr.RateLimited, "over the project's limit of %d requests a second", rate).WithRetryAfter(wait)
	}
	return nil
}

// warnLimiter logs a failing project limiter at most once a second.
func (s *Server) warnLimiter(err error) {
	now := s.cfg.Clock.Now().UnixNano()
	last := s.limiterWarned.Load()
	if now-last >= int64(time.Second) && s.limiterWarned.CompareAndSwap(last, now) {
		s.cfg.Logger.Warn("project rate limiter unavailable; admitting calls", "err", err)
	}
}

// createQueueWithin stores a new queue under the project's maxQueues.
func (s *Server) createQueueWithin(ctx context.Context, q meta.Queue) error {
	if s.cfg.Tenancy == nil {
		return s.cfg.Meta.CreateQueue(ctx, q)
	}
	lim, err := s.currentLimits(ctx, q.ProjectID)
	if err != nil {
		return err
	}
	if lim.MaxQueues == 0 {
		return apierr.Quota(meta.LimitMaxQueues, 0, "this project may not create queues")
	}
	return s.cfg.Tenancy.CreateQueueWithin(ctx, q, lim.MaxQueues)
}

// createSubscriptionWithin stores a new subscription under the project's maxSubscriptions.
func (s *Server) createSubscriptionWithin(ctx context.Context, sub meta.Subscription) error {
	if s.cfg.Tenancy == nil {
		return s.cfg.Subscriptions.CreateSubscription(ctx, sub)
	}
	lim, err := s.currentLimits(ctx, sub.ProjectID)
	if err != nil {
		return err
	}
	if lim.MaxSubscriptions == 0 {
		return apierr.Quota(meta.LimitMaxSubscriptions, 0, "this project may not create subscriptions")
	}
	return s.cfg.Tenancy.CreateSubscriptionWithin(ctx, sub, lim.MaxSubscriptions)
}

// park takes one of the project's waiting-receive slots for a long poll of up to wait. ok is
// false when the project has maxWaitingReceives parked: the receive answers at once. A
// failure to count (Redis unreachable) also answers at once rather than parking unbounded.
func (s *Server) park(ctx context.Context, project ids.ID, wait time.Duration) (release func(), ok bool) {
	if s.cfg.Parking == nil {
		return func() {}, true
	}
	lim, lerr := s.effectiveLimits(ctx, project)
	if lerr != nil {
		return func() {}, false // limits unknown: answer at once rather than park unbounded
	}
	max := lim.MaxWaitingReceives
	// The slot outlives the longest wait by the storage timeout of the last look.
	release, ok, err := s.cfg.Parking.Park(ctx, project, max, wait+s.cfg.StorageTimeout+time.Second)
	if err != nil {
		s.cfg.Logger.Warn("counting waiting receives; answering at once", "project", project.String(), "err", err)
	}
	return release, ok && err == nil
}

// payloadSize is a message's size as the 256 KiB limit measures it.
func payloadSize(body string, attrs map[string]string) int64 {
	return engine.PayloadBytes(body, attrs) // without the stored traceparent
}

func (s *Server) meterSent(project ids.ID, msgs []engine.Message, res []engine.SendResult) {
	var c meta.Counters
	for i, r := range res {
		if r.Err == nil && !r.Duplicate && i < len(msgs) {
			c.MessagesSent++
			c.BytesIn += payloadSize(msgs[i].Body, msgs[i].Attributes)
		}
	}
	if !c.IsZero() {
		s.cfg.Meter.Add(project, c)
	}
}

func (s *Server) meterDelivered(project ids.ID, msgs []engine.Received) {
	if len(msgs) == 0 {
		return
	}
	c := meta.Counters{MessagesDelivered: int64(len(msgs))}
	for _, m := range msgs {
		c.BytesOut += payloadSize(m.Body, m.Attributes)
	}
	s.cfg.Meter.Add(project, c)
}

func (s *Server) meterAcked(project ids.ID, errs []error, err error) {
	if err != nil {
		return
	}
	var n int64
	for _, e := range errs {
		if e == nil {
			n++
		}
	}
	if n > 0 {
		s.cfg.Meter.Add(project, meta.Counters{MessagesAcked: n})
	}
}

// requireProject authenticates a project token of any scope (the tenant's own routes).
func (s *Server) requireProject(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		p, err := s.authenticate(c)
		if err != nil {
			return err
		}
		if p.Operator {
			return apierr.New(apierr.PermissionDenied, "this route needs a project token; the operator reads /v1/projects/{project}")
		}
		c.Set(principalKey, p)
		if err := s.admit(c.Request().Context(), p.ProjectID); err != nil {
			return err
		}
		return next(c)
	}
}

type limitsJSON = tenancy.Limits

type projectUsageJSON struct {
	Queues        int64 `json:"queues"`
	Subscriptions int64 `json:"subscriptions"`
	Topics        int64 `json:"topics"`
	StoredBytes   int64 `json:"storedBytes"`
}

type projectDetailJSON struct {
	projectJSON
	Limits limitsJSON       `json:"limits"`
	Usage  projectUsageJSON `json:"usage"`
}

func (s *Server) projectDetail(ctx context.Context, p meta.Project) (projectDetailJSON, error) {
	out := projectDetailJSON{projectJSON: projectOut(p), Limits: s.cfg.DefaultLimits}
	if s.cfg.Tenancy == nil {
		return out, nil
	}
	own, err := s.cfg.Tenancy.GetLimits(ctx, p.ID)
	if err != nil {
		return out, err
	}
	s.rememberLimits(p.ID, own)
	out.Limits = s.cfg.DefaultLimits.With(own)
	counts, err := s.cfg.Tenancy.Counts(ctx, p.ID)
	if err != nil {
		return out, err
	}
	out.Usage.Queues, out.Usage.Subscriptions, out.Usage.Topics = counts.Queues, counts.Subscriptions, counts.Topics
	if s.cfg.StoredBytes != nil {
		if out.Usage.StoredBytes, err = s.cfg.StoredBytes.StoredBytes(ctx, p.ID); err != nil {
			return out, err
		}
	}
	return out, nil
}

func (s *Server) getProject(c echo.Context) error {
	p, err := s.project(c)
	if err != nil {
		return err
	}
	return s.answerProject(c, p)
}

func (s *Server) answerProject(c echo.Context, p meta.Project) error {
	ctx, cancel := s.storageCtx(c)
	defer cancel()
	out, err := s.projectDetail(ctx, p)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

func (s *Server) getOwnProject(c echo.Context) error {
	ctx, cancel := s.storageCtx(c)
	defer cancel()
	p, err := s.cfg.Meta.GetProject(ctx, principal(c).ProjectID)
	if err != nil {
		return err
	}
	return s.answerProject(c, p)
}

// parseLimitsPatch reads PATCH /v1/projects/{project}'s body: {"limits": {name: value|null}}.
func parseLimitsPatch(data []byte) (meta.LimitsPatch, *apierr.Error) {
	o, err := parseObject(data, "", false, "limits")
	if err != nil {
		return nil, err
	}
	if !o.has("limits") || o.isNull("limits") {
		return nil, apierr.Invalid("limits", "is required: an object of limits (%v) to integers or null", meta.LimitNames)
	}
	lo, err := o.child("limits", meta.LimitNames...)
	if err != nil {
		return nil, err
	}
	patch := meta.LimitsPatch{}
	for name := range lo.fields {
		if lo.isNull(name) {
			patch[name] = nil
			continue
		}
		r := tenancy.Ranges[name]
		v, _, err := lo.integer(name, r.Min, r.Max)
		if err != nil {
			return nil, err
		}
		patch[name] = &v
	}
	return patch, nil
}

func (s *Server) updateProject(c echo.Context) error {
	p, err := s.project(c)
	if err != nil {
		return err
	}
	data, err := readBody(c)
	if err != nil {
		return err
	}
	patch, aerr := parseLimitsPatch(data)
	if aerr != nil {
		return aerr
	}
	if s.cfg.Tenancy == nil {
		return apierr.New(apierr.Unavailable, "this server keeps no project limits")
	}
	ctx, cancel := s.storageCtx(c)
	defer cancel()
	own, err := s.cfg.Tenancy.UpdateLimits(ctx, p.ID, patch)
	if err != nil {
		return err
	}
	s.rememberLimits(p.ID, own)
	return s.answerProject(c, p)
}

type usageHourJSON struct {
	Hour              string `json:"hour"`
	Requests          int64  `json:"requests"`
	MessagesSent      int64  `json:"messagesSent"`
	MessagesDelivered int64  `json:"messagesDelivered"`
	MessagesAcked     int64  `json:"messagesAcked"`
	BytesIn           int64  `json:"bytesIn"`
	BytesOut          int64  `json:"bytesOut"`
	PushAttempts      int64  `json:"pushAttempts"`
	StoredByteHours   int64  `json:"storedByteHours"`
	MessagesPublished int64  `json:"messagesPublished"`
}

// usageRange reads ?from=&to= (RFC 3339; default the last 24 hours; at most 31 days).
func (s *Server) usageRange(c echo.Context) (from, to time.Time, err error) {
	to = s.cfg.Clock.Now().UTC()
	parse := func(name string, def time.Time) (time.Time, error) {
		v := c.QueryParam(name)
		if v == "" {
			return def, nil
		}
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return t, apierr.Invalid(name, "must be an RFC 3339 time such as 2026-03-14T15:00:00Z")
		}
		return t.UTC(), nil
	}
	if to, err = parse("to", to); err != nil {
		return
	}
	if from, err = parse("from", to.Add(-24*time.Hour)); err != nil {
		return
	}
	// The field named is the one given: with to defaulted, from is the one at fault.
	field := "to"
	if c.QueryParam("to") == "" {
		field = "from"
	}
	switch {
	case to.Before(from):
		err = apierr.Invalid(field, "to must not be before from")
	case to.Sub(from) > meta.MaxUsageRange:
		err = apierr.Invalid(field, "at most 31 days from from to to per call")
	}
	return
}

func (s *Server) answerUsage(c echo.Context, project ids.ID) error {
	from, to, err := s.usageRange(c)
	if err != nil {
		return err
	}
	out := []usageHourJSON{}
	if s.cfg.Tenancy != nil {
		ctx, cancel := s.storageCtx(c)
		defer cancel()
		hours, err := s.cfg.Tenancy.Usage(ctx, project, from, to)
		if err != nil {
			return err
		}
		slices.SortFunc(hours, func(a, b meta.UsageHour) int { return a.Hour.Compare(b.Hour) })
		for _, h := range hours {
			out = append(out, usageHourJSON{
				Hour: formatTime(h.Hour), Requests: h.Requests, MessagesSent: h.MessagesSent,
				MessagesDelivered: h.MessagesDelivered, MessagesAcked: h.MessagesAcked,
				BytesIn: h.BytesIn, BytesOut: h.BytesOut, PushAttempts: h.PushAttempts, StoredByteHours: h.StoredByteHours,
				MessagesPublished: h.MessagesPublished,
			})
		}
	}
	return c.JSON(http.StatusOK, map[string]any{"usage": out})
}

func (s *Server) getProjectUsage(c echo.Context) error {
	p, err := s.project(c)
	if err != nil {
		return err
	}
	return s.answerUsage(c, p.ID)
}

func (s *Server) getOwnUsage(c echo.Context) error {
	return s.answerUsage(c, principal(c).ProjectID)
}

// admitReceipts applies the request rate of the projects whose queues a receipt call names
// (the handles name the queues; the metadata cache knows their projects) and answers each
// named queue's project. A call is one request to each project it touches; the caller meters
// it once a handle proved current. Queues that are gone are left to the call (stale).
func (s *Server) admitReceipts(ctx context.Context, queues []ids.ID) (map[ids.ID]ids.ID, error) {
	projects := map[ids.ID]ids.ID{}
	var seen []ids.ID
	for _, qid := range queues {
		mq, err := s.cfg.Meta.GetQueueByID(ctx, qid)
		if err != nil {
			continue
		}
		projects[qid] = mq.ProjectID
		if slices.Contains(seen, mq.ProjectID) {
			continue
		}
		seen = append(seen, mq.ProjectID)
		if err := s.allow(ctx, mq.ProjectID); err != nil {
			return nil, err
		}
	}
	return projects, nil
}

// queueQuotaFull tells before any storage is made whether the project has no room for
// another queue (the create's conditional write is what guarantees the limit; this spares a
// refused create the engine's work).
func (s *Server) queueQuotaFull(ctx context.Context, project ids.ID) error {
	if s.cfg.Tenancy == nil {
		return nil
	}
	lim, err := s.currentLimits(ctx, project)
	if err != nil {
		return err
	}
	max := lim.MaxQueues
	counts, err := s.cfg.Tenancy.Counts(ctx, project)
	if err != nil {
		return err
	}
	if counts.Queues >= max {
		return apierr.Quota(meta.LimitMaxQueues, max, "delete a queue or ask for a higher limit")
	}
	return nil
}

// ByteLimiter is a Limiter that also takes n units at once (pkg/ratelimit's limiters): the
// project's sendBytesPerSecond.
type ByteLimiter interface {
	AllowN(ctx context.Context, key string, perSecond, n int) (retryAfter time.Duration, err error)
}

// admitSendBytes charges n request bytes of a send to the project's sendBytesPerSecond
// (n < 0: not known yet, charged by the caller once read). Over the limit it answers 429
// with Retry-After and closes the connection, so the unread body is not read either.
func (s *Server) admitSendBytes(c echo.Context, project ids.ID, n int64) error {
	ctx, cancel := s.storageCtx(c)
	defer cancel()
	err := s.AdmitSendBytes(ctx, project, n)
	if err != nil {
		c.Response().Header().Set(echo.HeaderConnection, "close")
	}
	return err
}

// AdmitSendBytes charges n request bytes of a send made through another door (the SQS
// door) to the project's sendBytesPerSecond, with the same limiter and key as /v1's sends,
// so the two doors share one budget. Over the limit it answers rate_limited with a
// Retry-After; a limiter that fails admits the send (as the request rate does). n <= 0
// charges nothing.
func (s *Server) AdmitSendBytes(ctx context.Context, project ids.ID, n int64) error {
	bl, ok := s.cfg.Limiter.(ByteLimiter)
	if !ok || s.cfg.Tenancy == nil || n <= 0 {
		return nil
	}
	lim, err := s.effectiveLimits(ctx, project)
	if err != nil {
		return err
	}
	rate := lim.SendBytesPerSecond
	if rate <= 0 {
		return nil
	}
	wait, err := bl.AllowN(ctx, tenancy.ByteRateKey(project), int(rate), int(min(n, MaxRequestBytes)))
	if err != nil {
		s.warnLimiter(err) // fails open, as the request rate does
		return nil
	}
	if wait > 0 {
		return apierr.New(apierr.RateLimited, "over the project's limit of %d send bytes a second", rate).WithRetryAfter(wait)
	}
	return nil
}
