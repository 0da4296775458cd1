package api

import (
	"context"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/auth"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/service"
	"github.com/queueshq/queues/pkg/tenancy"
)

// The operations, the admission chain, long polls and their arbiter are the service layer's
// (pkg/service), one for both doors: the exported ones are promoted onto Server (it embeds
// *service.Service); these are the others' names in the /v1 handlers, and the parts that touch
// HTTP.

// serviceConfig is the part of cfg the service layer takes, and the API's message counter.
func serviceConfig(cfg Config, m *metrics) service.Config {
	return service.Config{
		Engine: cfg.Engine, Meta: cfg.Meta, Receipts: cfg.Receipts, Limiter: cfg.Limiter, Rates: cfg.Rates,
		Clock: cfg.Clock, Logger: cfg.Logger, StorageTimeout: cfg.StorageTimeout, Draining: cfg.Draining,
		Messages: m.messages, Subscriptions: cfg.Subscriptions, PushChanged: cfg.PushChanged,
		Topics: cfg.Topics, TopicEngine: cfg.TopicEngine,
		Tenancy: cfg.Tenancy, DefaultLimits: cfg.DefaultLimits, Parking: cfg.Parking, Meter: cfg.Meter,
	}
}

// FIFOSuffix ends a fifo queue's name where it has one (service.FIFOSuffix).
const FIFOSuffix = service.FIFOSuffix

// ValidateQueueName checks a new queue's name (service.ValidateQueueName).
func ValidateQueueName(name string, fifo bool) *apierr.Error {
	return service.ValidateQueueName(name, fifo)
}

// Auth is the credential authority.
func (s *Server) Auth() *auth.Authority { return s.cfg.Auth }

func (s *Server) lookupQueue(ctx context.Context, project ids.ID, ref string) (meta.Queue, error) {
	return s.LookupQueue(ctx, project, ref)
}

func (s *Server) setRedrive(ctx context.Context, q *meta.Queue, dlqID ids.ID, ref string, maxReceiveCount int) error {
	return s.SetRedrive(ctx, q, dlqID, ref, maxReceiveCount)
}

func (s *Server) stats(ctx context.Context, q meta.Queue) (engine.Stats, error) {
	return s.Stats(ctx, q)
}

func (s *Server) pushChanged(ctx context.Context, queue ids.ID) { s.PushChanged(ctx, queue) }

func (s *Server) unbind(ctx context.Context, project ids.ID, b meta.Binding) {
	s.Unbind(ctx, project, b)
}

func engineTopic(t meta.Topic) engine.Topic { return service.EngineTopic(t) }

func needConsumer(q meta.Queue, req engine.ReceiveRequest) error { return service.NeedConsumer(q, req) }

func (s *Server) heldSettled(ctx context.Context, q engine.Queue, ds []engine.Delivery, errs []error, vis func(j int) time.Duration) {
	s.HeldSettled(ctx, q, ds, errs, vis)
}

func (s *Server) count(op string, errs []error, err error) { s.CountMessages(op, errs, err) }

func (s *Server) byQueue(ctx context.Context, ds []engine.Delivery, op func(ctx context.Context, q engine.Queue, idx []int) ([]error, error)) ([]error, error) {
	return s.ByQueue(ctx, ds, op)
}

// ByteLimiter is a Limiter that also takes n units at once (service.ByteLimiter).
type ByteLimiter = service.ByteLimiter

func (s *Server) effectiveLimits(ctx context.Context, project ids.ID) (tenancy.Limits, error) {
	return s.Service.EffectiveLimits(ctx, project)
}

func (s *Server) currentLimits(ctx context.Context, project ids.ID) (tenancy.Limits, error) {
	return s.Service.CurrentLimits(ctx, project)
}

func (s *Server) rememberLimits(project ids.ID, own meta.Limits) {
	s.Service.RememberLimits(project, own)
}

func (s *Server) admit(ctx context.Context, project ids.ID) error {
	return s.Service.Admit(ctx, project)
}

func (s *Server) warnLimiter(err error) { s.Service.WarnLimiter(err) }

func (s *Server) createSubscriptionWithin(ctx context.Context, sub meta.Subscription) error {
	return s.Service.CreateSubscriptionWithin(ctx, sub)
}

func (s *Server) meterDelivered(project ids.ID, msgs []engine.Received) {
	s.Service.MeterDelivered(project, msgs)
}

func (s *Server) admitReceipts(ctx context.Context, queues []ids.ID) (map[ids.ID]ids.ID, error) {
	return s.Service.AdmitReceipts(ctx, queues)
}

// admitSend admits a /v1 send (service.AdmitSend) under the storage timeout. A send refused
// for its bytes answers 429 with Retry-After and closes the connection, so the unread body is
// not read either.
func (s *Server) admitSend(c echo.Context, req service.SendRequest) (*service.AdmittedSend, error) {
	ctx, cancel := s.storageCtx(c)
	defer cancel()
	adm, err := s.AdmitSend(ctx, req)
	if err != nil && adm.Refused == service.StepSendBytes {
		c.Response().Header().Set(echo.HeaderConnection, "close")
	}
	return adm, err
}

// chargeRead charges the n bytes read of a send whose size was not announced (a chunked
// body), as admitSend does.
func (s *Server) chargeRead(c echo.Context, adm *service.AdmittedSend, n int) error {
	ctx, cancel := s.storageCtx(c)
	defer cancel()
	err := adm.ChargeRead(ctx, int64(n))
	if err != nil {
		c.Response().Header().Set(echo.HeaderConnection, "close")
	}
	return err
}
