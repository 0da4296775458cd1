package sqs

import (
	"context"
	"encoding/json"
	"maps"
	"strconv"
	"strings"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/service"
)

// Queue attributes with a /v1 setting, and those kept as SQS wrote them (SQSAttributes).
var (
	// storedAttrs have no effect on the service but are kept and shown back, so that tools
	// that set them (policies, encryption settings) see what they set.
	storedAttrs = []string{"Policy", "KmsMasterKeyId", "KmsDataKeyReusePeriodSeconds", "SqsManagedSseEnabled",
		"RedriveAllowPolicy", "DeduplicationScope", "FifoThroughputLimit"}
	readOnlyAttrs = []string{"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible",
		"ApproximateNumberOfMessagesDelayed", "CreatedTimestamp", "LastModifiedTimestamp", "QueueArn"}
	settableAttrs = []string{"DelaySeconds", "MessageRetentionPeriod", "ReceiveMessageWaitTimeSeconds",
		"VisibilityTimeout", "RedrivePolicy", "ContentBasedDeduplication", "MaximumMessageSize"}
)

func isOneOf(s string, lists ...[]string) bool {
	for _, l := range lists {
		for _, x := range l {
			if x == s {
				return true
			}
		}
	}
	return false
}

// applyAttributes sets queue attributes on q (creating: the FifoQueue attribute is read by
// the caller).
func (d *Door) applyAttributes(c *call, q *meta.Queue, attrs map[string]string, creating bool) error {
	fifo := q.Type == string(engine.FIFO)
	for _, name := range sortedKeys(attrs) {
		v := attrs[name]
		switch {
		case name == "FifoQueue":
			// As AWS answers (recorded in localstack's snapshots): a standard queue knows no
			// FifoQueue attribute; a fifo queue takes "true" again but cannot change type.
			if !fifo {
				return newErr(errInvalidAttrName, "Unknown Attribute FifoQueue.")
			}
			if b, err := strconv.ParseBool(v); !creating && (err != nil || !b) {
				return newErr(errInvalidAttrValue, "Invalid value for the parameter FifoQueue. Reason: Modifying queue type is not supported.")
			}
		case isOneOf(name, settableAttrs):
			if err := d.applySetting(c, q, name, v, fifo); err != nil {
				return err
			}
		case isOneOf(name, storedAttrs):
			if err := checkStored(name, v, fifo); err != nil {
				return err
			}
			if name == "Policy" && strings.TrimSpace(v) == "" {
				// SQS removes the policy: GetQueueAttributes lists no Policy afterwards.
				delete(q.SQSAttributes, name)
				continue
			}
			if q.SQSAttributes == nil {
				q.SQSAttributes = map[string]string{}
			}
			q.SQSAttributes[name] = v
		default:
			return newErr(errInvalidAttrName, "Unknown Attribute %s.", name)
		}
	}
	return nil
}

func badValue(name string) *Error {
	return newErr(errInvalidAttrValue, "Invalid value for the parameter %s.", name)
}

func intAttr(name, v string, lo, hi int) (int, *Error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, badValue(name)
	}
	return n, nil
}

func (d *Door) applySetting(c *call, q *meta.Queue, name, v string, fifo bool) error {
	var err *Error
	switch name {
	case "DelaySeconds":
		q.DelaySeconds, err = intAttr(name, v, 0, service.MaxDelaySeconds)
	case "MessageRetentionPeriod":
		q.RetentionSeconds, err = intAttr(name, v, service.MinRetentionSeconds, service.MaxRetentionSeconds)
	case "ReceiveMessageWaitTimeSeconds":
		q.ReceiveWaitSeconds, err = intAttr(name, v, 0, service.MaxReceiveWaitSeconds)
	case "VisibilityTimeout":
		q.VisibilityTimeoutSeconds, err = intAttr(name, v, 0, service.MaxVisibilitySeconds)
	case "MaximumMessageSize":
		// The queue's maxMessageBytes; a value kept among the SQS attributes before the
		// setting existed goes, so it cannot shadow this one.
		q.MaxMessageBytes, err = intAttr(name, v, engine.MinMaxMessageBytes, engine.MaxMessageBytes)
		delete(q.SQSAttributes, name)
	case "ContentBasedDeduplication":
		if !fifo {
			return newErr(errInvalidAttrName, "Unknown Attribute ContentBasedDeduplication.")
		}
		b, perr := strconv.ParseBool(v)
		if perr != nil {
			return badValue(name)
		}
		q.ContentBasedDedup = b
	case "RedrivePolicy":
		return d.applyRedrive(c, q, v)
	}
	if err != nil {
		return err
	}
	return nil
}

// redrivePolicy is SQS's RedrivePolicy JSON; maxReceiveCount may be a number or a string.
type redrivePolicy struct {
	DeadLetterTargetArn string          `json:"deadLetterTargetArn"`
	MaxReceiveCount     json.RawMessage `json:"maxReceiveCount"`
}

func (d *Door) applyRedrive(c *call, q *meta.Queue, v string) error {
	ctx, cancel := d.storageCtx(c)
	defer cancel()
	if strings.TrimSpace(v) == "" || strings.TrimSpace(v) == "{}" {
		return d.cfg.Backend.ApplyRedrive(ctx, q, nil, 0)
	}
	var p redrivePolicy
	if err := json.Unmarshal([]byte(v), &p); err != nil {
		return newErr(errInvalidAttrValue, "Invalid value for the parameter RedrivePolicy. Reason: Redrive policy is not a valid JSON map.")
	}
	mrc, err := strconv.Atoi(strings.Trim(string(p.MaxReceiveCount), `"`))
	if err != nil || mrc < 1 || mrc > engine.MaxReceiveCountHi {
		return newErr(errInvalidAttrValue, "Value %s for parameter RedrivePolicy is invalid. Reason: Invalid value for maxReceiveCount: must be 1 to %d.", v, engine.MaxReceiveCountHi)
	}
	name := c.arnQueueName(p.DeadLetterTargetArn)
	if name == "" {
		return newErr(errInvalidAttrValue, "Value %s for parameter RedrivePolicy is invalid. Reason: Dead-letter target does not exist.", v)
	}
	dlq, lerr := d.cfg.Backend.QueueByName(ctx, q.ProjectID, name)
	if lerr != nil {
		return newErr(errInvalidAttrValue, "Value %s for parameter RedrivePolicy is invalid. Reason: Dead letter target does not exist.", v)
	}
	if !redriveAllowed(c, dlq, q.Name) {
		return newErr(errInvalidAttrValue, "Value %s for parameter RedrivePolicy is invalid. Reason: The dead-letter queue's RedriveAllowPolicy does not allow this source queue.", v)
	}
	if err := d.cfg.Backend.ApplyRedrive(ctx, q, &dlq.ID, mrc); err != nil {
		if apierr.CodeOf(err) == apierr.InvalidArgument || apierr.CodeOf(err) == apierr.NotFound {
			return newErr(errInvalidAttrValue, "Value %s for parameter RedrivePolicy is invalid. Reason: %s", v, apierr.As(service.Answer(err)).Message)
		}
		return err
	}
	return nil
}

// redriveAllowPolicy is SQS's RedriveAllowPolicy JSON.
type redriveAllowPolicy struct {
	RedrivePermission string   `json:"redrivePermission"`
	SourceQueueArns   []string `json:"sourceQueueArns"`
}

func redriveAllowed(c *call, dlq meta.Queue, source string) bool {
	raw := dlq.SQSAttributes["RedriveAllowPolicy"]
	if raw == "" {
		return true
	}
	var p redriveAllowPolicy
	_ = json.Unmarshal([]byte(raw), &p)
	switch p.RedrivePermission {
	case "denyAll":
		return false
	case "byQueue":
		for _, a := range p.SourceQueueArns {
			if c.arnQueueName(a) == source {
				return true
			}
		}
		return false
	}
	return true
}

func checkStored(name, v string, fifo bool) *Error {
	switch name {
	case "Policy":
		return checkPolicy(v)
	case "RedriveAllowPolicy":
		var p redriveAllowPolicy
		if json.Unmarshal([]byte(v), &p) != nil {
			return badValue(name)
		}
		switch p.RedrivePermission {
		case "allowAll", "denyAll":
		case "byQueue":
			if len(p.SourceQueueArns) < 1 || len(p.SourceQueueArns) > 10 {
				return badValue(name)
			}
		default:
			return badValue(name)
		}
	case "SqsManagedSseEnabled":
		if _, err := strconv.ParseBool(v); err != nil {
			return badValue(name)
		}
	case "DeduplicationScope", "FifoThroughputLimit":
		if !fifo {
			return newErr(errInvalidAttrName, "You can specify the %s only when FifoQueue is set to true.", name)
		}
		if name == "DeduplicationScope" && v != "queue" && v != "messageGroup" ||
			name == "FifoThroughputLimit" && v != "perQueue" && v != "perMessageGroupId" {
			return badValue(name)
		}
	}
	return nil
}

// queueAttributes are a queue's attributes as GetQueueAttributes answers them.
func (d *Door) queueAttributes(c *call, q meta.Queue, st engine.Stats) map[string]string {
	a := map[string]string{
		"ApproximateNumberOfMessages":           strconv.FormatInt(st.Visible, 10),
		"ApproximateNumberOfMessagesNotVisible": strconv.FormatInt(st.InFlight, 10),
		"ApproximateNumberOfMessagesDelayed":    strconv.FormatInt(st.Delayed, 10),
		"CreatedTimestamp":                      strconv.FormatInt(q.CreatedAt.Unix(), 10),
		"LastModifiedTimestamp":                 strconv.FormatInt(q.UpdatedAt.Unix(), 10),
		"QueueArn":                              c.queueARN(q.Name),
	}
	maps.Copy(a, configAttributes(c, d, q))
	return a
}

// configAttributes are the attributes a queue's configuration makes, defaults included (what
// CreateQueue compares).
func configAttributes(c *call, d *Door, q meta.Queue) map[string]string {
	a := settingAttributes(c, d, q)
	a["SqsManagedSseEnabled"] = "false"
	maps.Copy(a, q.SQSAttributes)
	a["MaximumMessageSize"] = strconv.Itoa(q.MaxMessageBytesOrDefault())
	return a
}

// settingAttributes are the attributes a queue's /v1 settings make.
func settingAttributes(c *call, d *Door, q meta.Queue) map[string]string {
	a := map[string]string{
		"DelaySeconds":                  strconv.Itoa(q.DelaySeconds),
		"MessageRetentionPeriod":        strconv.Itoa(q.RetentionSeconds),
		"ReceiveMessageWaitTimeSeconds": strconv.Itoa(q.ReceiveWaitSeconds),
		"VisibilityTimeout":             strconv.Itoa(q.VisibilityTimeoutSeconds),
	}
	if q.Type == string(engine.FIFO) {
		a["FifoQueue"] = "true"
		a["ContentBasedDeduplication"] = strconv.FormatBool(q.ContentBasedDedup)
		a["DeduplicationScope"] = "queue"
		a["FifoThroughputLimit"] = "perQueue"
	}
	if q.Redrive != nil {
		ctx, cancel := d.storageCtx(c)
		dlq, err := d.cfg.Backend.QueueByID(ctx, q.Redrive.DeadLetterQueue)
		cancel()
		if err == nil {
			b, _ := json.Marshal(map[string]any{"deadLetterTargetArn": c.queueARN(dlq.Name), "maxReceiveCount": q.Redrive.MaxReceiveCount})
			a["RedrivePolicy"] = string(b)
		}
	}
	return a
}

type createQueueInput struct {
	QueueName  string            `json:"QueueName"`
	Attributes map[string]string `json:"Attributes"`
	Tags       map[string]string `json:"tags"`
	// The query protocol's Tag.N entries arrive as Tags.
	QueryTags map[string]string `json:"Tags"`
}

type queueURLOutput struct {
	QueueURL string `json:"QueueUrl" xml:"QueueUrl"`
}

func (d *Door) createQueue(c *call) (any, error) {
	var in createQueueInput
	if err := c.inputInto(&in); err != nil {
		return nil, err
	}
	if in.QueueName == "" {
		return nil, missingParam("QueueName")
	}
	fifo := false
	if v, ok := in.Attributes["FifoQueue"]; ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, badValue("FifoQueue")
		}
		fifo = b
	}
	if fifo != strings.HasSuffix(in.QueueName, service.FIFOSuffix) {
		return nil, invalidParam("QueueName", "The name of a FIFO queue can only include alphanumeric characters, hyphens, or underscores, must end with .fifo suffix and be 1 to 80 in length; a standard queue's may not end in .fifo.")
	}
	typ := string(engine.Standard)
	if fifo {
		typ = string(engine.FIFO)
	}
	if err := service.ValidateQueueName(in.QueueName, fifo); err != nil {
		return nil, invalidParam("QueueName", "Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length.")
	}
	tags := in.Tags
	if tags == nil {
		tags = in.QueryTags
	}
	if err := checkTags(tags); err != nil {
		return nil, err
	}
	q := d.cfg.Backend.NewQueue(c.principal.ProjectID, in.QueueName, typ)
	if err := d.applyAttributes(c, &q, in.Attributes, true); err != nil {
		return nil, err
	}
	if len(tags) > 0 {
		q.Tags = maps.Clone(tags)
	}
	ctx, cancel := d.storageCtx(c)
	defer cancel()
	err := d.cfg.Backend.CreateQueue(ctx, q)
	if apierr.CodeOf(err) == apierr.QueueExists {
		// Idempotent: the same name with the same attributes is the same queue.
		cur, gerr := d.queueByName(c, in.QueueName)
		if gerr != nil {
			return nil, gerr
		}
		if differs := differentAttribute(c, d, cur, q, in.Attributes); cur.Type != q.Type || differs != "" {
			if differs == "" {
				differs = "FifoQueue"
			}
			return nil, newErr(errQueueNameExists, "A queue already exists with the same name and a different value for attribute %s", differs)
		}
		return queueURLOutput{c.queueURL(cur.Name)}, nil
	}
	if err != nil {
		return nil, err
	}
	return queueURLOutput{c.queueURL(q.Name)}, nil
}

// differentAttribute compares the attributes the request names: an existing queue is the same
// queue when each of them has the value asked for (attributes left out are not compared, so
// a create-if-missing without attributes finds a queue made with some). It answers the first
// (by name) that differs, which AWS's text names, or "".
func differentAttribute(c *call, d *Door, cur, q meta.Queue, asked map[string]string) string {
	have, want := configAttributes(c, d, cur), configAttributes(c, d, q)
	for _, name := range sortedKeys(asked) {
		if have[name] != want[name] {
			return name
		}
	}
	return ""
}

func (d *Door) getQueueURL(c *call) (any, error) {
	var in struct {
		QueueName              string `json:"QueueName"`
		QueueOwnerAWSAccountID string `json:"QueueOwnerAWSAccountId"`
	}
	if err := c.inputInto(&in); err != nil {
		return nil, err
	}
	if in.QueueName == "" {
		return nil, missingParam("QueueName")
	}
	if in.QueueOwnerAWSAccountID != "" && in.QueueOwnerAWSAccountID != c.projectSlug() {
		return nil, errNoQueue()
	}
	q, err := d.queueByName(c, in.QueueName)
	if err != nil {
		return nil, err
	}
	return queueURLOutput{c.queueURL(q.Name)}, nil
}

type listQueuesOutput struct {
	QueueUrls []string `json:"QueueUrls,omitempty" xml:"QueueUrl"`
	NextToken string   `json:"NextToken,omitempty" xml:"NextToken,omitempty"`
}

// listPage is the MaxResults/NextToken pair of SQS's paged list actions (ListQueues,
// ListDeadLetterSourceQueues): NextToken is the queue listing's cursor.
type listPage struct {
	NextToken  string `json:"NextToken"`
	MaxResults optInt `json:"MaxResults"`
}

// limit is MaxResults: 1 to 1000, 1000 when absent.
func (p listPage) limit() (int64, *Error) { return p.MaxResults.within("MaxResults", 1, 1000, 1000) }

// token is the NextToken of the answer: SQS gives one only to a request that set MaxResults.
func (p listPage) token(next string) string {
	if p.MaxResults.Set {
		return next
	}
	return ""
}

// queuesPage reads a page of the project's queues; a cursor the listing did not issue is
// SQS's invalid NextToken.
func (d *Door) queuesPage(ctx context.Context, c *call, prefix string, page meta.Page) ([]meta.Queue, string, error) {
	qs, next, err := d.cfg.Backend.ListQueues(ctx, c.principal.ProjectID, prefix, page)
	if apierr.CodeOf(err) == apierr.InvalidArgument {
		return nil, "", invalidParam("NextToken", "Invalid NextToken value.")
	}
	return qs, next, err
}

func (d *Door) listQueues(c *call) (any, error) {
	var in struct {
		QueueNamePrefix string `json:"QueueNamePrefix"`
		listPage
	}
	if err := c.inputInto(&in); err != nil {
		return nil, err
	}
	limit, perr := in.limit()
	if perr != nil {
		return nil, perr
	}
	if in.NextToken != "" && !in.MaxResults.Set {
		return nil, invalidParam("NextToken", "NextToken needs MaxResults")
	}
	if len(in.NextToken) > 2048 {
		return nil, invalidParam("NextToken", "Invalid NextToken value.")
	}
	ctx, cancel := d.storageCtx(c)
	defer cancel()
	qs, next, err := d.queuesPage(ctx, c, in.QueueNamePrefix, meta.Page{Limit: int(limit), Cursor: in.NextToken})
	if err != nil {
		return nil, err
	}
	out := listQueuesOutput{QueueUrls: make([]string, len(qs)), NextToken: in.token(next)}
	for i, q := range qs {
		out.QueueUrls[i] = c.queueURL(q.Name)
	}
	return out, nil
}

type attributesOutput struct {
	Attributes attrMap `json:"Attributes,omitempty" xml:"Attribute"`
}

func (d *Door) getQueueAttributes(c *call) (any, error) {
	var in struct {
		QueueURL       string   `json:"QueueUrl"`
		AttributeNames []string `json:"AttributeNames"`
	}
	if err := c.inputInto(&in); err != nil {
		return nil, err
	}
	q, err := d.queue(c, in.QueueURL)
	if err != nil {
		return nil, err
	}
	for _, n := range in.AttributeNames {
		if n != "All" && !isOneOf(n, storedAttrs, readOnlyAttrs, settableAttrs, []string{"FifoQueue"}) {
			return nil, newErr(errInvalidAttrName, "Unknown Attribute %s.", n)
		}
	}
	if len(in.AttributeNames) == 0 {
		return attributesOutput{}, nil
	}
	ctx, cancel := d.storageCtx(c)
	st, serr := d.cfg.Backend.Stats(ctx, q)
	cancel()
	if serr != nil {
		return nil, serr
	}
	all := d.queueAttributes(c, q, st)
	out := attrMap{}
	for _, n := range in.AttributeNames {
		if n == "All" {
			out = all
			break
		}
		if v, ok := all[n]; ok {
			out[n] = v
		}
	}
	return attributesOutput{Attributes: out}, nil
}

func (d *Door) setQueueAttributes(c *call) (any, error) {
	var in struct {
		QueueURL   string            `json:"QueueUrl"`
		Attributes map[string]string `json:"Attributes"`
	}
	if err := c.inputInto(&in); err != nil {
		return nil, err
	}
	q, err := d.queue(c, in.QueueURL)
	if err != nil {
		return nil, err
	}
	ctx, cancel := d.storageCtx(c)
	defer cancel()
	_, err = d.cfg.Backend.UpdateQueue(ctx, q, func(cur *meta.Queue) error {
		return d.applyAttributes(c, cur, in.Attributes, false)
	})
	return nil, err
}

type queueURLInput struct {
	QueueURL string `json:"QueueUrl"`
}

func (d *Door) deleteQueue(c *call) (any, error) {
	var in queueURLInput
	if err := c.inputInto(&in); err != nil {
		return nil, err
	}
	q, err := d.queue(c, in.QueueURL)
	if err != nil {
		return nil, err
	}
	ctx, cancel := d.storageCtx(c)
	defer cancel()
	return nil, d.cfg.Backend.DeleteQueue(ctx, q)
}

func (d *Door) purgeQueue(c *call) (any, error) {
	var in queueURLInput
	if err := c.inputInto(&in); err != nil {
		return nil, err
	}
	q, err := d.queue(c, in.QueueURL)
	if err != nil {
		return nil, err
	}
	ctx, cancel := d.storageCtx(c)
	defer cancel()
	err = d.cfg.Backend.Purge(ctx, q)
	if apierr.CodeOf(err) == apierr.PurgeTooSoon {
		return nil, newErr(errPurgeInProgress, "Only one PurgeQueue operation on %s is allowed every 60 seconds.", q.Name)
	}
	return nil, err
}

const (
	maxTags        = 50
	maxTagKeyLen   = 128
	maxTagValueLen = 256
)

func checkTags(tags map[string]string) *Error {
	if len(tags) > maxTags {
		return invalidParam("Tags", "a queue has at most %d tags", maxTags)
	}
	for k, v := range tags {
		if k == "" || len(k) > maxTagKeyLen || len(v) > maxTagValueLen || !validContents(k) || !validContents(v) {
			return invalidParam("Tags", "tag keys are 1 to %d characters and values at most %d", maxTagKeyLen, maxTagValueLen)
		}
	}
	return nil
}

func (d *Door) tagQueue(c *call) (any, error) {
	var in struct {
		QueueURL string            `json:"QueueUrl"`
		Tags     map[string]string `json:"Tags"`
	}
	if err := c.inputInto(&in); err != nil {
		return nil, err
	}
	if len(in.Tags) == 0 {
		return nil, missingParam("Tags")
	}
	if err := checkTags(in.Tags); err != nil {
		return nil, err
	}
	q, err := d.queue(c, in.QueueURL)
	if err != nil {
		return nil, err
	}
	ctx, cancel := d.storageCtx(c)
	defer cancel()
	_, err = d.cfg.Backend.UpdateQueue(ctx, q, func(cur *meta.Queue) error {
		next := maps.Clone(cur.Tags)
		if next == nil {
			next = map[string]string{}
		}
		maps.Copy(next, in.Tags)
		if err := checkTags(next); err != nil {
			return err
		}
		cur.Tags = next
		return nil
	})
	return nil, err
}

func (d *Door) untagQueue(c *call) (any, error) {
	var in struct {
		QueueURL string   `json:"QueueUrl"`
		TagKeys  []string `json:"TagKeys"`
	}
	if err := c.inputInto(&in); err != nil {
		return nil, err
	}
	if in.TagKeys == nil {
		// Absent, not empty: an empty list (the query protocol's TagKey=) removes nothing.
		return nil, missingParam("TagKeys")
	}
	q, err := d.queue(c, in.QueueURL)
	if err != nil {
		return nil, err
	}
	ctx, cancel := d.storageCtx(c)
	defer cancel()
	_, err = d.cfg.Backend.UpdateQueue(ctx, q, func(cur *meta.Queue) error {
		next := maps.Clone(cur.Tags)
		for _, k := range in.TagKeys {
			delete(next, k)
		}
		cur.Tags = next
		return nil
	})
	return nil, err
}

type tagsOutput struct {
	Tags tagMap `json:"Tags,omitempty" xml:"Tag"`
}

func (d *Door) listQueueTags(c *call) (any, error) {
	var in queueURLInput
	if err := c.inputInto(&in); err != nil {
		return nil, err
	}
	q, err := d.queue(c, in.QueueURL)
	if err != nil {
		return nil, err
	}
	return tagsOutput{Tags: q.Tags}, nil
}

type sourceQueuesOutput struct {
	QueueUrls []string `json:"queueUrls" xml:"QueueUrl"`
	NextToken string   `json:"NextToken,omitempty" xml:"NextToken,omitempty"`
}

func (d *Door) listDeadLetterSourceQueues(c *call) (any, error) {
	var in struct {
		QueueURL string `json:"QueueUrl"`
		listPage
	}
	if err := c.inputInto(&in); err != nil {
		return nil, err
	}
	limit, perr := in.limit()
	if perr != nil {
		return nil, perr
	}
	dlq, err := d.queue(c, in.QueueURL)
	if err != nil {
		return nil, err
	}
	// The sources are found by reading the project's queues in name order; NextToken is the
	// listing's cursor where this page stopped.
	ctx, cancel := d.storageCtx(c)
	defer cancel()
	out := sourceQueuesOutput{QueueUrls: []string{}}
	cursor := in.NextToken
	for {
		// A page no longer than the sources still wanted never overshoots the limit.
		page := meta.Page{Limit: int(limit) - len(out.QueueUrls), Cursor: cursor}
		qs, next, err := d.queuesPage(ctx, c, "", page)
		if err != nil {
			return nil, err
		}
		for _, q := range qs {
			if q.Redrive != nil && q.Redrive.DeadLetterQueue == dlq.ID {
				out.QueueUrls = append(out.QueueUrls, c.queueURL(q.Name))
			}
		}
		if next == "" || int64(len(out.QueueUrls)) >= limit {
			out.NextToken = in.token(next)
			return out, nil
		}
		cursor = next
	}
}
