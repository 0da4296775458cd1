package service

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/rediskeys"
	"github.com/queueshq/queues/pkg/tenancy"
)

// Admission is the whole admission chain, in one place for every door: what a call must pass
// before the service does its work, and the metering after. In the order a send meets them:
//
//   - Admit: the project's requestsPerSecond (every call made with a project token; Allow
//     without metering, AdmitReceipts for the projects a receipt call touches);
//   - admitSendBytes: the project's sendBytesPerSecond (a send's request bytes);
//   - refuseWhileFull: a project at its maxStoredBytes is refused before its body is decoded
//     (fullprojects.go; noteSendErr marks it);
//   - QueueRate: the queue's send or receive rate (Send and Receive apply it);
//   - the project's maxStoredBytes on the send itself (EffectiveLimits, in the engine's call);
//   - Park: a long poll takes one of the project's maxWaitingReceives slots;
//   - QueueQuotaFull, CreateQueueWithin, CreateSubscriptionWithin: maxQueues and
//     maxSubscriptions on creates;
//   - AdmittedSend.MeterSent and MeterPublished, MeterDelivered, MeterAcked: usage, once the
//     answer is written.
//
// Every door's send goes through AdmitSend (admitsend.go), which takes the steps before the
// body is decoded in that order (the send steps are unexported, so no door can take them in
// another): /v1's send and publish (the request rate counted as the call
// was authenticated), the send stream's frames (the request rate per frame) and the SQS door's
// SendMessage and SendMessageBatch (before the queue is known: no full project's refusal,
// the engine's refuses it).
type Admission struct {
	cfg    *Config
	limits limitsCache
	full   fullProjects
	// limiterWarned is when a failing project limiter was last logged (unix ns).
	limiterWarned atomic.Int64
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

// MaxCachedLimits bounds the limits cache (about 10 MB).
const MaxCachedLimits = 100_000

// ownLimits returns a project's own limits, cached for limitsTTL. When the store cannot be
// read, the last known entry is used however old, so a metadata outage does not stop
// traffic that needs only the limits — and a throttled project keeps its lower limits, never
// the operator's higher defaults. A project this replica has no entry for is refused 503
// until the store answers: its limits are unknown, and the defaults could lift them.
func (s *Admission) ownLimits(ctx context.Context, project ids.ID) (meta.Limits, error) {
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
	s.RememberLimits(project, own)
	return own, nil
}

// RememberLimits caches a project's own limits for limitsTTL.
func (s *Admission) RememberLimits(project ids.ID, own meta.Limits) {
	c := &s.limits
	c.mu.Lock()
	if c.m == nil {
		c.m = map[ids.ID]cachedLimits{}
	}
	if _, ok := c.m[project]; !ok && len(c.m) >= MaxCachedLimits {
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

// EffectiveLimits are a project's limits: its own values over the operator's defaults. It
// fails (503) only when the store cannot be read and the project's limits were never known.
func (s *Admission) EffectiveLimits(ctx context.Context, project ids.ID) (tenancy.Limits, error) {
	if s.cfg.Tenancy == nil {
		return s.cfg.DefaultLimits, nil
	}
	own, err := s.ownLimits(ctx, project)
	if err != nil {
		return tenancy.Limits{}, err
	}
	return s.cfg.DefaultLimits.With(own), nil
}

// CurrentLimits reads a project's limits from the store (and refreshes the cache): the
// quota checks of creates use it, so a changed limit applies to them at once on every replica.
func (s *Admission) CurrentLimits(ctx context.Context, project ids.ID) (tenancy.Limits, error) {
	own, err := s.cfg.Tenancy.GetLimits(ctx, project)
	if err != nil {
		return tenancy.Limits{}, err
	}
	s.RememberLimits(project, own)
	return s.cfg.DefaultLimits.With(own), nil
}

// Admit applies the project's request rate to a call made with one of its tokens (or a
// receipt call on one of its queues) and meters it.
func (s *Admission) Admit(ctx context.Context, project ids.ID) error {
	if err := s.Allow(ctx, project); err != nil {
		return err
	}
	s.cfg.Meter.Add(project, meta.Counters{Requests: 1})
	return nil
}

// Allow applies the project's request rate (without metering the request).
func (s *Admission) Allow(ctx context.Context, project ids.ID) error {
	if s.cfg.Limiter == nil || s.cfg.Tenancy == nil {
		return nil
	}
	lim, err := s.EffectiveLimits(ctx, project)
	if err != nil {
		return err
	}
	rate := lim.RequestsPerSecond
	wait, err := s.cfg.Limiter.Allow(ctx, tenancy.RateKey(project), int(rate))
	if err != nil {
		// The project budget fails open: a Redis that cannot take the limiter's write
		// (full memory, a failover) must not stop receives, settlements, purges and
		// deletes that drain it. The call itself still needs its storage.
		s.WarnLimiter(err)
	}
	if wait > 0 {
		return apierr.New(apierr.RateLimited, "over the project's limit of %d requests a second", rate).WithRetryAfter(wait)
	}
	return nil
}

// WarnLimiter logs a failing project limiter at most once a second.
func (s *Admission) WarnLimiter(err error) {
	now := s.cfg.Clock.Now().UnixNano()
	last := s.limiterWarned.Load()
	if now-last >= int64(time.Second) && s.limiterWarned.CompareAndSwap(last, now) {
		s.cfg.Logger.Warn("project rate limiter unavailable; admitting calls", "err", err)
	}
}

// CreateQueueWithin stores a new queue under the project's maxQueues.
func (s *Admission) CreateQueueWithin(ctx context.Context, q meta.Queue) error {
	if s.cfg.Tenancy == nil {
		return s.cfg.Meta.CreateQueue(ctx, q)
	}
	lim, err := s.CurrentLimits(ctx, q.ProjectID)
	if err != nil {
		return err
	}
	if lim.MaxQueues == 0 {
		return apierr.Quota(meta.LimitMaxQueues, 0, "this project may not create queues")
	}
	return s.cfg.Tenancy.CreateQueueWithin(ctx, q, lim.MaxQueues)
}

// CreateSubscriptionWithin stores a new subscription under the project's maxSubscriptions.
func (s *Admission) CreateSubscriptionWithin(ctx context.Context, sub meta.Subscription) error {
	if s.cfg.Tenancy == nil {
		return s.cfg.Subscriptions.CreateSubscription(ctx, sub)
	}
	lim, err := s.CurrentLimits(ctx, sub.ProjectID)
	if err != nil {
		return err
	}
	if lim.MaxSubscriptions == 0 {
		return apierr.Quota(meta.LimitMaxSubscriptions, 0, "this project may not create subscriptions")
	}
	return s.cfg.Tenancy.CreateSubscriptionWithin(ctx, sub, lim.MaxSubscriptions)
}

// Park takes one of the project's waiting-receive slots for a long poll of up to wait. ok is
// false when the project has maxWaitingReceives parked: the receive answers at once. A
// failure to count (Redis unreachable) also answers at once rather than parking unbounded.
func (s *Admission) Park(ctx context.Context, project ids.ID, wait time.Duration) (release func(), ok bool) {
	if s.cfg.Parking == nil {
		return func() {}, true
	}
	lim, lerr := s.EffectiveLimits(ctx, project)
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

// PayloadSize is a message's size as the 256 KiB limit measures it.
func PayloadSize(body string, attrs map[string]string) int64 {
	return engine.PayloadBytes(body, attrs) // without the stored traceparent
}

// meterSent meters a send's stored messages (not duplicates) to the project. Callers meter
// once their answer is written, so a replica that dies before answering never meters a send
// nobody saw succeed.
func (s *Admission) meterSent(project ids.ID, msgs []engine.Message, res []engine.SendResult) {
	var c meta.Counters
	for i, r := range res {
		if r.Err == nil && !r.Duplicate && i < len(msgs) {
			c.MessagesSent++
			c.BytesIn += PayloadSize(msgs[i].Body, msgs[i].Attributes)
		}
	}
	if !c.IsZero() {
		s.cfg.Meter.Add(project, c)
	}
}

// MeterDelivered meters received messages to the project, as meterSent does sends.
func (s *Admission) MeterDelivered(project ids.ID, msgs []engine.Received) {
	if len(msgs) == 0 {
		return
	}
	c := meta.Counters{MessagesDelivered: int64(len(msgs))}
	for _, m := range msgs {
		c.BytesOut += PayloadSize(m.Body, m.Attributes)
	}
	s.cfg.Meter.Add(project, c)
}

// MeterAcked meters a settle call's acknowledged deliveries to the project.
func (s *Admission) MeterAcked(project ids.ID, errs []error, err error) {
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

// AdmitReceipts applies the request rate of the projects whose queues a receipt call names
// (the handles name the queues; the metadata cache knows their projects) and answers each
// named queue's project. A call is one request to each project it touches; the caller meters
// it once a handle proved current. Queues that are gone are left to the call (stale).
func (s *Admission) AdmitReceipts(ctx context.Context, queues []ids.ID) (map[ids.ID]ids.ID, error) {
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
		if err := s.Allow(ctx, mq.ProjectID); err != nil {
			return nil, err
		}
	}
	return projects, nil
}

// QueueQuotaFull tells before any storage is made whether the project has no room for
// another queue (the create's conditional write is what guarantees the limit; this spares a
// refused create the engine's work).
func (s *Admission) QueueQuotaFull(ctx context.Context, project ids.ID) error {
	if s.cfg.Tenancy == nil {
		return nil
	}
	lim, err := s.CurrentLimits(ctx, project)
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

// admitSendBytes charges n request bytes of a send (through either door: /v1's sends and
// send stream frames, the SQS door's sends) to the project's sendBytesPerSecond, with one
// limiter and key, so the doors share one budget. Over the limit it answers rate_limited with a
// Retry-After; a limiter that fails admits the send (as the request rate does). n <= 0
// charges nothing.
func (s *Admission) admitSendBytes(ctx context.Context, project ids.ID, n int64) error {
	bl, ok := s.cfg.Limiter.(ByteLimiter)
	if !ok || s.cfg.Tenancy == nil || n <= 0 {
		return nil
	}
	lim, err := s.EffectiveLimits(ctx, project)
	if err != nil {
		return err
	}
	rate := lim.SendBytesPerSecond
	if rate <= 0 {
		return nil
	}
	wait, err := bl.AllowN(ctx, tenancy.ByteRateKey(project), int(rate), int(min(n, MaxRequestBytes)))
	if err != nil {
		s.WarnLimiter(err) // fails open, as the request rate does
		return nil
	}
	if wait > 0 {
		return apierr.New(apierr.RateLimited, "over the project's limit of %d send bytes a second", rate).WithRetryAfter(wait)
	}
	return nil
}

// QueueRate applies the queue's rate limit for op ("send" or "receive").
func (s *Admission) QueueRate(ctx context.Context, q meta.Queue, op string) error {
	if s.cfg.Limiter == nil {
		return nil
	}
	rate := map[bool]map[string]int{
		false: {"send": s.cfg.Rates.StandardSend, "receive": s.cfg.Rates.StandardReceive},
		true:  {"send": s.cfg.Rates.FIFOSend, "receive": s.cfg.Rates.FIFOReceive},
	}[q.Type == string(engine.FIFO)][op]
	if rate <= 0 {
		return nil
	}
	wait, err := s.cfg.Limiter.Allow(ctx, rediskeys.QueueRate(q.ID, op), rate)
	if err != nil {
		return err
	}
	if wait > 0 {
		return apierr.New(apierr.RateLimited, "over this queue's limit of %d %s requests a second", rate, op).WithRetryAfter(wait)
	}
	return nil
}
