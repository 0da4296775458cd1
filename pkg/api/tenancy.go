package api

import (
	"context"
	"net/http"
	"slices"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/tenancy"
)

// StoredBytesReader reads a project's stored payload bytes (the engine keeps the count).
type StoredBytesReader interface {
	StoredBytes(ctx context.Context, project ids.ID) (int64, error)
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
