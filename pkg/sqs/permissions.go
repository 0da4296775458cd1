package sqs

import (
	"encoding/json"
	"regexp"
	"strings"

	"github.com/queueshq/queues/pkg/meta"
)

// AddPermission and RemovePermission edit the queue's Policy attribute as SQS does: each
// label is one statement (Sid = Label) allowing the named accounts the named actions. The
// service does not enforce the policy (a project's tokens and their scopes decide what a
// caller may do); it is kept and shown back so that tools that grant and revoke see what
// they did.

// maxPermissionActions is how many actions one AddPermission may name (SQS's limit).
const maxPermissionActions = 7

// permissionActions are the actions SQS lets a queue owner grant to another account; the
// others are the owner's alone.
var permissionActions = []string{"*", "ChangeMessageVisibility", "DeleteMessage", "GetQueueAttributes",
	"GetQueueUrl", "ListDeadLetterSourceQueues", "PurgeQueue", "ReceiveMessage", "SendMessage"}

// permissionLabel is SQS's rule for a label: 1 to 80 letters, digits, hyphens, underscores.
var permissionLabel = regexp.MustCompile(`^[A-Za-z0-9_-]{1,80}$`)

// permList is a list parameter of these two actions. The query protocol's empty list
// arrives as an empty string (ActionName=), which is an empty list.
type permList []string

func (l *permList) UnmarshalJSON(b []byte) error {
	if string(b) == `""` || string(b) == "null" {
		*l = nil
		return nil
	}
	return json.Unmarshal(b, (*[]string)(l))
}

type permissionInput struct {
	QueueURL      string   `json:"QueueUrl"`
	Label         string   `json:"Label"`
	AWSAccountIDs permList `json:"AWSAccountIds"`
	Actions       permList `json:"Actions"`
}

// policyDoc is a policy document as stored: every member a SetQueueAttributes wrote is
// kept; the two actions edit only Statement.
type policyDoc map[string]any

// statements are the document's statements; SQS also takes a single statement object.
func (p policyDoc) statements() []any {
	switch st := p["Statement"].(type) {
	case []any:
		return st
	case map[string]any:
		return []any{st}
	}
	return nil
}

// sid is a statement's Sid ("" when it has none).
func sid(s any) string {
	m, _ := s.(map[string]any)
	v, _ := m["Sid"].(string)
	return v
}

// checkPermission validates AddPermission's parameters (the queue is resolved first).
func checkPermission(in permissionInput) *Error {
	if in.Label == "" {
		return missingParam("Label")
	}
	if !permissionLabel.MatchString(in.Label) {
		return newErr(errInvalidParameter, "Value %s for parameter Label is invalid. Reason: Must be 1 to 80 letters, digits, hyphens or underscores.", in.Label)
	}
	if len(in.Actions) == 0 {
		return missingParam("Actions")
	}
	if len(in.AWSAccountIDs) == 0 {
		return newErr(errInvalidParameter, "Value [] for parameter PrincipalId is invalid. Reason: Unable to verify.")
	}
	if len(in.Actions) > maxPermissionActions {
		return newErr(errOverLimit, "%d Actions were found, maximum allowed is %d.", len(in.Actions), maxPermissionActions)
	}
	for _, a := range in.Actions {
		if !isOneOf(a, permissionActions) {
			return newErr(errInvalidParameter, "Value SQS:%s for parameter ActionName is invalid. Reason: Only the queue owner is allowed to invoke this action.", a)
		}
	}
	for _, id := range in.AWSAccountIDs {
		if id == "" || !validContents(id) {
			return newErr(errInvalidParameter, "Value [%s] for parameter PrincipalId is invalid. Reason: Unable to verify.", id)
		}
	}
	return nil
}

// oneOrMany is how SQS writes a statement's principals and actions: a single value alone,
// several as a list.
func oneOrMany(vs []string) any {
	if len(vs) == 1 {
		return vs[0]
	}
	return vs
}

// readPolicy is the queue's policy document; a queue without one starts SQS's default.
func readPolicy(c *call, q *meta.Queue) policyDoc {
	var doc policyDoc
	// SetQueueAttributes accepts only a JSON object as Policy, so a stored one reads.
	if raw := q.SQSAttributes["Policy"]; raw == "" || json.Unmarshal([]byte(raw), &doc) != nil || doc == nil {
		doc = policyDoc{"Version": "2012-10-17", "Id": c.queueARN(q.Name) + "/SQSDefaultPolicy"}
	}
	return doc
}

// writePolicy stores the document with these statements, or removes Policy once none is
// left (GetQueueAttributes then lists no Policy, as on a queue that never had one).
func writePolicy(q *meta.Queue, doc policyDoc, statements []any) {
	if len(statements) == 0 {
		delete(q.SQSAttributes, "Policy")
		return
	}
	doc["Statement"] = statements
	b, _ := json.Marshal(doc)
	if q.SQSAttributes == nil {
		q.SQSAttributes = map[string]string{}
	}
	q.SQSAttributes["Policy"] = string(b)
}

// grant adds the label's statement to the queue's policy.
func grant(c *call, q *meta.Queue, label string, principals, actions []string) *Error {
	doc := readPolicy(c, q)
	statements := doc.statements()
	for _, s := range statements {
		if sid(s) == label {
			return newErr(errInvalidParameter, "Value %s for parameter Label is invalid. Reason: Already exists.", label)
		}
	}
	statements = append(statements, map[string]any{
		"Sid":       label,
		"Effect":    "Allow",
		"Principal": map[string]any{"AWS": oneOrMany(principals)},
		"Action":    oneOrMany(actions),
		"Resource":  c.queueARN(q.Name),
	})
	writePolicy(q, doc, statements)
	return nil
}

// revoke takes the label's statements out of the queue's policy.
func revoke(c *call, q *meta.Queue, label string) *Error {
	doc := readPolicy(c, q)
	statements := doc.statements()
	var kept []any
	for _, s := range statements {
		if sid(s) != label {
			kept = append(kept, s)
		}
	}
	if len(kept) == len(statements) {
		return newErr(errInvalidParameter, "Value %s for parameter Label is invalid. Reason: can't find label on existing policy.", label)
	}
	writePolicy(q, doc, kept)
	return nil
}

func (d *Door) addPermission(c *call) (any, error) {
	var in permissionInput
	if err := c.inputInto(&in); err != nil {
		return nil, err
	}
	q, err := d.queue(c, in.QueueURL)
	if err != nil {
		return nil, err
	}
	if err := checkPermission(in); err != nil {
		return nil, err
	}
	principals := make([]string, len(in.AWSAccountIDs))
	for i, id := range in.AWSAccountIDs {
		principals[i] = "arn:aws:iam::" + id + ":root"
	}
	actions := make([]string, len(in.Actions))
	for i, a := range in.Actions {
		actions[i] = "SQS:" + a
	}
	ctx, cancel := d.storageCtx(c)
	defer cancel()
	_, err = d.cfg.Backend.UpdateQueue(ctx, q, func(cur *meta.Queue) error {
		// Not `return grant(...)`: a nil *Error is a non-nil error.
		if err := grant(c, cur, in.Label, principals, actions); err != nil {
			return err
		}
		return nil
	})
	return nil, err
}

func (d *Door) removePermission(c *call) (any, error) {
	var in permissionInput
	if err := c.inputInto(&in); err != nil {
		return nil, err
	}
	q, err := d.queue(c, in.QueueURL)
	if err != nil {
		return nil, err
	}
	if in.Label == "" {
		return nil, missingParam("Label")
	}
	ctx, cancel := d.storageCtx(c)
	defer cancel()
	_, err = d.cfg.Backend.UpdateQueue(ctx, q, func(cur *meta.Queue) error {
		if err := revoke(c, cur, in.Label); err != nil {
			return err
		}
		return nil
	})
	return nil, err
}

// checkPolicy is SetQueueAttributes' check of Policy: "" removes it, anything else must be
// a JSON object (a policy document).
func checkPolicy(v string) *Error {
	if strings.TrimSpace(v) == "" {
		return nil
	}
	var doc map[string]any
	if json.Unmarshal([]byte(v), &doc) != nil {
		return badValue("Policy")
	}
	return nil
}
