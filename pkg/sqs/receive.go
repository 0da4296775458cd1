package sqs

import (
	"strconv"
	"time"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/service"
)

func isStale(err error) bool { return apierr.CodeOf(err) == apierr.ReceiptHandleStale }

// messageOut is a received message.
type messageOut struct {
	MessageID              string     `json:"MessageId" xml:"MessageId"`
	ReceiptHandle          string     `json:"ReceiptHandle" xml:"ReceiptHandle"`
	MD5OfBody              string     `json:"MD5OfBody" xml:"MD5OfBody"`
	Body                   string     `json:"Body" xml:"Body"`
	Attributes             attrMap    `json:"Attributes,omitempty" xml:"Attribute"`
	MD5OfMessageAttributes string     `json:"MD5OfMessageAttributes,omitempty" xml:"MD5OfMessageAttributes,omitempty"`
	MessageAttributes      msgAttrMap `json:"MessageAttributes,omitempty" xml:"MessageAttribute"`
}

type receiveOutput struct {
	Messages []messageOut `json:"Messages,omitempty" xml:"Message"`
}

// systemAttributes are the message system attributes a receive may ask for.
var systemAttributes = []string{"ApproximateReceiveCount", "ApproximateFirstReceiveTimestamp", "SentTimestamp",
	"SenderId", "MessageGroupId", "MessageDeduplicationId", "SequenceNumber", "AWSTraceHeader",
	"DeadLetterQueueSourceArn", "SqsManagedSseEnabled"}

type receiveInput struct {
	QueueURL                    string   `json:"QueueUrl"`
	AttributeNames              []string `json:"AttributeNames"`
	MessageSystemAttributeNames []string `json:"MessageSystemAttributeNames"`
	MessageAttributeNames       []string `json:"MessageAttributeNames"`
	MaxNumberOfMessages         optInt   `json:"MaxNumberOfMessages"`
	VisibilityTimeout           optInt   `json:"VisibilityTimeout"`
	WaitTimeSeconds             optInt   `json:"WaitTimeSeconds"`
	ReceiveRequestAttemptID     string   `json:"ReceiveRequestAttemptId"`
}

func (d *Door) receiveMessage(c *call) (any, error) {
	var in receiveInput
	if err := c.inputInto(&in); err != nil {
		return nil, err
	}
	q, err := d.queue(c, in.QueueURL)
	if err != nil {
		return nil, err
	}
	maxN, perr := in.MaxNumberOfMessages.within("MaxNumberOfMessages", 1, engine.MaxBatch, 1)
	if perr != nil {
		return nil, perr
	}
	vis, perr := in.VisibilityTimeout.within("VisibilityTimeout", 0, service.MaxVisibilitySeconds, int64(q.VisibilityTimeoutSeconds))
	if perr != nil {
		return nil, perr
	}
	wait, perr := in.WaitTimeSeconds.within("WaitTimeSeconds", 0, service.MaxReceiveWaitSeconds, int64(q.ReceiveWaitSeconds))
	if perr != nil {
		return nil, perr
	}
	sys := map[string]bool{}
	for _, n := range append(append([]string{}, in.AttributeNames...), in.MessageSystemAttributeNames...) {
		switch {
		case n == "All":
			for _, s := range systemAttributes {
				sys[s] = true
			}
		case isOneOf(n, systemAttributes):
			sys[n] = true
		}
		// Other names (queue attributes that older clients list) ask for nothing.
	}
	fifo := q.Type == string(engine.FIFO)
	attempt := ""
	if fifo && in.ReceiveRequestAttemptID != "" {
		if !groupPattern.MatchString(in.ReceiveRequestAttemptID) {
			return nil, invalidValue("ReceiveRequestAttemptId", in.ReceiveRequestAttemptID, "ReceiveRequestAttemptId can only include alphanumeric and punctuation characters. 1 to 128 in length.")
		}
		attempt = q.ID.String() + "/" + in.ReceiveRequestAttemptID
		if msgs, ok := d.recalled(c, attempt); ok {
			return d.receiveAnswer(c, q, msgs, sys, in.MessageAttributeNames), nil
		}
	}
	msgs, err := d.cfg.Backend.Receive(c.r.Context(), q, engine.ReceiveRequest{Max: int(maxN), Visibility: time.Duration(vis) * time.Second}, time.Duration(wait)*time.Second)
	if err != nil {
		return nil, err
	}
	c.answered = append(c.answered, func() { d.cfg.Backend.MeterDelivered(q.ProjectID, msgs) })
	if attempt != "" {
		d.remember(c, q.ProjectID, attempt, msgs)
	}
	return d.receiveAnswer(c, q, msgs, sys, in.MessageAttributeNames), nil
}

func (d *Door) receiveAnswer(c *call, q meta.Queue, msgs []engine.Received, sys map[string]bool, names []string) receiveOutput {
	now := d.cfg.Clock.Now()
	out := receiveOutput{}
	for _, m := range msgs {
		attrs := decodeAttributes(m.Attributes)
		// A message of an at-most-once queue keeps a ReceiptHandle here, unlike on /v1: SQS
		// clients delete what they processed, and the handle names a delivery already gone,
		// whose DeleteMessage succeeds as SQS's stale deletes do (ChangeMessageVisibility on it
		// fails: nothing is in flight).
		mo := messageOut{
			MessageID: m.MessageID.String(), ReceiptHandle: d.cfg.Backend.Receipts().Sign(m.Delivery),
			MD5OfBody: md5Hex(m.Body), Body: m.Body,
		}
		if sel := selectAttributes(attrs.user, names); sel != nil {
			mo.MessageAttributes = sel
			mo.MD5OfMessageAttributes = md5OfAttributes(sel)
		}
		if len(sys) > 0 {
			mo.Attributes = d.systemAttributes(c, q, m, attrs, sys, now)
		}
		out.Messages = append(out.Messages, mo)
	}
	return out
}

func millis(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }

// systemAttributes answers the asked-for system attributes of a received message. The engine
// keeps no first-receive time: on a message's first receive it is this receive's time, and on
// later ones the time of this receive too (see docs/sqs.md).
func (d *Door) systemAttributes(c *call, q meta.Queue, m engine.Received, attrs decodedAttrs, sys map[string]bool, now time.Time) attrMap {
	fifo := q.Type == string(engine.FIFO)
	a := attrMap{}
	set := func(name, v string) {
		if sys[name] && v != "" {
			a[name] = v
		}
	}
	set("ApproximateReceiveCount", strconv.Itoa(m.ReceiveCount))
	set("SentTimestamp", millis(m.SentAt))
	set("ApproximateFirstReceiveTimestamp", millis(now))
	set("SenderId", c.projectSlug())
	set("AWSTraceHeader", attrs.trace)
	if fifo {
		set("MessageGroupId", m.GroupID)
		set("MessageDeduplicationId", attrs.dedupID)
		set("SequenceNumber", strconv.FormatUint(m.SequenceNumber, 10))
	}
	if m.DeadLetter != nil && sys["DeadLetterQueueSourceArn"] {
		ctx, cancel := d.storageCtx(c)
		src, err := d.cfg.Backend.QueueByID(ctx, m.DeadLetter.SourceQueue)
		cancel()
		if err == nil {
			a["DeadLetterQueueSourceArn"] = c.queueARN(src.Name)
		}
	}
	return a
}

// attemptWindow is how long a fifo ReceiveRequestAttemptId answers the same messages again.
const attemptWindow = 5 * time.Minute
