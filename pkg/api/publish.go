package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/service"
)

// Publish (docs/topics.md): a send's body and per-message failures, each message
// appended to the topic's log at the next sequence.

type publishOK struct {
	Index     int    `json:"index"`
	MessageID string `json:"messageId"`
	Sequence  uint64 `json:"sequence"`
	Duplicate bool   `json:"duplicate"`
}

// publishFields are the fields a published message may have. Any other (a send's
// delaySeconds, deliverAt, priority, barrier, traceparent) fails the message naming it.
var publishFields = []string{"body", "attributes", "groupId", "dedupId", "key", "merge"}

// parsePublishMessage validates one message of a publish; errors name fields under prefix
// (validated: as for parseMessage).
func parsePublishMessage(raw json.RawMessage, validated bool, prefix string, fifo bool) (engine.PublishMessage, *apierr.Error) {
	var m engine.PublishMessage
	o, err := parseObjectIn(raw, validated, prefix, false, publishFields...)
	if err != nil {
		return m, err
	}
	key, hasKey, err := o.str("key")
	if err != nil {
		return m, err
	}
	if hasKey && (len(key) > engine.MaxKeyLength || !groupIDPattern.MatchString(key)) {
		return m, apierr.Invalid(o.path("key"), "must be 1 to %d characters from ! to ~ (no spaces)", engine.MaxKeyLength)
	}
	m.Key = key
	switch {
	case o.has("body") && o.isNull("body") && hasKey:
		m.Delete = true // deletes the key's state
	case o.has("body") && o.isNull("body"):
		return m, apierr.Invalid(o.path("body"), "may be null only with a key (a null body deletes the key's state)")
	default:
		body, ok, err := o.str("body")
		if err != nil {
			return m, err
		}
		if !ok || body == "" {
			return m, apierr.Invalid(o.path("body"), "must be a non-empty string")
		}
		m.Body = body
	}
	if m.Attributes, err = parseAttributes(o, len(m.Body), engine.MaxMessageBytes); err != nil {
		return m, err
	}
	if err := parsePublishMerge(o, &m); err != nil {
		return m, err
	}
	return m, parseFIFOIDs(o, &m.Message, fifo, "topics")
}

// parsePublishMerge reads merge: "replace" (the default) or "patch", which needs a key and a
// JSON object body.
func parsePublishMerge(o *object, m *engine.PublishMessage) *apierr.Error {
	merge, ok, err := o.str("merge")
	if err != nil || !ok {
		return err
	}
	switch {
	case m.Key == "":
		return apierr.Invalid(o.path("merge"), "needs key: merge says how a keyed publish changes the key's state")
	case merge == "replace":
		m.Merge = engine.MergeReplace
	case merge != "patch":
		return apierr.Invalid(o.path("merge"), "must be \"replace\" or \"patch\"")
	case m.Delete:
		return apierr.Invalid(o.path("merge"), "a null body deletes the key's state; it has nothing to patch with")
	default:
		switch engine.CheckPatch(m.Body) {
		case engine.ErrPatchNotObject:
			return apierr.Invalid(o.path("body"), "merge \"patch\" needs a JSON object body (RFC 7396 JSON Merge Patch)")
		case engine.ErrPatchTooDeep:
			return apierr.Invalid(o.path("body"), "merge \"patch\" needs a JSON object nesting objects and arrays at most %d deep; this body nests deeper", engine.MaxPatchDepth)
		}
		m.Merge = engine.MergePatch
	}
	return nil
}

// parseFIFOIDs reads groupId (required on fifo) and dedupId (optional on fifo); neither
// exists elsewhere. what names the resource in errors ("queues", "topics").
func parseFIFOIDs(o *object, m *engine.Message, fifo bool, what string) *apierr.Error {
	for _, f := range []struct {
		name string
		dst  *string
	}{{"groupId", &m.GroupID}, {"dedupId", &m.DedupID}} {
		v, ok, err := o.str(f.name)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		if !fifo {
			return apierr.Invalid(o.path(f.name), "%s exists only on fifo %s", f.name, what)
		}
		if !groupIDPattern.MatchString(v) {
			return apierr.Invalid(o.path(f.name), "must be 1 to 128 characters from ! to ~ (no spaces)")
		}
		*f.dst = v
	}
	if fifo && m.GroupID == "" {
		return apierr.Invalid(o.path("groupId"), "is required on a fifo %s", strings.TrimSuffix(what, "s"))
	}
	return nil
}

// parsePublish reads a publish's body: the messages to publish with their indexes in the
// request, and the messages that failed validation.
func parsePublish(data []byte, fifo bool) (msgs []engine.PublishMessage, index []int, failed []sendFailed, err *apierr.Error) {
	o, err := parseObject(data, "", false, "messages")
	if err != nil {
		return nil, nil, nil, err
	}
	items, ok, err := o.array("messages", 1, engine.MaxBatch)
	if err != nil {
		return nil, nil, nil, err
	}
	if !ok {
		return nil, nil, nil, apierr.Invalid("messages", "is required: 1 to %d messages", engine.MaxBatch)
	}
	failed = []sendFailed{}
	for i, raw := range items {
		m, err := parsePublishMessage(raw, o.valid, "messages["+strconv.Itoa(i)+"]", fifo)
		if err != nil {
			failed = append(failed, sendFailed{Index: i, Error: bodyOf(err)})
			continue
		}
		msgs, index = append(msgs, m), append(index, i)
	}
	return msgs, index, failed, nil
}

func (s *Server) publish(c echo.Context) error {
	t, err := s.topic(c)
	if err != nil {
		return err
	}
	// As a send: the project's byte rate before the body is read. A topic is no queue: a
	// full project is refused by the engine's call.
	adm, err := s.admitSend(c, service.SendRequest{Project: t.ProjectID, Bytes: c.Request().ContentLength, Counted: true})
	if err != nil {
		return err
	}
	data, err := readBody(c)
	if err != nil {
		return err
	}
	if err := s.chargeRead(c, adm, len(data)); err != nil {
		return err
	}
	var p PublishBatch
	var aerr *apierr.Error
	if p.Messages, p.index, p.failed, aerr = parsePublish(data, t.Type == string(engine.FIFO)); aerr != nil {
		return aerr
	}
	ctx, cancel := s.storageCtx(c)
	defer cancel()
	if err := s.Publish(ctx, t, &p); err != nil {
		return err
	}
	// Metered once the answer is written, as a send is.
	defer adm.MeterPublished(p.Messages, p.Results)
	out := make([]publishOK, len(p.Results))
	for i, r := range p.Results {
		out[i] = publishOK{Index: p.index[i], MessageID: r.MessageID.String(), Sequence: r.Sequence, Duplicate: r.Duplicate}
	}
	slices.SortFunc(p.failed, func(a, b sendFailed) int { return a.Index - b.Index })
	return c.JSON(http.StatusOK, map[string]any{"messages": out, "failed": p.failed})
}

// PublishBatch is one publish request's valid messages and, once published, their results.
type PublishBatch struct {
	// Messages are the messages to publish; Publish removes those the engine refuses.
	Messages []engine.PublishMessage
	// Results are the outcomes of Messages, in order.
	Results []engine.PublishResult
	// index holds each message's place in the request; failed the messages that failed.
	index  []int
	failed []sendFailed
}

// Publish appends a batch's validated messages to the topic's log under the project's byte
// quota. The engine takes a publish whole or not at all: a message it refuses on its own (a
// patch of a key's state that is no JSON object) joins the failed ones and the rest are
// published without it.
func (s *Server) Publish(ctx context.Context, t meta.Topic, p *PublishBatch) error {
	if p.index == nil {
		p.index = make([]int, len(p.Messages))
		for i := range p.index {
			p.index[i] = i
		}
	}
	if len(p.Messages) == 0 {
		return nil
	}
	et := engineTopic(t)
	lim, err := s.effectiveLimits(ctx, t.ProjectID)
	if err != nil {
		return err
	}
	et.MaxStoredBytes = lim.MaxStoredBytes
	for len(p.Messages) > 0 {
		res, err := s.cfg.TopicEngine.Publish(ctx, et, p.Messages)
		if err == nil {
			s.metrics.messages.WithLabelValues("published").Add(float64(len(res)))
			p.Results = res
			return nil
		}
		i, ae := refusedMessage(err, len(p.Messages))
		if i < 0 {
			return err
		}
		p.failed = append(p.failed, sendFailed{Index: p.index[i], Error: bodyOf(ae.WithPrefix("messages[" + strconv.Itoa(p.index[i]) + "]"))})
		p.Messages = slices.Delete(slices.Clone(p.Messages), i, i+1)
		p.index = slices.Delete(slices.Clone(p.index), i, i+1)
	}
	return nil
}

// refusedMessage finds which of n messages an engine's refusal of a publish names (-1 when
// it names none): a *engine.Refusal with the message's Index (a patch of a key's state that
// is no JSON object), or an invalid_argument naming messages[i].<field>. The error it
// answers names the field relative to the message.
func refusedMessage(err error, n int) (int, *apierr.Error) {
	var r *engine.Refusal
	if errors.As(err, &r) {
		ae := engineRefusal(err)
		switch {
		case errors.Is(err, engine.ErrPatchWaitingNotObject):
			ae = apierr.Invalid("body", "merge \"patch\" needs JSON objects; the key's state is not one")
		case errors.Is(err, engine.ErrPatchWaitingTooDeep):
			ae = apierr.Invalid("body", "merge \"patch\" needs JSON objects nesting at most %d deep; the key's state nests deeper", engine.MaxPatchDepth)
		}
		if r.Index < 0 || r.Index >= n || (ae.Code != apierr.InvalidArgument && ae.Code != apierr.PayloadTooLarge) {
			return -1, nil
		}
		c := *ae
		if _, rest, ok := strings.Cut(c.Field, "]"); ok && strings.HasPrefix(c.Field, "messages[") {
			c.Field = strings.TrimPrefix(rest, ".")
		}
		return r.Index, &c
	}
	ae := apierr.As(err)
	if ae.Code != apierr.InvalidArgument || !strings.HasPrefix(ae.Field, "messages[") {
		return -1, nil
	}
	rest := strings.TrimPrefix(ae.Field, "messages[")
	end := strings.IndexByte(rest, ']')
	if end < 0 {
		return -1, nil
	}
	i, perr := strconv.Atoi(rest[:end])
	if perr != nil || i < 0 || i >= n {
		return -1, nil //nolint:nilerr // not an index: the error is no message's, the caller answers it whole
	}
	c := *ae
	c.Field = strings.TrimPrefix(rest[end+1:], ".")
	return i, &c
}
