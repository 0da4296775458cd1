package api

// Endpoint health of a push subscription (issue 37): the figures GET …/subscription shows
// from the pusher fleet's health log, and the state a PATCH changes.

import (
	"time"

	"github.com/labstack/echo/v4"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/meta"
)

type healthJSON struct {
	SuccessRate5m       *float64         `json:"successRate5m"`
	SuccessRate24h      *float64         `json:"successRate24h"`
	Attempts5m          int64            `json:"attempts5m"`
	Attempts24h         int64            `json:"attempts24h"`
	LastSuccessAt       *string          `json:"lastSuccessAt"`
	LastError           *healthErrorJSON `json:"lastError"`
	ConsecutiveFailures int64            `json:"consecutiveFailures"`
	FailingSince        *string          `json:"failingSince"`
	FlowControlLimit    int              `json:"flowControlLimit"`
	ThrottledUntil      *string          `json:"throttledUntil"`
}

type healthErrorJSON struct {
	Status  *int   `json:"status"`
	Error   string `json:"error"`
	Message string `json:"message"`
	At      string `json:"at"`
}

// applyHealthSettings applies disableAfterSeconds and state.
func (s *Server) applyHealthSettings(o *object, sub *meta.Subscription) error {
	if v, ok, err := o.integer("disableAfterSeconds", 0, maxDisableAfter); err != nil {
		return err
	} else if ok {
		sub.DisableAfterSeconds = int(v)
	}
	st, ok, err := o.str("state")
	if err != nil || !ok {
		return errOrNil(err)
	}
	switch st {
	case stateActive:
		sub.Disabled, sub.DisabledReason, sub.DisabledAt = false, "", time.Time{}
	case stateDisabled:
		if !sub.Disabled {
			sub.Disabled, sub.DisabledReason = true, "disabled through the API"
			sub.DisabledAt = s.cfg.Clock.Now().UTC().Truncate(time.Millisecond)
		}
	default:
		return apierr.Invalid("state", "must be %q or %q", stateActive, stateDisabled)
	}
	return nil
}

// errOrNil keeps a nil *apierr.Error from becoming a non-nil error.
func errOrNil(err *apierr.Error) error {
	if err == nil {
		return nil
	}
	return err
}

// health reads sub's figures (nil without a health log).
func (s *Server) health(c echo.Context, sub meta.Subscription) (*healthJSON, error) {
	if s.cfg.Health == nil {
		return nil, nil
	}
	ctx, cancel := s.storageCtx(c)
	defer cancel()
	h, err := s.cfg.Health.Health(ctx, sub.ID)
	if err != nil {
		return nil, err
	}
	return healthOut(h, sub, s.cfg.Clock.Now()), nil
}

func healthOut(h meta.Health, sub meta.Subscription, now time.Time) *healthJSON {
	out := &healthJSON{ConsecutiveFailures: h.ConsecutiveFailures, FlowControlLimit: h.FlowLimit}
	if out.FlowControlLimit == 0 || out.FlowControlLimit > sub.MaxInFlight {
		out.FlowControlLimit = sub.MaxInFlight // never pushed, or maxInFlight lowered since
	}
	out.SuccessRate5m, out.Attempts5m = rate(h.Rate(now, meta.HealthShortWindow))
	out.SuccessRate24h, out.Attempts24h = rate(h.Rate(now, meta.HealthLongWindow))
	out.LastSuccessAt = optTime(h.LastSuccessAt)
	out.FailingSince = optTime(h.FailingSince)
	if h.ThrottledUntil.After(now) {
		out.ThrottledUntil = optTime(h.ThrottledUntil)
	}
	if e := h.LastError; e != nil {
		out.LastError = &healthErrorJSON{Error: e.Error, Message: e.Message, At: formatTime(e.At)}
		if e.Status != 0 {
			st := e.Status
			out.LastError.Status = &st
		}
	}
	return out
}

// rate is the share of successful attempts (nil when there were none) and their number.
func rate(ok, failed int64) (*float64, int64) {
	n := ok + failed
	if n == 0 {
		return nil, 0
	}
	r := float64(ok) / float64(n)
	return &r, n
}

func optTime(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	v := formatTime(t)
	return &v
}

// resetHealth starts a new failure window for a resumed subscription, so the failures
// before its resume do not disable it again at once. A failure is logged: the window then
// resets at the endpoint's next success.
func (s *Server) resetHealth(c echo.Context, sub meta.Subscription) {
	if s.cfg.Health == nil {
		return
	}
	ctx, cancel := s.storageCtx(c)
	defer cancel()
	if err := s.cfg.Health.ResetHealthFailures(ctx, sub.ID); err != nil {
		s.cfg.Logger.Warn("resetting a resumed subscription's failure window", "subscription", sub.ID.String(), "err", err)
	}
}
