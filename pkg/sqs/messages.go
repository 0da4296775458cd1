package sqs

import (
	"regexp"
	"strconv"
	"time"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/service"
)

var (
	entryIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,80}$`)
	// groupPattern is SQS's (and /v1's) set for group, deduplication and attempt ids.
	groupPattern = regexp.MustCompile(`^[!-~]{1,128}$`)
)

// sendEntry is SendMessage's input, and one entry of SendMessageBatch.
type sendEntry struct {
	ID                      string               `json:"Id"`
	QueueURL                string               `json:"QueueUrl"`
	MessageBody             *string              `json:"MessageBody"`
	DelaySeconds            optInt               `json:"DelaySeconds"`
	MessageAttributes       map[string]attrValue `json:"MessageAttributes"`
	MessageSystemAttributes map[string]attrValue `json:"MessageSystemAttributes"`
	MessageDeduplicationID  string               `json:"MessageDeduplicationId"`
	MessageGroupID          string               `json:"MessageGroupId"`
}

// sendResult is SendMessage's answer and a successful SendMessageBatch entry.
type sendResult struct {
	ID                           string `json:"Id,omitempty" xml:"Id,omitempty"`
	MessageID                    string `json:"MessageId" xml:"MessageId"`
	MD5OfMessageBody             string `json:"MD5OfMessageBody" xml:"MD5OfMessageBody"`
	MD5OfMessageAttributes       string `json:"MD5OfMessageAttributes,omitempty" xml:"MD5OfMessageAttributes,omitempty"`
	MD5OfMessageSystemAttributes string `json:"MD5OfMessageSystemAttributes,omitempty" xml:"MD5OfMessageSystemAttributes,omitempty"`
	// SequenceNumber (fifo queues only) is the message's, the one its receives report; a
	// duplicate's is the original's.
	SequenceNumber string `json:"SequenceNumber,omitempty" xml:"SequenceNumber,omitempty"`
}

// sequenceNumber is a send's SequenceNumber: SQS answers one only on fifo queues.
func sequenceNumber(q meta.Queue, r engine.SendResult) string {
	if q.Type != string(engine.FIFO) || r.SequenceNumber == 0 {
		return ""
	}
	return strconv.FormatUint(r.SequenceNumber, 10)
}

// batchError is a BatchResultErrorEntry.
type batchError struct {
	ID          string `json:"Id" xml:"Id"`
	SenderFault bool   `json:"SenderFault" xml:"SenderFault"`
	Code        string `json:"Code" xml:"Code"`
	Message     string `json:"Message,omitempty" xml:"Message,omitempty"`
}

func entryError(id string, e *Error) batchError {
	return batchError{ID: id, SenderFault: e.Sender, Code: e.Name, Message: e.Message}
}

// maxSize is the queue's MaximumMessageSize, its maxMessageBytes.
func maxSize(q meta.Queue) int { return q.MaxMessageBytesOrDefault() }

// prepare validates one message as SQS does and makes the engine's message and the digests
// of the answer.
func prepare(q meta.Queue, e sendEntry) (engine.Message, sendResult, int, *Error) {
	var m engine.Message
	var res sendResult
	if e.MessageBody == nil || *e.MessageBody == "" {
		return m, res, 0, missingParam("MessageBody")
	}
	body := *e.MessageBody
	if !validContents(body) {
		return m, res, 0, newErr(errInvalidContents, "Invalid binary character in the message body; see the allowed character set.")
	}
	size, err := checkAttributes(e.MessageAttributes, "MessageAttributes")
	if err != nil {
		return m, res, 0, err
	}
	size += len(body)
	if size > maxSize(q) {
		return m, res, 0, newErr(errInvalidParameter, "One or more parameters are invalid. Reason: Message must be shorter than %d bytes.", maxSize(q))
	}
	trace := ""
	for name, v := range e.MessageSystemAttributes {
		if name != "AWSTraceHeader" || v.DataType != "String" || v.StringValue == nil || *v.StringValue == "" {
			return m, res, 0, invalidParam("MessageSystemAttributes", "only AWSTraceHeader, a non-empty String, is a message system attribute")
		}
		trace = *v.StringValue
	}
	fifo := q.Type == string(engine.FIFO)
	delay, err := e.DelaySeconds.within("DelaySeconds", 0, service.MaxDelaySeconds, -1)
	if err != nil {
		return m, res, 0, err
	}
	if delay >= 0 {
		if fifo && delay != 0 {
			return m, res, 0, invalidValue("DelaySeconds", delay, "The request include parameter that is not valid for this queue type.")
		}
		dd := time.Duration(delay) * time.Second
		m.Delay = &dd
	}
	dedup := ""
	switch {
	case !fifo && (e.MessageGroupID != "" || e.MessageDeduplicationID != ""):
		return m, res, 0, invalidParam("MessageGroupId", "The request include parameter that is not valid for this queue type.")
	case !fifo:
	case e.MessageGroupID == "":
		return m, res, 0, missingParam("MessageGroupId")
	case !groupPattern.MatchString(e.MessageGroupID):
		return m, res, 0, invalidValue("MessageGroupId", e.MessageGroupID, "MessageGroupId can only include alphanumeric and punctuation characters. 1 to 128 in length.")
	case e.MessageDeduplicationID != "":
		if !groupPattern.MatchString(e.MessageDeduplicationID) {
			return m, res, 0, invalidValue("MessageDeduplicationId", e.MessageDeduplicationID, "MessageDeduplicationId can only include alphanumeric and punctuation characters. 1 to 128 in length.")
		}
		dedup = e.MessageDeduplicationID
		m.DedupID = dedup
	case !q.ContentBasedDedup:
		return m, res, 0, invalidParam("MessageDeduplicationId", "The queue should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly")
	default:
		// The engine deduplicates on the body's SHA-256 itself; the id is kept to be shown.
		dedup = sha256Hex(body)
	}
	m.Body, m.GroupID = body, e.MessageGroupID
	m.Attributes = encodeAttributes(e.MessageAttributes, dedup, trace)
	res.MD5OfMessageBody = md5Hex(body)
	res.MD5OfMessageAttributes = md5OfAttributes(e.MessageAttributes)
	if trace != "" {
		res.MD5OfMessageSystemAttributes = md5OfAttributes(map[string]attrValue{"AWSTraceHeader": e.MessageSystemAttributes["AWSTraceHeader"]})
	}
	return m, res, size, nil
}

// admitSend admits a send (service.AdmitSend) before its input is decoded: its request
// bytes (its body and query string: a presigned send carries its message in the query) are
// charged to the project's sendBytesPerSecond, the budget /v1's sends share: RequestThrottled
// beyond it. The request rate was applied as the call was dispatched; the queue is not known
// yet, so a full project is left to the engine's refusal.
func (d *Door) admitSend(c *call) (*service.AdmittedSend, error) {
	ctx, cancel := d.storageCtx(c)
	defer cancel()
	return d.cfg.Backend.AdmitSend(ctx, service.SendRequest{Project: c.principal.ProjectID,
		Bytes: int64(c.bodyBytes + len(c.r.URL.RawQuery)), Counted: true})
}

func (d *Door) sendMessage(c *call) (any, error) {
	adm, err := d.admitSend(c)
	if err != nil {
		return nil, err
	}
	var in sendEntry
	if err := c.inputInto(&in); err != nil {
		return nil, err
	}
	q, err := d.queue(c, in.QueueURL)
	if err != nil {
		return nil, err
	}
	m, res, _, perr := prepare(q, in)
	if perr != nil {
		return nil, perr
	}
	ctx, cancel := d.storageCtx(c)
	defer cancel()
	out, err := d.cfg.Backend.Send(ctx, q, []engine.Message{m})
	if err != nil {
		return nil, err
	}
	c.answered = append(c.answered, func() { adm.MeterSent([]engine.Message{m}, out) })
	if out[0].Err != nil {
		return nil, out[0].Err
	}
	res.MessageID = out[0].MessageID.String()
	res.SequenceNumber = sequenceNumber(q, out[0])
	return res, nil
}

type sendBatchOutput struct {
	Successful []sendResult `json:"Successful" xml:"SendMessageBatchResultEntry"`
	Failed     []batchError `json:"Failed" xml:"BatchResultErrorEntry"`
}

// checkEntryIDs applies SQS's batch rules: 1 to 10 entries with distinct valid ids. entry is
// the action's entry type (SendMessageBatchRequestEntry), which AWS's texts name.
func checkEntryIDs(entry string, idsOf []string) *Error {
	switch {
	case len(idsOf) == 0:
		return newErr(errEmptyBatch, "There should be at least one %s in the request.", entry)
	case len(idsOf) > engine.MaxBatch:
		return newErr(errTooManyEntries, "Maximum number of entries per request are %d. You have sent %d.", engine.MaxBatch, len(idsOf))
	}
	seen := map[string]bool{}
	for _, id := range idsOf {
		if !entryIDPattern.MatchString(id) {
			return newErr(errInvalidEntryID, "A batch entry id can only contain alphanumeric characters, hyphens and underscores. It can be at most 80 letters long.")
		}
		if seen[id] {
			return newErr(errIDsNotDistinct, "Id %s repeated.", id)
		}
		seen[id] = true
	}
	return nil
}

// checkFIFOEntries fails a fifo SendMessageBatch as a whole, before anything is sent, when an
// entry lacks its MessageDeduplicationId (with content-based deduplication off) or its
// MessageGroupId: SQS answers the request 400 InvalidParameterValue then (recorded against AWS
// in localstack's snapshots), rather than listing the entry under Failed, so that a client that
// never reads Failed cannot send part of a batch. Other faults of an entry stay per entry.
func checkFIFOEntries(q meta.Queue, entries []sendEntry) *Error {
	if q.Type != string(engine.FIFO) {
		return nil
	}
	for _, e := range entries {
		if e.MessageDeduplicationID == "" && !q.ContentBasedDedup {
			return newErr(errInvalidParameter, "The queue should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly")
		}
		if e.MessageGroupID == "" {
			return newErr(errInvalidParameter, "The request must contain the parameter MessageGroupId.")
		}
	}
	return nil
}

func (d *Door) sendMessageBatch(c *call) (any, error) {
	adm, err := d.admitSend(c)
	if err != nil {
		return nil, err
	}
	var in struct {
		QueueURL string      `json:"QueueUrl"`
		Entries  []sendEntry `json:"Entries"`
	}
	if err := c.inputInto(&in); err != nil {
		return nil, err
	}
	idList := make([]string, len(in.Entries))
	for i, e := range in.Entries {
		idList[i] = e.ID
	}
	if err := checkEntryIDs(c.action+"RequestEntry", idList); err != nil {
		return nil, err
	}
	q, err := d.queue(c, in.QueueURL)
	if err != nil {
		return nil, err
	}
	if err := checkFIFOEntries(q, in.Entries); err != nil {
		return nil, err
	}
	out := sendBatchOutput{Successful: []sendResult{}, Failed: []batchError{}}
	var msgs []engine.Message
	var results []sendResult
	total := 0
	for _, e := range in.Entries {
		m, res, size, perr := prepare(q, e)
		if perr != nil {
			out.Failed = append(out.Failed, entryError(e.ID, perr))
			continue
		}
		total += size
		res.ID = e.ID
		msgs, results = append(msgs, m), append(results, res)
	}
	if total > maxBatchBytes {
		return nil, newErr(errBatchTooLong, "Batch requests cannot be longer than %d bytes. You have sent %d bytes.", maxBatchBytes, total)
	}
	if len(msgs) == 0 {
		return out, nil
	}
	ctx, cancel := d.storageCtx(c)
	defer cancel()
	sent, err := d.cfg.Backend.Send(ctx, q, msgs)
	if err != nil {
		return nil, err
	}
	c.answered = append(c.answered, func() { adm.MeterSent(msgs, sent) })
	for i, r := range sent {
		if r.Err != nil {
			out.Failed = append(out.Failed, entryError(results[i].ID, fromAPI(r.Err)))
			continue
		}
		results[i].MessageID = r.MessageID.String()
		results[i].SequenceNumber = sequenceNumber(q, r)
		out.Successful = append(out.Successful, results[i])
	}
	return out, nil
}

// verifyHandle checks a receipt handle and that it belongs to q; no storage call.
func (d *Door) verifyHandle(q meta.Queue, h string) (engine.Delivery, *Error) {
	if h == "" {
		return engine.Delivery{}, missingParam("ReceiptHandle")
	}
	dl, err := d.cfg.Backend.Receipts().Verify(h, "ReceiptHandle")
	if err != nil || dl.Queue != q.ID {
		// AWS's text quotes the handle whole; one past any real handle's length is cut.
		return dl, newErr(errReceiptInvalid, "The input receipt handle \"%s\" is not a valid receipt handle.", truncate(h, 1024))
	}
	return dl, nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// ackErr is SQS's outcome of a delete: a stale handle's delete succeeds.
func ackErr(err error) *Error {
	if err == nil {
		return nil
	}
	e := fromAPI(err)
	if e.Name == errInvalidParameter.name && isStale(err) {
		return nil
	}
	return e
}

func (d *Door) deleteMessage(c *call) (any, error) {
	var in struct {
		QueueURL      string `json:"QueueUrl"`
		ReceiptHandle string `json:"ReceiptHandle"`
	}
	if err := c.inputInto(&in); err != nil {
		return nil, err
	}
	q, err := d.queue(c, in.QueueURL)
	if err != nil {
		return nil, err
	}
	dl, verr := d.verifyHandle(q, in.ReceiptHandle)
	if verr != nil {
		return nil, verr
	}
	ctx, cancel := d.storageCtx(c)
	defer cancel()
	errs, err := d.cfg.Backend.Ack(ctx, []engine.Delivery{dl})
	if err != nil {
		return nil, err
	}
	if e := ackErr(errs[0]); e != nil {
		return nil, e
	}
	return nil, nil
}

type settleEntry struct {
	ID                string `json:"Id"`
	ReceiptHandle     string `json:"ReceiptHandle"`
	VisibilityTimeout optInt `json:"VisibilityTimeout"`
}

type idResult struct {
	ID string `json:"Id" xml:"Id"`
}

type deleteBatchOutput struct {
	Successful []idResult   `json:"Successful" xml:"DeleteMessageBatchResultEntry"`
	Failed     []batchError `json:"Failed" xml:"BatchResultErrorEntry"`
}

type visibilityBatchOutput struct {
	Successful []idResult   `json:"Successful" xml:"ChangeMessageVisibilityBatchResultEntry"`
	Failed     []batchError `json:"Failed" xml:"BatchResultErrorEntry"`
}

// settleBatch decodes a delete or visibility batch, verifies every handle and runs op on the
// valid ones; it answers the successful ids and the failed entries.
func (d *Door) settleBatch(c *call, visibility bool, op func(ds []engine.Delivery, vis []int64, hs []string) ([]error, error)) ([]idResult, []batchError, error) {
	var in struct {
		QueueURL string        `json:"QueueUrl"`
		Entries  []settleEntry `json:"Entries"`
	}
	if err := c.inputInto(&in); err != nil {
		return nil, nil, err
	}
	idList := make([]string, len(in.Entries))
	for i, e := range in.Entries {
		idList[i] = e.ID
	}
	if err := checkEntryIDs(c.action+"RequestEntry", idList); err != nil {
		return nil, nil, err
	}
	q, err := d.queue(c, in.QueueURL)
	if err != nil {
		return nil, nil, err
	}
	ok, failed := []idResult{}, []batchError{}
	var ds []engine.Delivery
	var vis []int64
	var at, hs []string
	for _, e := range in.Entries {
		dl, verr := d.verifyHandle(q, e.ReceiptHandle)
		if verr == nil && visibility {
			// An entry's VisibilityTimeout is optional (0); SDKs leave a 0 out.
			var v int64
			if v, verr = e.VisibilityTimeout.within("VisibilityTimeout", 0, service.MaxVisibilitySeconds, 0); verr == nil {
				vis = append(vis, v)
			}
		}
		if verr != nil {
			failed = append(failed, entryError(e.ID, verr))
			continue
		}
		ds, at, hs = append(ds, dl), append(at, e.ID), append(hs, e.ReceiptHandle)
	}
	if len(ds) > 0 {
		errs, err := op(ds, vis, hs)
		if err != nil {
			return nil, nil, err
		}
		for i, e := range errs {
			if e != nil {
				failed = append(failed, entryError(at[i], e.(*Error)))
				continue
			}
			ok = append(ok, idResult{at[i]})
		}
	}
	return ok, failed, nil
}

func (d *Door) deleteMessageBatch(c *call) (any, error) {
	ok, failed, err := d.settleBatch(c, false, func(ds []engine.Delivery, _ []int64, _ []string) ([]error, error) {
		ctx, cancel := d.storageCtx(c)
		defer cancel()
		errs, err := d.cfg.Backend.Ack(ctx, ds)
		return sqsErrs(errs, ackErr), err
	})
	if err != nil {
		return nil, err
	}
	return deleteBatchOutput{Successful: ok, Failed: failed}, nil
}

// sqsErrs maps per-entry errors, keeping nil for success (as an untyped nil error).
func sqsErrs(errs []error, conv func(error) *Error) []error {
	out := make([]error, len(errs))
	for i, e := range errs {
		if se := conv(e); se != nil {
			out[i] = se
		}
	}
	return out
}

// visibilityErr is SQS's outcome of a visibility change with handle h to v seconds, in AWS's
// words.
func visibilityErr(h string, v int64, err error) *Error {
	if err == nil {
		return nil
	}
	switch apierr.CodeOf(err) {
	case apierr.ReceiptHandleStale:
		return invalidValue("ReceiptHandle", h, "Message does not exist or is not available for visibility timeout change.")
	case apierr.VisibilityLimitExceeded:
		return invalidValue("VisibilityTimeout", v, "Total VisibilityTimeout for the message is beyond the limit [%d seconds]", service.MaxVisibilitySeconds)
	}
	return fromAPI(err)
}

func (d *Door) changeVisibility(c *call, ds []engine.Delivery, vis []int64, hs []string) ([]error, error) {
	cs := make([]engine.VisibilityChange, len(ds))
	for i, dl := range ds {
		cs[i] = engine.VisibilityChange{Delivery: dl, Visibility: time.Duration(vis[i]) * time.Second}
	}
	ctx, cancel := d.storageCtx(c)
	defer cancel()
	errs, err := d.cfg.Backend.ChangeVisibility(ctx, cs)
	if err == nil {
		d.onCurrentDelivery(ctx, cs, errs)
	}
	out := make([]error, len(errs))
	for i, e := range errs {
		if se := visibilityErr(hs[i], vis[i], e); se != nil {
			out[i] = se
		}
	}
	return out, err
}

func (d *Door) changeMessageVisibility(c *call) (any, error) {
	var in struct {
		QueueURL          string `json:"QueueUrl"`
		ReceiptHandle     string `json:"ReceiptHandle"`
		VisibilityTimeout optInt `json:"VisibilityTimeout"`
	}
	if err := c.inputInto(&in); err != nil {
		return nil, err
	}
	if !in.VisibilityTimeout.Set {
		return nil, missingParam("VisibilityTimeout")
	}
	v, verr := in.VisibilityTimeout.within("VisibilityTimeout", 0, service.MaxVisibilitySeconds, 0)
	if verr != nil {
		return nil, verr
	}
	q, err := d.queue(c, in.QueueURL)
	if err != nil {
		return nil, err
	}
	dl, herr := d.verifyHandle(q, in.ReceiptHandle)
	if herr != nil {
		return nil, herr
	}
	errs, err := d.changeVisibility(c, []engine.Delivery{dl}, []int64{v}, []string{in.ReceiptHandle})
	if err != nil {
		return nil, err
	}
	return nil, errs[0]
}

func (d *Door) changeMessageVisibilityBatch(c *call) (any, error) {
	ok, failed, err := d.settleBatch(c, true, func(ds []engine.Delivery, vis []int64, hs []string) ([]error, error) {
		return d.changeVisibility(c, ds, vis, hs)
	})
	if err != nil {
		return nil, err
	}
	return visibilityBatchOutput{Successful: ok, Failed: failed}, nil
}
