package sqs_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// policyOf is the queue's Policy attribute, and whether GetQueueAttributes listed it.
func (e *env) policyOf(t *testing.T, queueURL *string) (map[string]any, bool) {
	t.Helper()
	out := must(e.sqs.GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{QueueUrl: queueURL,
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}})).get(t)
	raw, ok := out.Attributes["Policy"]
	if !ok {
		return nil, false
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(raw), &doc); err != nil {
		t.Fatalf("Policy %q: %v", raw, err)
	}
	return doc, true
}

// TestPermissions: AddPermission writes a statement (Sid = label, the accounts' root
// principals, SQS:<action>) into the queue's Policy, RemovePermission takes it out and
// removes Policy with its last statement, and each refusal is SQS's (code and text);
// SetQueueAttributes Policy="" removes a policy.
func TestPermissions(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		ctx, c := t.Context(), e.sqs
		q := must(c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("perm")})).get(t).QueueUrl
		if _, ok := e.policyOf(t, q); ok {
			t.Fatal("a new queue lists a Policy")
		}
		must(c.AddPermission(ctx, &sqs.AddPermissionInput{QueueUrl: q, Label: aws.String("one"),
			AWSAccountIds: []string{"111111111111"}, Actions: []string{"SendMessage"}})).get(t)
		must(c.AddPermission(ctx, &sqs.AddPermissionInput{QueueUrl: q, Label: aws.String("two"),
			AWSAccountIds: []string{"111111111111", "222222222222"}, Actions: []string{"ReceiveMessage", "DeleteMessage"}})).get(t)
		doc, ok := e.policyOf(t, q)
		arn := "arn:aws:sqs:eu-west-3:" + e.project + ":perm"
		if !ok || doc["Version"] != "2012-10-17" || doc["Id"] != arn+"/SQSDefaultPolicy" {
			t.Fatalf("Policy %v", doc)
		}
		st, _ := doc["Statement"].([]any)
		if len(st) != 2 {
			t.Fatalf("statements %v", doc["Statement"])
		}
		one, _ := json.Marshal(st[0])
		two, _ := json.Marshal(st[1])
		if string(one) != `{"Action":"SQS:SendMessage","Effect":"Allow","Principal":{"AWS":"arn:aws:iam::111111111111:root"},"Resource":"`+arn+`","Sid":"one"}` {
			t.Fatalf("statement one %s", one)
		}
		if string(two) != `{"Action":["SQS:ReceiveMessage","SQS:DeleteMessage"],"Effect":"Allow","Principal":{"AWS":["arn:aws:iam::111111111111:root","arn:aws:iam::222222222222:root"]},"Resource":"`+arn+`","Sid":"two"}` {
			t.Fatalf("statement two %s", two)
		}

		add := func(label string, accounts, actions []string) error {
			_, err := c.AddPermission(ctx, &sqs.AddPermissionInput{QueueUrl: q, Label: aws.String(label), AWSAccountIds: accounts, Actions: actions})
			return err
		}
		acct := []string{"111111111111"}
		wantError(t, add("one", acct, []string{"SendMessage"}), "InvalidParameterValue", "Value one for parameter Label is invalid. Reason: Already exists.")
		wantError(t, add("x", acct, []string{"RemovePermission"}), "InvalidParameterValue",
			"Value SQS:RemovePermission for parameter ActionName is invalid. Reason: Only the queue owner is allowed to invoke this action.")
		wantError(t, add("x", acct, []string{}), "MissingParameter", "The request must contain the parameter Actions.")
		wantError(t, add("x", []string{}, []string{"SendMessage"}), "InvalidParameterValue", "Value [] for parameter PrincipalId is invalid. Reason: Unable to verify.")
		eight := []string{"ChangeMessageVisibility", "DeleteMessage", "GetQueueAttributes", "GetQueueUrl",
			"ListDeadLetterSourceQueues", "PurgeQueue", "ReceiveMessage", "SendMessage"}
		wantError(t, add("x", acct, eight), "OverLimit", "8 Actions were found, maximum allowed is 7.")
		wantError(t, add("bad label!", acct, []string{"SendMessage"}), "InvalidParameterValue",
			"Value bad label! for parameter Label is invalid. Reason: Must be 1 to 80 letters, digits, hyphens or underscores.")
		// The SDK itself refuses a missing Label, so the JSON is written out.
		status, qerr, body := e.raw(t, e.token.Slug, e.token.SQSSecretAccessKey, "AddPermission",
			`{"QueueUrl":"`+*q+`","AWSAccountIds":["1"],"Actions":["SendMessage"]}`, time.Now())
		wantRaw(t, status, qerr, body, 400, "MissingParameter")
		if !strings.Contains(body, `"message":"The request must contain the parameter Label."`) {
			t.Fatalf("AddPermission without Label: %s", body)
		}
		var err error
		_, err = c.RemovePermission(ctx, &sqs.RemovePermissionInput{QueueUrl: q, Label: aws.String("nope")})
		wantError(t, err, "InvalidParameterValue", "Value nope for parameter Label is invalid. Reason: can't find label on existing policy.")
		if doc, _ := e.policyOf(t, q); len(doc["Statement"].([]any)) != 2 {
			t.Fatalf("a refused call changed the policy: %v", doc)
		}

		// The query protocol's flattened lists (AWSAccountId.N, ActionName.N) and an empty one.
		form := url.Values{"Action": {"AddPermission"}, "Version": {"2012-11-05"}, "QueueUrl": {*q}, "Label": {"three"},
			"AWSAccountId.1": {"333333333333"}, "ActionName.1": {"GetQueueUrl"}, "ActionName.2": {"*"}}
		if st, body := e.query(t, form); st != 200 || !strings.Contains(body, "<AddPermissionResponse") {
			t.Fatalf("query AddPermission: %d %s", st, body)
		}
		form.Set("Label", "four")
		form.Del("ActionName.1")
		form.Del("ActionName.2")
		form.Set("ActionName", "")
		if st, body := e.query(t, form); st != 400 || !strings.Contains(body, "<Message>The request must contain the parameter Actions.</Message>") {
			t.Fatalf("query AddPermission with ActionName= : %d %s", st, body)
		}

		must(c.RemovePermission(ctx, &sqs.RemovePermissionInput{QueueUrl: q, Label: aws.String("one")})).get(t)
		must(c.RemovePermission(ctx, &sqs.RemovePermissionInput{QueueUrl: q, Label: aws.String("three")})).get(t)
		if doc, _ := e.policyOf(t, q); len(doc["Statement"].([]any)) != 1 || doc["Statement"].([]any)[0].(map[string]any)["Sid"] != "two" {
			t.Fatalf("after removing one and three: %v", doc)
		}
		must(c.RemovePermission(ctx, &sqs.RemovePermissionInput{QueueUrl: q, Label: aws.String("two")})).get(t)
		if doc, ok := e.policyOf(t, q); ok {
			t.Fatalf("Policy listed after its last statement was removed: %v", doc)
		}

		// A policy set by SetQueueAttributes keeps its statements beside a grant; "" removes it.
		set := `{"Version":"2012-10-17","Statement":{"Sid":"mine","Effect":"Allow","Principal":"*","Action":"sqs:SendMessage","Resource":"` + arn + `"}}`
		must(c.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: q, Attributes: map[string]string{"Policy": set}})).get(t)
		must(c.AddPermission(ctx, &sqs.AddPermissionInput{QueueUrl: q, Label: aws.String("one"), AWSAccountIds: acct, Actions: []string{"*"}})).get(t)
		if doc, _ := e.policyOf(t, q); len(doc["Statement"].([]any)) != 2 || doc["Statement"].([]any)[0].(map[string]any)["Sid"] != "mine" {
			t.Fatalf("a grant beside a set policy: %v", doc)
		}
		_, err = c.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: q, Attributes: map[string]string{"Policy": "not json"}})
		wantError(t, err, "InvalidAttributeValue", "Invalid value for the parameter Policy.")
		must(c.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: q, Attributes: map[string]string{"Policy": ""}})).get(t)
		if doc, ok := e.policyOf(t, q); ok {
			t.Fatalf("Policy listed after Policy=\"\": %v", doc)
		}
		named := must(c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: q,
			AttributeNames: []types.QueueAttributeName{types.QueueAttributeNamePolicy}})).get(t)
		if _, ok := named.Attributes["Policy"]; ok {
			t.Fatalf("Policy asked for by name after Policy=\"\": %v", named.Attributes)
		}

		// A read-only token cannot grant.
		ro := e.newToken(t, []string{"queues:read"})
		_, err = e.client(ro.Slug, ro.SQSSecretAccessKey).AddPermission(ctx, &sqs.AddPermissionInput{QueueUrl: q,
			Label: aws.String("ro"), AWSAccountIds: acct, Actions: []string{"SendMessage"}})
		wantCode(t, err, "AccessDenied")
	})
}

// query posts a signed query-protocol form and answers the status and body.
func (e *env) query(t *testing.T, form url.Values) (int, string) {
	t.Helper()
	enc := form.Encode()
	req, _ := http.NewRequestWithContext(t.Context(), "POST", e.b.url+"/", strings.NewReader(enc))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	sum := sha256.Sum256([]byte(enc))
	_ = v4.NewSigner().SignHTTP(t.Context(), aws.Credentials{AccessKeyID: e.token.Slug, SecretAccessKey: e.token.SQSSecretAccessKey},
		req, hex.EncodeToString(sum[:]), "sqs", "eu-west-3", time.Now())
	st, _, body := do(t, req)
	return st, body
}
