package sqs

import (
	"net/url"
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
		"AddPermission":                {auth.ScopeQueuesAdmin, (*Door).addPermission},
		"RemovePermission":             {auth.ScopeQueuesAdmin, (*Door).removePermission},
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

// queue resolves the QueueUrl parameter (or the queue URL the request was posted to). As on
// SQS, QueueUrl may be a bare queue name, or any URL whose last path segment is the name
// (another host's, an AWS one); a URL of this door's form, /sqs/<project slug>/<name>, must name
// the caller's project.
func (d *Door) queue(c *call, queueURL string) (meta.Queue, error) {
	if queueURL == "" {
		queueURL = c.pathQueue
	}
	if queueURL == "" {
		return meta.Queue{}, missingParam("QueueUrl")
	}
	name, ok := c.queueNameOf(queueURL)
	if !ok {
		return meta.Queue{}, errNoQueue()
	}
	return d.queueByName(c, name)
}

// queueNameOf reads a queue name from a QueueUrl: its last path segment, or the value itself
// when it has no path. ok is false when it cannot name a queue of the caller's project.
func (c *call) queueNameOf(queueURL string) (string, bool) {
	path := queueURL
	if u, err := url.Parse(queueURL); err == nil && (u.Scheme != "" || u.Host != "") {
		path = u.Path
	}
	if rest, ok := strings.CutPrefix(path, queuePath); ok {
		prj, name, ok := strings.Cut(rest, "/")
		if !ok || strings.Contains(name, "/") {
			return "", false
		}
		if pid, err := ids.ParseSlug(ids.ProjectPrefix, prj); err != nil || pid != c.principal.ProjectID {
			return "", false
		}
		return name, name != ""
	}
	name := path[strings.LastIndexByte(path, '/')+1:]
	return name, name != ""
}

func (d *Door) queueByName(c *call, name string) (meta.Queue, error) {
	ctx, cancel := d.storageCtx(c)
	defer cancel()
	q, err := d.cfg.Backend.QueueByName(ctx, c.principal.ProjectID, name)
	if apierr.CodeOf(err) == apierr.NotFound || apierr.CodeOf(err) == apierr.InvalidArgument {
		return q, errNoQueue()
	}
	return q, err
}
