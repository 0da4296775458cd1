package api

import (
	"context"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/service"
	"github.com/queueshq/queues/pkg/tenancy"
)

// The admission chain is the service layer's (pkg/service/admission.go), one for every door;
// these are its names in the /v1 handlers, and the parts that touch HTTP.

// serviceConfig is the part of cfg the service layer takes.
func serviceConfig(cfg Config) service.Config {
	return service.Config{
		Engine: cfg.Engine, Meta: cfg.Meta, Limiter: cfg.Limiter, Rates: cfg.Rates,
		Clock: cfg.Clock, Logger: cfg.Logger, StorageTimeout: cfg.StorageTimeout, Draining: cfg.Draining,
		Subscriptions: cfg.Subscriptions, Tenancy: cfg.Tenancy, DefaultLimits: cfg.DefaultLimits,
		Parking: cfg.Parking, Meter: cfg.Meter,
	}
}

// ByteLimiter is a Limiter that also takes n units at once (service.ByteLimiter).
type ByteLimiter = service.ByteLimiter

func (s *Server) effectiveLimits(ctx context.Context, project ids.ID) (tenancy.Limits, error) {
	return s.svc.EffectiveLimits(ctx, project)
}

func (s *Server) currentLimits(ctx context.Context, project ids.ID) (tenancy.Limits, error) {
	return s.svc.CurrentLimits(ctx, project)
}

func (s *Server) rememberLimits(project ids.ID, own meta.Limits) { s.svc.RememberLimits(project, own) }

func (s *Server) admit(ctx context.Context, project ids.ID) error { return s.svc.Admit(ctx, project) }

func (s *Server) allow(ctx context.Context, project ids.ID) error { return s.svc.Allow(ctx, project) }

func (s *Server) warnLimiter(err error) { s.svc.WarnLimiter(err) }

func (s *Server) createQueueWithin(ctx context.Context, q meta.Queue) error {
	return s.svc.CreateQueueWithin(ctx, q)
}

func (s *Server) createSubscriptionWithin(ctx context.Context, sub meta.Subscription) error {
	return s.svc.CreateSubscriptionWithin(ctx, sub)
}

func (s *Server) park(ctx context.Context, project ids.ID, wait time.Duration) (release func(), ok bool) {
	return s.svc.Park(ctx, project, wait)
}

func (s *Server) meterSent(project ids.ID, msgs []engine.Message, res []engine.SendResult) {
	s.svc.MeterSent(project, msgs, res)
}

func (s *Server) meterDelivered(project ids.ID, msgs []engine.Received) {
	s.svc.MeterDelivered(project, msgs)
}

func (s *Server) meterAcked(project ids.ID, errs []error, err error) {
	s.svc.MeterAcked(project, errs, err)
}

func (s *Server) admitReceipts(ctx context.Context, queues []ids.ID) (map[ids.ID]ids.ID, error) {
	return s.svc.AdmitReceipts(ctx, queues)
}

func (s *Server) queueQuotaFull(ctx context.Context, project ids.ID) error {
	return s.svc.QueueQuotaFull(ctx, project)
}

// AdmitSendBytes charges n request bytes of a send made through the SQS door to the
// project's sendBytesPerSecond (service.Admission.AdmitSendBytes).
func (s *Server) AdmitSendBytes(ctx context.Context, project ids.ID, n int64) error {
	return s.svc.AdmitSendBytes(ctx, project, n)
}

func (s *Server) refuseWhileFull(ctx context.Context, q meta.Queue) error {
	return s.svc.RefuseWhileFull(ctx, q)
}

func (s *Server) noteSendErr(q meta.Queue, err error) { s.svc.NoteSendErr(q, err) }

// limit applies the queue's rate limit for op ("send" or "receive").
func (s *Server) limit(ctx context.Context, q meta.Queue, op string) error {
	return s.svc.QueueRate(ctx, q, op)
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

// refuseFullProject is refuseWhileFull for a send request, under the storage timeout.
func (s *Server) refuseFullProject(c echo.Context, q meta.Queue) error {
	ctx, cancel := s.storageCtx(c)
	defer cancel()
	return s.refuseWhileFull(ctx, q)
}

// payloadSize is a message's size as the 256 KiB limit measures it (service.PayloadSize).
func payloadSize(body string, attrs map[string]string) int64 { return service.PayloadSize(body, attrs) }
