// Package api is the HTTP API of the service (docs/api-tour.md) on echo v4: routing,
// authentication, request validation and the JSON error model. It holds no state of its own:
// messages live in an engine.Engine and metadata in a Metadata store (the API tier's cache in front
// of DynamoDB, or the embedded store).
package api

import (
	"bytes"
	"context"
	"errors"
	"github.com/queueshq/queues/pkg/pushauth"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/auth"
	"github.com/queueshq/queues/pkg/clock"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/receipt"
	"github.com/queueshq/queues/pkg/service"
	"github.com/queueshq/queues/pkg/telemetry"
	"github.com/queueshq/queues/pkg/tenancy"
)

// MaxRequestBytes bounds a request body (docs/api-tour.md: 3 MiB per request).
const MaxRequestBytes = service.MaxRequestBytes

// Metadata is the metadata the API reads and writes (service.Metadata).
type Metadata = service.Metadata

// Limiter decides per-queue rate limits shared by all replicas (service.Limiter).
type Limiter = service.Limiter

// Rates are per-queue request rate limits (service.Rates).
type Rates = service.Rates

// DefaultRates are the per-queue request rates' defaults (docs/configuration.md).
var DefaultRates = service.DefaultRates

// Config wires the API to its dependencies.
type Config struct {
	Engine   engine.Engine
	Meta     Metadata
	Auth     *auth.Authority
	Receipts *receipt.Signer
	Limiter  Limiter // nil: no rate limits
	// Rates are the per-queue limits the Limiter applies. Zero Rates are DefaultRates, decided
	// here so that no caller building a Config repeats it; a zero field of other Rates leaves
	// that operation unlimited.
	Rates  Rates
	Clock  clock.Clock
	Logger *slog.Logger
	// Registry receives the API's metrics (served by the admin listener, pkg/adminhttp, never
	// on the public port).
	Registry prometheus.Registerer
	// Dependencies are the backends /readyz checks; a failing one is named in the answer.
	Dependencies []Dependency
	// Draining is closed when the server shuts down: waiting receives answer at once.
	Draining <-chan struct{}
	// StorageTimeout bounds one request's storage work (default 10 s), so an unreachable
	// backend answers 503 instead of hanging.
	StorageTimeout time.Duration

	// Subscriptions keeps push subscriptions; nil: the subscription routes are not served.
	Subscriptions meta.SubscriptionStore
	// Attempts is the pusher fleet's attempts log (nil: always empty).
	Attempts meta.AttemptLog
	// Health is the pusher fleet's endpoint health log (nil: no figures).
	Health meta.HealthLog
	// PushAllowPrivate accepts plain http and private or loopback push endpoints
	// (QUEUES_PUSH_ALLOW_PRIVATE; development and tests).
	PushAllowPrivate bool
	// PushTokens signs the bearer JWTs of oidc subscriptions and publishes their keys at
	// /.well-known/jwks.json (nil: no public URL configured; auth type "oidc" is refused).
	PushTokens *pushauth.Ring
	// PushChanged, when set, announces a changed subscription (its queue id) to the pushers.
	PushChanged func(ctx context.Context, queue ids.ID)
	// ForgedHandles limits invalid receipt handles per source address (zero: the default).
	ForgedHandles ForgedHandleLimit
	// TrustedProxies are the proxies whose X-Forwarded-For names a request's source
	// (QUEUES_TRUSTED_PROXIES; source.go); empty: the TCP peer is the source.
	TrustedProxies TrustedProxies

	// Tenancy keeps project limits, counts and usage (tenancy.go); nil: the defaults apply
	// and nothing is counted against them.
	Tenancy meta.TenancyStore
	// DefaultLimits are the limits of projects without their own (zero: tenancy.Defaults).
	DefaultLimits tenancy.Limits
	// Parking bounds each project's parked long polls (nil: no bound).
	Parking tenancy.Parking
	// Meter counts each project's use (nil: not metered).
	Meter *tenancy.Meter
	// StoredBytes reads a project's stored bytes for its usage (nil: 0).
	StoredBytes StoredBytesReader

	// MoveTasks keeps move tasks (movetasks.go); nil: the move-task routes are not served.
	MoveTasks meta.MoveTaskStore
	// MoveRunner, when set, is told of a task created here.
	MoveRunner MoveTaskRunner

	// Topics keeps topics and bindings and TopicEngine their logs, keyed state and binding
	// cursors (docs/topics.md, topics.go); with either nil the topic and source routes are not
	// served. Topics should be the metadata cache's (metacache.Topics): a publish resolves
	// its topic through it.
	Topics      meta.TopicStore
	TopicEngine engine.Topics

	// Streams bound the receive streams of this replica (streamguard.go; zero fields: the
	// defaults).
	Streams StreamLimits
}

// Dependency is a backend the API needs, checked by /readyz. Name is all a caller learns of a
// failure (never an address or error text): "redis", "metadata", "store".
type Dependency struct {
	Name  string
	Check func(ctx context.Context) error
}

// Server is the HTTP API.
type Server struct {
	cfg     Config
	e       *echo.Echo
	metrics *metrics
	tokens  tokenCache
	forged  *sourceBuckets
	stale   staleHandles
	// Service is the service layer this adapter serves /v1 over (service.go); the SQS door
	// is the other adapter over it.
	*service.Service
	// streams counts the open receive streams (streamguard.go).
	streams streamSlots
	// streamTicks, when set (tests), replaces each stream's check ticker; streamChecked is
	// called after each check a stream passed.
	streamTicks   func() <-chan time.Time
	streamChecked func()
	// streamDraining, when set (tests), is called once a draining send stream took its last
	// frame.
	streamDraining func()
}

// New builds the API's handler.
func New(cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.StorageTimeout <= 0 {
		cfg.StorageTimeout = 10 * time.Second
	}
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
	}
	if cfg.Rates == (Rates{}) {
		cfg.Rates = DefaultRates
	}
	if cfg.DefaultLimits == (tenancy.Limits{}) {
		cfg.DefaultLimits = tenancy.Defaults
	}
	cfg.Streams = cfg.Streams.withDefaults()
	if cfg.Draining == nil {
		cfg.Draining = make(chan struct{})
	}
	m := newMetrics(cfg.Registry)
	s := &Server{cfg: cfg, e: echo.New(), metrics: m, forged: newSourceBuckets(cfg.ForgedHandles, cfg.Clock.Now),
		Service: service.New(serviceConfig(cfg, m))}
	e := s.e
	e.HideBanner, e.HidePort = true, true
	// Always set: echo's default RealIP believes X-Forwarded-For from anyone.
	e.IPExtractor = cfg.TrustedProxies.clientIP
	e.HTTPErrorHandler = s.handleError
	e.Use(middleware.RequestIDWithConfig(middleware.RequestIDConfig{}))
	if telemetry.Enabled() {
		e.Use(s.traceRequests) // outside logRequests, which turns errors into answers
	}
	e.Use(s.recoverer, s.logRequests)
	s.routes()
	return s
}

// Handler returns the http.Handler.
func (s *Server) Handler() http.Handler { return s.e }

// Echo exposes the echo instance (for mounting extra routes).
func (s *Server) Echo() *echo.Echo { return s.e }

func (s *Server) routes() {
	e := s.e
	e.GET("/healthz", func(c echo.Context) error { return c.JSON(http.StatusOK, map[string]string{"status": "ok"}) })
	e.GET("/readyz", s.readyz)
	e.GET("/.well-known/jwks.json", s.jwks)

	v1 := e.Group("/v1")
	op := s.require(scopeOperator)
	v1.POST("/projects", s.createProject, op)
	v1.GET("/projects", s.listProjects, op)
	v1.GET("/projects/:project", s.getProject, op)
	v1.PATCH("/projects/:project", s.updateProject, op)
	v1.GET("/projects/:project/usage", s.getProjectUsage, op)
	v1.GET("/project", s.getOwnProject, s.requireProject)
	v1.GET("/project/usage", s.getOwnUsage, s.requireProject)
	v1.POST("/projects/:project/tokens", s.createToken, op)
	v1.DELETE("/projects/:project/tokens/:token", s.revokeToken, op)
	v1.GET("/projects/:project/tokens/:token/sqs-credentials", s.sqsCredentials, op)

	admin, read := s.require(auth.ScopeQueuesAdmin), s.require(auth.ScopeQueuesRead)
	v1.POST("/queues", s.createQueue, admin)
	v1.GET("/queues", s.listQueues, read)
	v1.GET("/queues/:queue", s.getQueue, read)
	v1.PATCH("/queues/:queue", s.updateQueue, admin)
	v1.DELETE("/queues/:queue", s.deleteQueue, admin)
	v1.POST("/queues/:queue/purge", s.purgeQueue, admin)
	v1.POST("/queues/:queue/messages", s.send, s.require(auth.ScopeMessagesSend))
	v1.GET("/queues/:queue/send-stream", s.sendStream, s.require(auth.ScopeMessagesSend)) // sendstream.go
	v1.DELETE("/queues/:queue/messages/:message", s.deleteMessage, s.require(auth.ScopeMessagesSend))
	v1.POST("/queues/:queue/receive", s.receive, s.require(auth.ScopeMessagesReceive))
	v1.GET("/queues/:queue/stream", s.receiveStream, s.require(auth.ScopeMessagesReceive))
	v1.GET("/queues/:queue/messages", s.browse, read)
	v1.GET("/queues/:queue/groups", s.listGroups, read)
	v1.GET("/queues/:queue/consumers", s.listConsumers, read)
	v1.DELETE("/queues/:queue/groups/:group", s.purgeGroup, admin)
	v1.POST("/queues/:queue/groups/:group/release", s.releaseGroup, admin)
	if s.cfg.MoveTasks != nil {
		v1.POST("/queues/:queue/move-tasks", s.startMoveTask, admin)
		v1.GET("/queues/:queue/move-tasks", s.listMoveTasks, read)
		v1.GET("/queues/:queue/move-tasks/:task", s.getMoveTask, read)
		v1.POST("/queues/:queue/move-tasks/:task/cancel", s.cancelMoveTask, admin)
	}
	if s.cfg.Subscriptions != nil {
		v1.POST("/queues/:queue/subscription", s.createSubscription, admin)
		v1.GET("/queues/:queue/subscription", s.getSubscription, read)
		v1.PATCH("/queues/:queue/subscription", s.updateSubscription, admin)
		v1.DELETE("/queues/:queue/subscription", s.deleteSubscription, admin)
		v1.POST("/queues/:queue/subscription/rotate-secret", s.rotateSecret, admin)
		v1.GET("/queues/:queue/subscription/attempts", s.listAttempts, read)
	}

	if s.cfg.Topics != nil && s.cfg.TopicEngine != nil {
		s.topicRoutes(v1, admin, read)
		if s.cfg.MoveTasks != nil {
			s.replayRoutes(v1, admin, read) // replays.go
		}
	}

	v1.POST("/receipts/ack", s.ack)
	v1.POST("/receipts/visibility", s.changeVisibility)
	v1.POST("/receipts/dead-letter", s.deadLetter)
	v1.POST("/receipts/cancel", s.cancel)
}

func (s *Server) readyz(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), 2*time.Second)
	defer cancel()
	var down []string
	for _, d := range s.cfg.Dependencies {
		if err := d.Check(ctx); err != nil {
			down = append(down, d.Name)
			s.cfg.Logger.Warn("not ready", "dependency", d.Name, "err", err, "request_id", requestID(c))
		}
	}
	if len(down) == 0 {
		return c.JSON(http.StatusOK, map[string]string{"status": "ready"})
	}
	c.Response().Header().Set("Retry-After", "1")
	return c.JSON(http.StatusServiceUnavailable, map[string]errorBody{"error": {
		Code:    apierr.Unavailable,
		Message: "not ready: " + strings.Join(down, ", ") + " unavailable",
		Details: map[string]any{"dependencies": down, "requestId": requestID(c)},
	}})
}

func requestID(c echo.Context) string { return c.Response().Header().Get(echo.HeaderXRequestID) }

// Answers of these codes carry a fixed message: their causes (Redis or DynamoDB error text,
// addresses, script names) are for the log, found there by the request id the answer carries.
const (
	unavailableMessage = "the service is temporarily unavailable; retry after the Retry-After delay"
	internalMessage    = "internal error"
)

// errorBody is the inner error object of the error model.
type errorBody struct {
	Code    apierr.Code    `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
}

func bodyOf(e *apierr.Error) errorBody {
	b := errorBody{Code: e.Code, Message: e.Message}
	switch e.Code { // also inside batch results, where one entry's failure is reported
	case apierr.Internal:
		b.Message = internalMessage
	case apierr.Unavailable:
		b.Message = unavailableMessage
	}
	if e.Field != "" || len(e.Details) > 0 {
		b.Details = map[string]any{}
		for k, v := range e.Details {
			b.Details[k] = v
		}
		if e.Field != "" {
			b.Details["field"] = e.Field
		}
	}
	return b
}

// errInvalidState answers a browse of an unknown state (pkg/service words it for both doors).
var errInvalidState = service.ErrInvalidState

func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	ae := refusal(err)
	var he *echo.HTTPError
	switch {
	case ae != nil:
	case errors.As(err, &ae):
	case errors.As(err, &he):
		ae = fromEcho(he)
	case errors.Is(err, context.Canceled) && c.Request().Context().Err() != nil:
		// The client went away (or the server is stopping): nobody reads this answer.
		ae = apierr.New(apierr.Unavailable, "request cancelled")
	case errors.Is(err, context.DeadlineExceeded):
		ae = apierr.New(apierr.Unavailable, "storage did not answer in time; retry").WithRetryAfter(time.Second)
	default:
		ae = apierr.As(err)
	}
	switch ae.Code {
	case apierr.Internal:
		s.cfg.Logger.Error("internal error", "err", err, "route", c.Path(), "request_id", requestID(c))
		ae = &apierr.Error{Code: apierr.Internal, Message: internalMessage, Details: map[string]any{"requestId": requestID(c)}}
	case apierr.Unavailable:
		s.cfg.Logger.Warn("unavailable", "err", err, "route", c.Path(), "request_id", requestID(c))
		ae = &apierr.Error{Code: apierr.Unavailable, Message: unavailableMessage, RetryAfter: max(ae.RetryAfter, time.Second),
			Details: map[string]any{"requestId": requestID(c)}}
	}
	if ae.RetryAfter > 0 {
		secs := int((ae.RetryAfter + time.Second - 1) / time.Second)
		c.Response().Header().Set("Retry-After", strconv.Itoa(max(secs, 1)))
	}
	_ = c.JSON(ae.Code.Status(), map[string]errorBody{"error": bodyOf(ae)})
}

func fromEcho(he *echo.HTTPError) *apierr.Error {
	msg := http.StatusText(he.Code)
	switch he.Code {
	case http.StatusNotFound:
		return apierr.New(apierr.NotFound, "no such route")
	case http.StatusMethodNotAllowed:
		return apierr.New(apierr.MethodNotAllowed, "method not allowed on this route")
	case http.StatusRequestEntityTooLarge:
		return apierr.New(apierr.PayloadTooLarge, "the request body is over %d bytes", MaxRequestBytes)
	case http.StatusUnsupportedMediaType:
		return apierr.New(apierr.UnsupportedMediaType, "send application/json")
	case http.StatusBadRequest:
		return apierr.New(apierr.InvalidArgument, "%s", msg)
	}
	if he.Code >= 400 && he.Code < 500 {
		return apierr.New(apierr.InvalidArgument, "%s", msg)
	}
	return apierr.New(apierr.Internal, "internal error")
}

func (s *Server) recoverer(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		defer func() {
			if r := recover(); r != nil {
				s.cfg.Logger.Error("panic", "panic", r, "path", c.Path(), "request_id", c.Response().Header().Get(echo.HeaderXRequestID))
				err = apierr.New(apierr.Internal, "internal error")
			}
		}()
		return next(c)
	}
}

func (s *Server) logRequests(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		if err != nil {
			c.Error(err)
		}
		route := c.Path()
		if route == "" {
			route = "unmatched"
		}
		status := c.Response().Status
		method := methodLabel(c.Request().Method)
		s.metrics.requests.WithLabelValues(method, route, strconv.Itoa(status)).Inc()
		s.metrics.latency.WithLabelValues(method, route).Observe(time.Since(start).Seconds())
		s.cfg.Logger.LogAttrs(c.Request().Context(), slog.LevelInfo, "request",
			slog.String("request_id", c.Response().Header().Get(echo.HeaderXRequestID)),
			slog.String("method", method), slog.String("route", route),
			slog.Int("status", status), slog.Duration("duration", time.Since(start)))
		return nil
	}
}

// readBody reads a JSON request body (at most MaxRequestBytes). A non-empty body must be
// declared application/json.
func readBody(c echo.Context) ([]byte, error) {
	r := c.Request()
	if r.ContentLength > MaxRequestBytes {
		return nil, apierr.New(apierr.PayloadTooLarge, "the request body is over %d bytes", MaxRequestBytes)
	}
	data, err := readUpTo(http.MaxBytesReader(c.Response(), r.Body, MaxRequestBytes), r.ContentLength)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, apierr.New(apierr.PayloadTooLarge, "the request body is over %d bytes", MaxRequestBytes)
		}
		return nil, apierr.New(apierr.InvalidArgument, "could not read the request body")
	}
	if len(bytes.TrimSpace(data)) > 0 {
		ct := r.Header.Get(echo.HeaderContentType)
		mt, _, _ := strings.Cut(ct, ";")
		if mt = strings.TrimSpace(strings.ToLower(mt)); mt != "application/json" && !strings.HasSuffix(mt, "+json") {
			return nil, apierr.New(apierr.UnsupportedMediaType, "the request body must be application/json, not %q", ct)
		}
	}
	return data, nil
}

// storageCtx bounds a request's storage work.
func (s *Server) storageCtx(c echo.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(c.Request().Context(), s.cfg.StorageTimeout)
}

func formatTime(t time.Time) string { return clock.Wire(t) }

func formatTimePtr(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := formatTime(*t)
	return &s
}
