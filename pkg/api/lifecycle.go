package api

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
)

// sendRules are what a send's messages are checked against: the queue's type and retention
// (a standard queue's per-message delay goes up to its retention,
// docs/lifecycle.md#long-delays-and-deliverat) and the time the send arrived (deliverAt is relative
// to it), and the queue's maxMessageBytes (0: the ceiling, engine.MaxMessageBytes).
type sendRules struct {
	fifo      bool
	retention time.Duration
	now       time.Time
	maxBytes  int
}

func (s *Server) sendRules(q meta.Queue) sendRules {
	return sendRules{
		maxBytes:  q.MaxMessageBytesOrDefault(),
		fifo:      q.Type == string(engine.FIFO),
		retention: time.Duration(q.RetentionSeconds) * time.Second,
		now:       s.cfg.Clock.Now(),
	}
}

// parseSchedule reads delaySeconds (fifo: 0 only; standard: up to the retention) or
// deliverAt (standard only; RFC 3339, at most the retention ahead; a time already past
// delivers at once, as a delay of 0 would: the sender's clock may be a little behind ours).
func parseSchedule(o *object, m *engine.Message, r sendRules) *apierr.Error {
	hi := int64(r.retention / time.Second)
	if r.fifo || hi < maxDelay {
		hi = maxDelay
	}
	if o.has("delaySeconds") && o.has("deliverAt") {
		return apierr.Invalid(o.path("deliverAt"), "give delaySeconds or deliverAt, not both")
	}
	if d, ok, err := o.integer("delaySeconds", 0, hi); err != nil {
		return err
	} else if ok {
		if r.fifo && d != 0 {
			return apierr.Invalid(o.path("delaySeconds"), "fifo queues take only the queue's delay; send 0 or leave it out")
		}
		dd := time.Duration(d) * time.Second
		m.Delay = &dd
	}
	v, ok, err := o.str("deliverAt")
	if err != nil || !ok {
		return err
	}
	if r.fifo {
		return apierr.Invalid(o.path("deliverAt"), "fifo queues take only the queue's delay")
	}
	at, perr := time.Parse(time.RFC3339Nano, v)
	if perr != nil {
		return apierr.Invalid(o.path("deliverAt"), "must be an RFC 3339 time such as 2026-01-02T15:04:05Z")
	}
	d := max(at.Sub(r.now), 0)
	if d > r.retention {
		return apierr.Invalid(o.path("deliverAt"), "is more than the queue's retention (%d seconds) ahead", int64(r.retention/time.Second))
	}
	d = d.Round(time.Millisecond)
	m.Delay = &d
	return nil
}

// parseConflation reads key and merge (docs/lifecycle.md#conflation-and-delta-publish; standard
// queues only). A "patch" body must be a JSON object.
func parseConflation(o *object, m *engine.Message, fifo bool) *apierr.Error {
	key, ok, err := o.str("key")
	if err != nil {
		return err
	}
	if ok {
		if fifo {
			return apierr.Invalid(o.path("key"), "fifo queues do not conflate: key exists only on standard queues")
		}
		if !groupIDPattern.MatchString(key) {
			return apierr.Invalid(o.path("key"), "must be 1 to %d characters from ! to ~ (no spaces)", engine.MaxKeyLength)
		}
		m.Key = key
	}
	merge, ok, err := o.str("merge")
	if err != nil || !ok {
		return err
	}
	switch {
	case m.Key == "" && !fifo:
		return apierr.Invalid(o.path("merge"), "needs key: merge says how a keyed send changes the waiting message")
	case m.Key == "":
		return apierr.Invalid(o.path("merge"), "fifo queues do not conflate")
	case merge == "replace":
		m.Merge = engine.MergeReplace
	case merge == "patch":
		switch engine.CheckPatch(m.Body) {
		case engine.ErrPatchNotObject:
			return apierr.Invalid(o.path("body"), "merge \"patch\" needs a JSON object body (RFC 7396 JSON Merge Patch)")
		case engine.ErrPatchTooDeep:
			return apierr.Invalid(o.path("body"), "merge \"patch\" needs a JSON object nesting objects and arrays at most %d deep; this body nests deeper", engine.MaxPatchDepth)
		}
		m.Merge = engine.MergePatch
	default:
		return apierr.Invalid(o.path("merge"), "must be \"replace\" or \"patch\"")
	}
	return nil
}

// deleteMessage removes one visible or delayed message
// (docs/lifecycle.md#delete-a-waiting-message): 204; 409 message_in_flight while a consumer holds
// it; 404 when the queue holds no such message.
func (s *Server) deleteMessage(c echo.Context) error {
	id, perr := ids.ParseUUID(c.Param("message"))
	if perr != nil {
		return apierr.Invalid("messageId", "must be a message id as a send answered it (a UUID)")
	}
	_, eq, err := s.target(c)
	if err != nil {
		return err
	}
	ctx, cancel := s.storageCtx(c)
	defer cancel()
	if err := s.cfg.Engine.DeleteMessage(ctx, eq, id); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
