package api

import (
	"encoding/base64"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/endpoint"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/sdk/go/webhook"
)

// Push subscription settings (docs/push.md).
const (
	defaultBatchSize   = 10
	maxBatchSize       = 100
	maxBatchWindowMs   = 10000
	defaultMaxInFlight = 10
	maxMaxInFlight     = 100
	defaultPushTimeout = 30
	maxPushTimeout     = 60
	// secretOverlap is how long a rotated-out signing secret keeps signing.
	secretOverlap = 24 * time.Hour
	// attempts listing
	defaultAttempts = 20
	// Endpoint health (issue 37): disabled after 5 days of nothing but failures by default.
	defaultDisableAfter = 5 * 24 * 3600
	maxDisableAfter     = 30 * 24 * 3600
)

// Subscription states (endpoint health).
const (
	stateActive   = "active"
	stateDisabled = "disabled"
)

// Rate and keyed flow control (docs/push.md).
const (
	maxMessagesPerSecondHi = 100000
	maxParallelism         = 100
)

var subscriptionFields = []string{"endpoint", "batchSize", "batchWindowMs", "maxInFlight", "timeoutSeconds", "paused",
	"disableAfterSeconds", "state", "maxMessagesPerSecond", "flowControl",
	"signing", "auth", // token auth and asymmetric signatures (subauth.go)
}

var flowControlFields = []string{"keyAttribute", "parallelism", "messagesPerSecond"}

type subscriptionJSON struct {
	ID             string `json:"id"`
	Slug           string `json:"slug"`
	Queue          string `json:"queue"`
	Endpoint       string `json:"endpoint"`
	BatchSize      int    `json:"batchSize"`
	BatchWindowMs  int    `json:"batchWindowMs"`
	MaxInFlight    int    `json:"maxInFlight"`
	TimeoutSeconds int    `json:"timeoutSeconds"`
	Paused         bool   `json:"paused"`
	// Endpoint health (issue 37).
	DisableAfterSeconds int         `json:"disableAfterSeconds"`
	State               string      `json:"state"`
	DisabledReason      *string     `json:"disabledReason,omitempty"`
	DisabledAt          *string     `json:"disabledAt,omitempty"`
	Health              *healthJSON `json:"health,omitempty"`
	// Rate and keyed flow control.
	MaxMessagesPerSecond int              `json:"maxMessagesPerSecond"`
	FlowControl          *flowControlJSON `json:"flowControl,omitempty"`
	CreatedAt            string           `json:"createdAt"`
	UpdatedAt            string           `json:"updatedAt"`
	SigningSecret        *string          `json:"signingSecret,omitempty"`
	subAuthJSON
}

type flowControlJSON struct {
	KeyAttribute      string `json:"keyAttribute"`
	Parallelism       int    `json:"parallelism"`
	MessagesPerSecond int    `json:"messagesPerSecond"`
}

func subscriptionOut(s meta.Subscription, withSecret bool, now time.Time) subscriptionJSON {
	out := subscriptionJSON{
		ID: s.ID.String(), Slug: s.ID.Slug(ids.SubscriptionPrefix), Queue: s.QueueID.String(),
		Endpoint: s.Endpoint, BatchSize: s.BatchSize, BatchWindowMs: s.BatchWindowMs,
		MaxInFlight: s.MaxInFlight, TimeoutSeconds: s.TimeoutSeconds, Paused: s.Paused,
		CreatedAt: formatTime(s.CreatedAt), UpdatedAt: formatTime(s.UpdatedAt),
		DisableAfterSeconds: s.DisableAfterSeconds, State: stateActive,
		MaxMessagesPerSecond: s.MaxMessagesPerSecond,
	}
	if f := s.FlowControl; f.Keyed() {
		out.FlowControl = &flowControlJSON{KeyAttribute: f.KeyAttribute, Parallelism: f.Parallelism, MessagesPerSecond: f.MessagesPerSecond}
	}
	if s.Disabled {
		reason, at := s.DisabledReason, formatTime(s.DisabledAt)
		out.State, out.DisabledReason, out.DisabledAt = stateDisabled, &reason, &at
	}
	out.subAuthJSON = subAuthOut(s, now)
	if withSecret {
		secret := s.Secret
		out.SigningSecret = &secret
	}
	return out
}

// applySubscription validates and applies the settings present in o.
func (s *Server) applySubscription(o *object, sub *meta.Subscription) error {
	if o.has("endpoint") {
		ep, _, err := o.str("endpoint")
		if err != nil {
			return err
		}
		if verr := endpoint.Validate(ep, s.cfg.PushAllowPrivate); verr != nil {
			return apierr.Invalid("endpoint", "%s", verr.Error())
		}
		sub.Endpoint = ep
	}
	ints := []struct {
		name   string
		lo, hi int64
		dst    *int
	}{
		{"batchSize", 1, maxBatchSize, &sub.BatchSize},
		{"batchWindowMs", 0, maxBatchWindowMs, &sub.BatchWindowMs},
		{"maxInFlight", 1, maxMaxInFlight, &sub.MaxInFlight},
		{"timeoutSeconds", 1, maxPushTimeout, &sub.TimeoutSeconds},
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
	if v, ok, err := o.boolean("paused"); err != nil {
		return err
	} else if ok {
		sub.Paused = v
	}
	if err := s.applyHealthSettings(o, sub); err != nil {
		return err
	}
	if err := applyFlowControl(o, sub); err != nil {
		return err
	}
	return s.applySubAuth(o, sub)
}

// applyFlowControl validates and applies maxMessagesPerSecond and flowControl. A flowControl
// object replaces the whole setting (absent fields take their defaults); null turns it off.
func applyFlowControl(o *object, sub *meta.Subscription) error {
	if v, ok, err := o.integer("maxMessagesPerSecond", 0, maxMessagesPerSecondHi); err != nil {
		return err
	} else if ok {
		sub.MaxMessagesPerSecond = int(v)
	}
	if !o.has("flowControl") {
		return nil
	}
	if o.isNull("flowControl") {
		sub.FlowControl = meta.FlowControl{}
		return nil
	}
	fo, err := o.child("flowControl", flowControlFields...)
	if err != nil {
		return err
	}
	key, ok, err := fo.str("keyAttribute")
	if err != nil {
		return err
	}
	if !ok || !attrNamePattern.MatchString(key) {
		return apierr.Invalid(fo.path("keyAttribute"), "is required: the name of the message attribute whose value is the key (1-256 of A-Z a-z 0-9 _ . -)")
	}
	fc := meta.FlowControl{KeyAttribute: key, Parallelism: 1}
	if v, ok, err := fo.integer("parallelism", 1, maxParallelism); err != nil {
		return err
	} else if ok {
		fc.Parallelism = int(v)
	}
	if v, ok, err := fo.integer("messagesPerSecond", 0, maxMessagesPerSecondHi); err != nil {
		return err
	} else if ok {
		fc.MessagesPerSecond = int(v)
	}
	sub.FlowControl = fc
	return nil
}

func noSubscription(q meta.Queue) error {
	return apierr.New(apierr.NotFound, "queue %q has no push subscription", q.Name)
}

func (s *Server) createSubscription(c echo.Context) error {
	data, err := readBody(c)
	if err != nil {
		return err
	}
	o, aerr := parseObject(data, "", false, subscriptionFields...)
	if aerr != nil {
		return aerr
	}
	if !o.has("endpoint") {
		return apierr.Invalid("endpoint", "is required: the https URL to push to")
	}
	q, err := s.queue(c)
	if err != nil {
		return err
	}
	now := s.cfg.Clock.Now().UTC().Truncate(time.Millisecond)
	sub := meta.Subscription{
		ID: ids.New(), QueueID: q.ID, ProjectID: q.ProjectID,
		BatchSize: defaultBatchSize, MaxInFlight: defaultMaxInFlight, TimeoutSeconds: defaultPushTimeout,
		Secret: webhook.NewSecret(), CreatedAt: now, UpdatedAt: now, DisableAfterSeconds: defaultDisableAfter,
	}
	if err := s.applySubscription(o, &sub); err != nil {
		return err
	}
	ctx, cancel := s.storageCtx(c)
	defer cancel()
	if err := s.createSubscriptionWithin(ctx, sub); err != nil {
		switch apierr.CodeOf(err) {
		case apierr.SubscriptionExists:
			return apierr.New(apierr.SubscriptionExists, "queue %q already has a push subscription; change it with PATCH or delete it first", q.Name)
		case apierr.NotFound:
			return apierr.New(apierr.NotFound, "no queue %q in this project", c.Param("queue"))
		}
		return err
	}
	sub.Version = 1
	s.pushChanged(ctx, q.ID)
	return c.JSON(http.StatusCreated, subscriptionOut(sub, true, s.cfg.Clock.Now()))
}

// subscription resolves the {queue} path value and reads its subscription.
func (s *Server) subscription(c echo.Context) (meta.Queue, meta.Subscription, error) {
	q, err := s.queue(c)
	if err != nil {
		return q, meta.Subscription{}, err
	}
	ctx, cancel := s.storageCtx(c)
	defer cancel()
	sub, err := s.cfg.Subscriptions.GetSubscription(ctx, q.ID)
	if apierr.CodeOf(err) == apierr.NotFound || (err == nil && sub.ProjectID != q.ProjectID) {
		return q, meta.Subscription{}, noSubscription(q)
	}
	return q, sub, err
}

func (s *Server) getSubscription(c echo.Context) error {
	_, sub, err := s.subscription(c)
	if err != nil {
		return err
	}
	out := subscriptionOut(sub, false, s.cfg.Clock.Now())
	if out.Health, err = s.health(c, sub); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

// changeSubscription re-reads and re-applies change until it lands on the current version.
func (s *Server) changeSubscription(c echo.Context, change func(sub *meta.Subscription) error) (meta.Subscription, error) {
	ctx, cancel := s.storageCtx(c)
	defer cancel()
	for attempt := 0; ; attempt++ {
		q, sub, err := s.subscription(c)
		if err != nil {
			return sub, err
		}
		if err := change(&sub); err != nil {
			return sub, err
		}
		sub.UpdatedAt = s.cfg.Clock.Now().UTC().Truncate(time.Millisecond)
		out, err := s.cfg.Subscriptions.UpdateSubscription(ctx, sub)
		if errors.Is(err, meta.ErrSubscriptionConflict) && attempt < 5 {
			continue
		}
		if apierr.CodeOf(err) == apierr.NotFound {
			return out, noSubscription(q)
		}
		if err == nil {
			s.pushChanged(ctx, q.ID)
		}
		return out, err
	}
}

func (s *Server) updateSubscription(c echo.Context) error {
	data, err := readBody(c)
	if err != nil {
		return err
	}
	o, aerr := parseObject(data, "", false, subscriptionFields...)
	if aerr != nil {
		return aerr
	}
	var resumed bool
	out, err := s.changeSubscription(c, func(sub *meta.Subscription) error {
		was := sub.Disabled
		err := s.applySubscription(o, sub)
		resumed = was && !sub.Disabled
		return err
	})
	if err != nil {
		return err
	}
	if resumed {
		s.resetHealth(c, out)
	}
	return c.JSON(http.StatusOK, subscriptionOut(out, false, s.cfg.Clock.Now()))
}

func (s *Server) rotateSecret(c echo.Context) error {
	data, err := readBody(c)
	if err != nil {
		return err
	}
	o, aerr := parseObject(data, "", true)
	if aerr != nil {
		return aerr
	}
	for k := range o.fields {
		return apierr.Invalid(k, "unknown field %q: rotate-secret takes no settings", k)
	}
	out, err := s.changeSubscription(c, func(sub *meta.Subscription) error {
		rotate(sub, s.cfg.Clock.Now().UTC().Truncate(time.Millisecond))
		return nil
	})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, subscriptionOut(out, true, s.cfg.Clock.Now()))
}

// rotate makes a new signing secret (docs/push.md) and, for ed25519 signing, a new key pair too:
// the replaced secret and private key keep signing beside the new ones for secretOverlap, so
// each push carries both signatures and a receiver switches keys without a rejected push. A
// second rotation within the overlap retires the oldest at once.
func rotate(sub *meta.Subscription, now time.Time) {
	sub.PreviousSecret, sub.Secret = sub.Secret, webhook.NewSecret()
	if sub.Signing == meta.SigningEd25519 {
		sub.PreviousSigningPrivateKey = sub.SigningPrivateKey
		sub.SigningPublicKey, sub.SigningPrivateKey = webhook.NewKeyPair()
	}
	sub.PreviousExpiresAt = now.Add(secretOverlap)
}

func (s *Server) deleteSubscription(c echo.Context) error {
	q, _, err := s.subscription(c)
	if err != nil {
		return err
	}
	ctx, cancel := s.storageCtx(c)
	defer cancel()
	if err := s.cfg.Subscriptions.DeleteSubscription(ctx, q.ID); err != nil {
		if apierr.CodeOf(err) == apierr.NotFound {
			return noSubscription(q)
		}
		return err
	}
	s.pushChanged(ctx, q.ID)
	return c.NoContent(http.StatusNoContent)
}

type attemptJSON struct {
	At         string   `json:"at"`
	AttemptID  string   `json:"attemptId"`
	MessageIDs []string `json:"messageIds"`
	StatusCode *int     `json:"statusCode"`
	LatencyMs  int64    `json:"latencyMs"`
	Outcome    string   `json:"outcome"`
	Error      *string  `json:"error"`
	Detail     *string  `json:"detail,omitempty"`
}

func (s *Server) listAttempts(c echo.Context) error {
	limit := defaultAttempts
	if v := c.QueryParam("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > meta.AttemptsKept {
			return apierr.Invalid("limit", "must be an integer from 1 to %d", meta.AttemptsKept)
		}
		limit = n
	}
	_, sub, err := s.subscription(c)
	if err != nil {
		return err
	}
	after, err := decodeAttemptsCursor(c.QueryParam("cursor"))
	if err != nil {
		return err
	}
	var as []meta.Attempt
	if s.cfg.Attempts != nil {
		ctx, cancel := s.storageCtx(c)
		defer cancel()
		// The whole log (it is short) is read, so a page knows whether another follows it.
		if as, err = s.cfg.Attempts.Recent(ctx, sub.ID, meta.AttemptsKept); err != nil {
			return err
		}
	}
	// Newest first by the attempt's time: concurrent attempts reach the log in the order their
	// settlements end, which need not be the order they were made.
	slices.SortStableFunc(as, func(a, b meta.Attempt) int { return b.At.Compare(a.At) })
	as, next := pageAttempts(as, after, limit)
	out := make([]attemptJSON, len(as))
	for i, a := range as {
		out[i] = attemptJSON{At: formatTime(a.At), AttemptID: a.AttemptID, MessageIDs: a.MessageIDs, LatencyMs: a.LatencyMs, Outcome: a.Outcome}
		if out[i].MessageIDs == nil {
			out[i].MessageIDs = []string{}
		}
		if a.StatusCode != 0 {
			code := a.StatusCode
			out[i].StatusCode = &code
		}
		if a.Error != "" {
			e := a.Error
			out[i].Error = &e
		}
		if a.Detail != "" {
			d := a.Detail
			out[i].Detail = &d
		}
	}
	return c.JSON(http.StatusOK, map[string]any{"attempts": out, "nextCursor": cursorOut(next)})
}

// pageAttempts returns the page of the log (newest first) after the attempt named after, and
// the cursor of the page that follows ("" when none). An attempt no longer in the log (it
// was trimmed, being the oldest) ends the listing: everything older went with it.
func pageAttempts(as []meta.Attempt, after string, limit int) ([]meta.Attempt, string) {
	if after != "" {
		i := slices.IndexFunc(as, func(a meta.Attempt) bool { return a.AttemptID == after })
		if i < 0 {
			return nil, ""
		}
		as = as[i+1:]
	}
	if len(as) <= limit {
		return as, ""
	}
	as = as[:limit]
	return as, base64.RawURLEncoding.EncodeToString([]byte(attemptsCursorPrefix + as[limit-1].AttemptID))
}

const attemptsCursorPrefix = "a|"

func decodeAttemptsCursor(v string) (string, error) {
	if v == "" {
		return "", nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(v)
	id, ok := strings.CutPrefix(string(raw), attemptsCursorPrefix)
	if err != nil || !ok || id == "" {
		return "", apierr.Invalid("cursor", "malformed cursor")
	}
	return id, nil
}
