package sqs

import (
	"encoding/json"
	"net/url"
	"strconv"
	"strings"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/auth"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
)

// action is one SQS action: the /v1 scope it needs ("" for the settle actions, which need
// only a valid credential, as /v1's receipt routes need only the handle) and its handler.
type action struct {
	scope string
	run   func(d *Door, c *call) (any, error)
}

// actions is the routing table; every name not here answers InvalidAction. The message move
// tasks (movetasks.go) are routed only when Config.MoveTasks is set.
var actions map[string]action

func init() {
	actions = map[string]action{
		"CreateQueue":                  {auth.ScopeQueuesAdmin, (*Door).createQueue},
		"GetQueueUrl":                  {auth.ScopeQueuesRead, (*Door).getQueueURL},
		"ListQueues":                   {auth.ScopeQueuesRead, (*Door).listQueues},
		"GetQueueAttributes":           {auth.ScopeQueuesRead, (*Door).getQueueAttributes},
		"SetQueueAttributes":           {auth.ScopeQueuesAdmin, (*Door).setQueueAttributes},
		"DeleteQueue":                  {auth.ScopeQueuesAdmin, (*Door).deleteQueue},
		"PurgeQueue":                   {auth.ScopeQueuesAdmin, (*Door).purgeQueue},
		"TagQueue":                     {auth.ScopeQueuesAdmin, (*Door).tagQueue},
		"UntagQueue":                   {auth.ScopeQueuesAdmin, (*Door).untagQueue},
		"ListQueueTags":                {auth.ScopeQueuesRead, (*Door).listQueueTags},
		"ListDeadLetterSourceQueues":   {auth.ScopeQueuesRead, (*Door).listDeadLetterSourceQueues},
		"SendMessage":                  {auth.ScopeMessagesSend, (*Door).sendMessage},
		"SendMessageBatch":             {auth.ScopeMessagesSend, (*Door).sendMessageBatch},
		"ReceiveMessage":               {auth.ScopeMessagesReceive, (*Door).receiveMessage},
		"DeleteMessage":                {"", (*Door).deleteMessage},
		"DeleteMessageBatch":           {"", (*Door).deleteMessageBatch},
		"ChangeMessageVisibility":      {"", (*Door).changeMessageVisibility},
		"ChangeMessageVisibilityBatch": {"", (*Door).changeMessageVisibilityBatch},
		"StartMessageMoveTask":         {auth.ScopeQueuesAdmin, (*Door).startMessageMoveTask},
		"ListMessageMoveTasks":         {auth.ScopeQueuesRead, (*Door).listMessageMoveTasks},
		"CancelMessageMoveTask":        {auth.ScopeQueuesAdmin, (*Door).cancelMessageMoveTask},
	}
}

// optInt is an integer parameter: a JSON number, or a string of digits (the query protocol).
type optInt struct {
	V   int64
	Set bool
}

func (n *optInt) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	if s == "null" {
		return nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return err
	}
	n.V, n.Set = v, true
	return nil
}

// within checks an optional integer's range; def applies when it is absent.
func (n optInt) within(name string, lo, hi, def int64) (int64, *Error) {
	if !n.Set {
		return def, nil
	}
	if n.V < lo || n.V > hi {
		return 0, invalidParam(name, "must be an integer from %d to %d", lo, hi)
	}
	return n.V, nil
}

// input decodes the call's input document into v.
func (c *call) inputInto(v any) *Error {
	if err := json.Unmarshal(c.input, v); err != nil {
		if c.proto == protoJSON {
			return newErr(errSerialization, "could not read the input: %v", err)
		}
		return newErr(errInvalidParameter, "could not read the parameters: %v", err)
	}
	return nil
}

// baseURL is the scheme and host the client reached.
func (c *call) baseURL() string {
	scheme := "http"
	if c.r.TLS != nil {
		scheme = "https"
	}
	if p := c.r.Header.Get("X-Forwarded-Proto"); p == "https" || p == "http" {
		scheme = p
	}
	return scheme + "://" + c.r.Host
}

func (c *call) projectSlug() string { return c.principal.ProjectID.Slug(ids.ProjectPrefix) }

// queueURL is <base URL>/sqs/<project slug>/<queue name>.
func (c *call) queueURL(name string) string {
	return c.baseURL() + queuePath + c.projectSlug() + "/" + name
}

func (c *call) region() string {
	if c.regionName == "" {
		return "us-east-1"
	}
	return c.regionName
}

// queueARN is arn:aws:sqs:<region>:<project slug>:<queue name>.
func (c *call) queueARN(name string) string {
	return "arn:aws:sqs:" + c.region() + ":" + c.projectSlug() + ":" + name
}

// arnQueueName reads a queue ARN of the caller's project ("" when it is not one).
func (c *call) arnQueueName(arn string) string {
	parts := strings.Split(arn, ":")
	if len(parts) != 6 || parts[0] != "arn" || parts[2] != "sqs" || parts[4] != c.projectSlug() {
		return ""
	}
	return parts[5]
}

// queue resolves the QueueUrl parameter (or the queue URL the request was posted to).
func (d *Door) queue(c *call, queueURL string) (meta.Queue, error) {
	if queueURL == "" {
		queueURL = c.pathQueue
	}
	if queueURL == "" {
		return meta.Queue{}, missingParam("QueueUrl")
	}
	path := queueURL
	if u, err := url.Parse(queueURL); err == nil && u.Path != "" {
		path = u.Path
	}
	rest, ok := strings.CutPrefix(path, queuePath)
	prj, name, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 || name == "" || strings.Contains(name, "/") {
		return meta.Queue{}, newErr(errQueueDoesNotExist, "The specified queue does not exist.")
	}
	if pid, err := ids.ParseSlug(ids.ProjectPrefix, prj); err != nil || pid != c.principal.ProjectID {
		return meta.Queue{}, newErr(errQueueDoesNotExist, "The specified queue does not exist.")
	}
	return d.queueByName(c, name)
}

func (d *Door) queueByName(c *call, name string) (meta.Queue, error) {
	ctx, cancel := d.storageCtx(c)
	defer cancel()
	q, err := d.cfg.Backend.QueueByName(ctx, c.principal.ProjectID, name)
	if apierr.CodeOf(err) == apierr.NotFound || apierr.CodeOf(err) == apierr.InvalidArgument {
		return q, newErr(errQueueDoesNotExist, "The specified queue does not exist.")
	}
	return q, err
}
