package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/service"
)

type sendOK struct {
	Index     int    `json:"index"`
	MessageID string `json:"messageId"`
	Duplicate bool   `json:"duplicate"`
	Merged    bool   `json:"merged"`
	// SequenceNumber (fifo only) is the number a receive of the message reports.
	SequenceNumber seqNumber `json:"sequenceNumber,omitempty"`
}

// seqNumber is a fifo sequence number, a JSON decimal string (docs/fifo.md) as received messages
// carry it; kept as a number so that the send's hot path formats it into the answer's buffer
// (appendSendAnswer) instead of allocating a string. Sequence numbers start at 1: 0 is none.
type seqNumber uint64

// MarshalJSON writes the number as a decimal string.
func (n seqNumber) MarshalJSON() ([]byte, error) { return appendSeqNumber(nil, n), nil }

func appendSeqNumber(b []byte, n seqNumber) []byte {
	b = append(b, '"')
	b = strconv.AppendUint(b, uint64(n), 10)
	return append(b, '"')
}

type sendFailed struct {
	Index int       `json:"index"`
	Error errorBody `json:"error"`
}

// parseMessage validates one message of a send; errors name fields under prefix.
// validated: raw was split out of a body already checked whole (see parseObjectIn).
func parseMessage(raw json.RawMessage, validated bool, prefix string, r sendRules) (engine.Message, *apierr.Error) {
	var m engine.Message
	fifo := r.fifo
	o, err := parseObjectIn(raw, validated, prefix, false, "body", "attributes", "delaySeconds", "groupId", "dedupId", "traceparent",
		"key", "merge", "deliverAt", "barrier", "priority", "endGroup")
	if err != nil {
		return m, err
	}
	body, ok, err := o.str("body")
	if err != nil {
		return m, err
	}
	if !ok || body == "" {
		return m, apierr.Invalid(o.path("body"), "must be a non-empty string")
	}
	m.Body = body
	if m.Attributes, err = parseAttributes(o, len(body), r.maxBytes); err != nil {
		return m, err
	}
	if err := parseTraceparentField(o, &m); err != nil {
		return m, err
	}
	if err := parseSchedule(o, &m, r); err != nil {
		return m, err
	}
	if err := parseConflation(o, &m, fifo); err != nil {
		return m, err
	}
	for _, f := range []struct {
		name string
		dst  *string
	}{{"groupId", &m.GroupID}, {"dedupId", &m.DedupID}} {
		v, ok, err := o.str(f.name)
		if err != nil {
			return m, err
		}
		if !ok {
			continue
		}
		if !fifo {
			return m, apierr.Invalid(o.path(f.name), "%s exists only on fifo queues", f.name)
		}
		if !groupIDPattern.MatchString(v) {
			return m, apierr.Invalid(o.path(f.name), "must be 1 to 128 characters from ! to ~ (no spaces)")
		}
		*f.dst = v
	}
	if fifo && m.GroupID == "" {
		return m, apierr.Invalid(o.path("groupId"), "is required on a fifo queue")
	}
	if v, ok, err := o.boolean("barrier"); err != nil {
		return m, err
	} else if ok && v {
		if fifo {
			return m, apierr.Invalid(o.path("barrier"), "barrier messages exist only on standard queues")
		}
		m.Barrier = true
	}
	if err := parsePriority(o, &m, fifo); err != nil {
		return m, err
	}
	if err := parseEndGroup(o, &m, fifo); err != nil { // grouppolicy.go
		return m, err
	}
	return m, nil
}

// parseAttributes reads a message's optional "attributes" and checks the message's size
// (bodyBytes and the attributes' names and values) against limit, the queue's
// maxMessageBytes (0 or more than the ceiling: engine.MaxMessageBytes).
func parseAttributes(o *object, bodyBytes, limit int) (map[string]string, *apierr.Error) {
	if limit <= 0 || limit > engine.MaxMessageBytes {
		limit = engine.MaxMessageBytes
	}
	size := bodyBytes
	var attrs map[string]string
	if o.has("attributes") && !o.isNull("attributes") {
		ao, err := parseObjectIn(o.fields["attributes"], o.valid, o.path("attributes"), false, anyKey...)
		if err != nil {
			return nil, err
		}
		if len(ao.fields) > engine.MaxAttributes {
			return nil, apierr.Invalid(ao.prefix, "at most %d attributes, has %d", engine.MaxAttributes, len(ao.fields))
		}
		attrs = make(map[string]string, len(ao.fields))
		for name, v := range ao.fields {
			if !utf8.ValidString(name) || !attrNamePattern.MatchString(name) {
				return nil, apierr.Invalid(ao.prefix, "attribute name %q must be 1 to 256 of A-Z, a-z, 0-9, _, . and -", name)
			}
			val, err := parseString(v, ao.prefix+"."+name)
			if err != nil {
				return nil, err
			}
			attrs[name] = val
			size += len(name) + len(val)
		}
	}
	if size > limit {
		return nil, apierr.Field(apierr.PayloadTooLarge, o.prefix, "the message is %d bytes (body and attributes); the limit is %d", size, limit)
	}
	return attrs, nil
}

// parsePriority reads a message's priority (docs/delivery-options.md#priority): 0 to 9 on standard
// queues; a fifo queue takes only 0, its order being the group's.
func parsePriority(o *object, m *engine.Message, fifo bool) *apierr.Error {
	p, ok, err := o.integer("priority", 0, engine.MaxPriority)
	if err != nil || !ok {
		return err
	}
	if fifo && p != 0 {
		return apierr.Invalid(o.path("priority"), "priority exists only on standard queues")
	}
	m.Priority = int(p)
	return nil
}

// anyKey makes parseObject accept every key; the caller checks names itself.
var anyKey []string // nil

func (s *Server) send(c echo.Context) error {
	q, err := s.queue(c)
	if err != nil {
		return err
	}
	// Before the body: a send over the project's byte rate, or to a project at its
	// maxStoredBytes, costs the service no read (net/http drops the unread body, closing the
	// connection when it is large). The request rate was applied as it was authenticated.
	adm, err := s.admitSend(c, service.SendRequest{Project: q.ProjectID, Queue: &q, Bytes: c.Request().ContentLength, Counted: true})
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
	o, aerr := parseObject(data, "", false, "messages")
	if aerr != nil {
		return aerr
	}
	ctx, cancel := s.storageCtx(c)
	defer cancel()
	out, err := s.sendParsed(ctx, q, adm, o, sendTraceparent(c))
	if err != nil {
		return err
	}
	// Metered once the answer is written: a replica that dies before answering has not
	// counted a send the client never saw succeed.
	defer out.meter(adm)
	if len(out.failed) == 0 {
		return blob(c, http.StatusOK, func(b []byte) []byte { return appendSendAnswer(b, out.sent) })
	}
	return c.JSON(http.StatusOK, map[string]any{"messages": out.sent, "failed": out.failed})
}

// sendOutcome is what one send stored and refused: its answer's "messages" and "failed", and
// what its metering needs.
type sendOutcome struct {
	sent   []sendOK
	failed []sendFailed
	msgs   []engine.Message
	res    []engine.SendResult
}

// meter meters the stored messages of the admitted send.
func (o sendOutcome) meter(adm *service.AdmittedSend) {
	if len(o.res) > 0 {
		adm.MeterSent(o.msgs, o.res)
	}
}

// sendParsed is the one send path of every door that takes /v1's send body (POST
// .../messages and the send stream's frames), once adm admitted it: it validates o's
// "messages" (1 to MaxBatch), stamps tp (the caller's traceparent) on the messages that carry
// none, and stores the valid ones under the queue's send rate and the project's quotas. A
// message's own problem is reported in failed, by its index; err is the send's as a whole.
func (s *Server) sendParsed(ctx context.Context, q meta.Queue, adm *service.AdmittedSend, o *object, tp string) (sendOutcome, error) {
	out := sendOutcome{sent: []sendOK{}, failed: []sendFailed{}}
	items, ok, aerr := o.array("messages", 1, engine.MaxBatch)
	if aerr != nil {
		return out, aerr
	}
	if !ok {
		return out, apierr.Invalid("messages", "is required: 1 to %d messages", engine.MaxBatch)
	}
	rules := s.sendRules(q)
	msgs, index := make([]engine.Message, 0, len(items)), make([]int, 0, len(items))
	for i, raw := range items {
		m, err := parseMessage(raw, o.valid, messagePrefix(i), rules)
		if err != nil {
			out.failed = append(out.failed, sendFailed{Index: i, Error: bodyOf(err)})
			continue
		}
		msgs, index = append(msgs, m), append(index, i)
	}
	applyTraceparent(msgs, tp)
	if len(msgs) == 0 {
		// Nothing to store, but the request still counts against the rate limit.
		return out, s.QueueRate(ctx, q, "send")
	}
	res, err := s.Send(ctx, q, msgs)
	if err != nil {
		adm.NoteErr(err)
		return out, err
	}
	out.msgs, out.res = msgs, res
	out.sent = make([]sendOK, 0, len(res))
	storeFailed := false
	for i, r := range res {
		if r.Err != nil {
			// Others of the request were stored: this one is reported, not the whole request.
			out.failed = append(out.failed, sendFailed{Index: index[i], Error: bodyOf(sendErr(r.Err).WithPrefix(messagePrefix(index[i])))})
			storeFailed = true
			continue
		}
		out.sent = append(out.sent, sendOK{Index: index[i], MessageID: r.MessageID.String(), Duplicate: r.Duplicate, Merged: r.Merged,
			SequenceNumber: seqNumber(r.SequenceNumber)})
	}
	if storeFailed {
		slices.SortFunc(out.failed, func(a, b sendFailed) int { return a.Index - b.Index })
	}
	return out, nil
}

// messagePrefixes are the field prefixes of a send's messages, made once.
var messagePrefixes = func() []string {
	p := make([]string, engine.MaxBatch)
	for i := range p {
		p[i] = "messages[" + strconv.Itoa(i) + "]"
	}
	return p
}()

// messagePrefix is the field prefix of a send's i-th message ("messages[3]").
func messagePrefix(i int) string {
	if i < len(messagePrefixes) {
		return messagePrefixes[i]
	}
	return "messages[" + strconv.Itoa(i) + "]"
}

// sendErr is the error reported in `failed` for a message the engine could not store while
// it stored others: a storage failure, which a retry may get past, is `unavailable`.
func sendErr(err error) *apierr.Error {
	if ae := refusal(err); ae != nil {
		err = ae
	}
	var ae *apierr.Error
	if errors.As(err, &ae) && ae.Code != apierr.Internal && ae.Code != apierr.Unavailable {
		return ae
	}
	msg := "storage failed to store this message; retry it"
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		msg = "storage did not answer in time for this message; retry it"
	case ae != nil:
		msg = ae.Message + "; retry this message"
	}
	return apierr.New(apierr.Unavailable, "%s", msg)
}

type deadLetterJSON struct {
	SourceQueue string `json:"sourceQueue"`
	Reason      string `json:"reason"`
	At          string `json:"at"`
}

func deadLetterOut(d *engine.DeadLetterInfo) *deadLetterJSON {
	if d == nil {
		return nil
	}
	return &deadLetterJSON{SourceQueue: d.SourceQueue.String(), Reason: d.Reason, At: formatTime(d.At)}
}

type receivedJSON struct {
	MessageID          string            `json:"messageId"`
	Body               string            `json:"body"`
	Attributes         map[string]string `json:"attributes"`
	ReceiptHandle      string            `json:"receiptHandle,omitempty"` // absent on at-most-once queues
	ReceiveCount       int               `json:"receiveCount"`
	SentAt             string            `json:"sentAt"`
	VisibilityDeadline string            `json:"visibilityDeadline,omitempty"` // likewise
	GroupID            string            `json:"groupId,omitempty"`
	SequenceNumber     string            `json:"sequenceNumber,omitempty"`
	DeadLetter         *deadLetterJSON   `json:"deadLetter,omitempty"`
	Traceparent        string            `json:"traceparent,omitempty"`
	Priority           *int              `json:"priority,omitempty"` // standard queues only
	ReplayOf           *replayOfJSON     `json:"replayOf,omitempty"`
}

func attrsOut(a map[string]string) map[string]string {
	if a == nil {
		return map[string]string{}
	}
	return a
}

// prioOut is a message's priority as answered: on standard queues only
// (docs/delivery-options.md#priority).
func prioOut(fifo bool, p int) *int {
	if fifo {
		return nil
	}
	return &p
}

func seqOut(fifo bool, n uint64) string {
	if !fifo {
		return ""
	}
	return strconv.FormatUint(n, 10)
}

func (s *Server) receive(c echo.Context) error {
	q, err := s.queue(c)
	if err != nil {
		return err
	}
	data, err := readBody(c)
	if err != nil {
		return err
	}
	o, aerr := parseObject(data, "", true, "maxMessages", "visibilityTimeoutSeconds", "waitSeconds", "consumerId", "maxBacklog", "filter")
	if aerr != nil {
		return aerr
	}
	maxN, ok, aerr := o.integer("maxMessages", 1, engine.MaxBatch)
	if aerr != nil {
		return aerr
	}
	if !ok {
		maxN = 1
	}
	vis, ok, aerr := o.integer("visibilityTimeoutSeconds", 0, maxVisibility)
	if aerr != nil {
		return aerr
	}
	if !ok {
		vis = int64(q.VisibilityTimeoutSeconds)
	}
	wait, ok, aerr := o.integer("waitSeconds", 0, maxReceiveWait)
	if aerr != nil {
		return aerr
	}
	if !ok {
		wait = int64(q.ReceiveWaitSeconds)
	}
	consumer, err := consumerOf(o)
	if err != nil {
		return err
	}
	flt, err := filterOfBody(o) // filter.go
	if err != nil {
		return err
	}
	msgs, err := s.Receive(c.Request().Context(), q, engine.ReceiveRequest{Max: int(maxN), Visibility: time.Duration(vis) * time.Second,
		Consumer: consumer, Filter: flt}, time.Duration(wait)*time.Second)
	if err != nil {
		return err
	}
	out := s.receivedOut(q, msgs)
	defer s.meterDelivered(q.ProjectID, msgs)
	return blob(c, http.StatusOK, func(b []byte) []byte { return appendReceiveAnswer(b, out) })
}

// receivedOut is the answer's form of received messages, receipt handles signed. A message of
// an at-most-once queue was removed by its receive: it has neither a handle nor a deadline,
// and the fields are left out (docs/delivery-options.md#at-most-once-queues: no receiptHandle).
func (s *Server) receivedOut(q meta.Queue, msgs []engine.Received) []receivedJSON {
	fifo := q.Type == string(engine.FIFO)
	amo := q.AtMostOnce()
	out := make([]receivedJSON, len(msgs))
	for i, m := range msgs {
		attrs, tp, rp := engine.SplitReserved(m.Attributes)
		out[i] = receivedJSON{
			MessageID: m.MessageID.String(), Body: m.Body, Attributes: attrsOut(attrs), Traceparent: tp,
			ReceiveCount: m.ReceiveCount, SentAt: formatTime(m.SentAt),
			GroupID: m.GroupID, SequenceNumber: seqOut(fifo, m.SequenceNumber), DeadLetter: deadLetterOut(m.DeadLetter),
			Priority: prioOut(fifo, m.Priority), ReplayOf: replayOfOut(rp),
		}
		if !amo {
			out[i].ReceiptHandle = s.cfg.Receipts.Sign(m.Delivery)
			out[i].VisibilityDeadline = formatTime(m.VisibilityDeadline)
		}
	}
	return out
}

type browsedJSON struct {
	MessageID      string            `json:"messageId"`
	Body           string            `json:"body"`
	Attributes     map[string]string `json:"attributes"`
	ReceiveCount   int               `json:"receiveCount"`
	SentAt         string            `json:"sentAt"`
	State          engine.State      `json:"state"`
	VisibleAt      string            `json:"visibleAt"`
	GroupID        string            `json:"groupId,omitempty"`
	SequenceNumber string            `json:"sequenceNumber,omitempty"`
	DeadLetter     *deadLetterJSON   `json:"deadLetter,omitempty"`
	Traceparent    string            `json:"traceparent,omitempty"`
	Priority       *int              `json:"priority,omitempty"` // standard queues only
	ReplayOf       *replayOfJSON     `json:"replayOf,omitempty"`
}

func (s *Server) browse(c echo.Context) error {
	q, eq, err := s.target(c)
	if err != nil {
		return err
	}
	page, err := pageParams(c, 20, 100)
	if err != nil {
		return err
	}
	state := engine.State(c.QueryParam("state"))
	if state == "" {
		state = engine.StateVisible
	}
	if !state.Valid() {
		return errInvalidState
	}
	flt, err := filterOfQuery(c.QueryParams()) // filter.go
	if err != nil {
		return err
	}
	ctx, cancel := s.storageCtx(c)
	defer cancel()
	res, err := s.cfg.Engine.Browse(ctx, eq, engine.BrowseRequest{State: state, Limit: page.Limit, Cursor: page.Cursor, Filter: flt})
	if err != nil {
		return err
	}
	fifo := q.Type == string(engine.FIFO)
	out := make([]browsedJSON, len(res.Messages))
	for i, m := range res.Messages {
		attrs, tp, rp := engine.SplitReserved(m.Attributes)
		out[i] = browsedJSON{
			MessageID: m.MessageID.String(), Body: m.Body, Attributes: attrsOut(attrs), Traceparent: tp,
			ReceiveCount: m.ReceiveCount, SentAt: formatTime(m.SentAt), State: m.State,
			VisibleAt: formatTime(m.VisibleAt), GroupID: m.GroupID,
			SequenceNumber: seqOut(fifo, m.SequenceNumber), DeadLetter: deadLetterOut(m.DeadLetter),
			Priority: prioOut(fifo, m.Priority), ReplayOf: replayOfOut(rp),
		}
	}
	return c.JSON(http.StatusOK, map[string]any{"messages": out, "nextCursor": cursorOut(res.NextCursor)})
}

type groupJSON struct {
	GroupID          string  `json:"groupId"`
	Messages         int64   `json:"messages"`
	InFlight         bool    `json:"inFlight"`
	State            string  `json:"state"`
	HeadReceiveCount int     `json:"receiveCount"`
	LastError        *string `json:"lastError"`
	// ConsumerID is the consumer an exclusive queue's group is bound to (null: none).
	ConsumerID *string `json:"consumerId"`
}

func (s *Server) fifoQueue(c echo.Context) (engine.Queue, context.Context, context.CancelFunc, error) {
	_, eq, err := s.target(c)
	if err != nil {
		return eq, nil, nil, err
	}
	if eq.Type != engine.FIFO {
		return eq, nil, nil, apierr.Invalid("queue", "message groups exist only on fifo queues")
	}
	ctx, cancel := s.storageCtx(c)
	return eq, ctx, cancel, nil
}

func (s *Server) listGroups(c echo.Context) error {
	page, err := pageParams(c, 100, 1000)
	if err != nil {
		return err
	}
	state := engine.GroupState(c.QueryParam("state"))
	if _, given := c.QueryParams()["state"]; given && (state == "" || !state.Valid()) {
		return apierr.Invalid("state", "must be %q or %q", engine.GroupActive, engine.GroupParked)
	}
	eq, ctx, cancel, err := s.fifoQueue(c)
	if err != nil {
		return err
	}
	defer cancel()
	res, err := s.cfg.Engine.Groups(ctx, eq, page.Limit, page.Cursor, state)
	if err != nil {
		return err
	}
	out := make([]groupJSON, len(res.Groups))
	for i, g := range res.Groups {
		out[i] = groupJSON{GroupID: g.GroupID, Messages: g.Messages, InFlight: g.InFlight, State: string(g.State),
			HeadReceiveCount: g.HeadReceiveCount, ConsumerID: boundOut(g.ConsumerID)}
		if out[i].State == "" {
			out[i].State = string(engine.GroupActive)
		}
		if g.LastError != "" {
			out[i].LastError = &g.LastError
		}
	}
	return c.JSON(http.StatusOK, map[string]any{"groups": out, "nextCursor": cursorOut(res.NextCursor)})
}

// releaseGroup ends a parked group's parking (POST …/groups/{group}/release, docs/fifo.md).
func (s *Server) releaseGroup(c echo.Context) error {
	return s.groupAction(c, s.cfg.Engine.ReleaseGroup)
}

func (s *Server) purgeGroup(c echo.Context) error { return s.groupAction(c, s.cfg.Engine.PurgeGroup) }

// groupAction runs op on the fifo queue's group the path names and answers 204.
func (s *Server) groupAction(c echo.Context, op func(context.Context, engine.Queue, string) error) error {
	g, uerr := url.PathUnescape(c.Param("group"))
	if uerr != nil || !groupIDPattern.MatchString(g) {
		return apierr.Invalid("groupId", "must be 1 to 128 characters from ! to ~ (no spaces)")
	}
	eq, ctx, cancel, err := s.fifoQueue(c)
	if err != nil {
		return err
	}
	defer cancel()
	if err := op(ctx, eq, g); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
