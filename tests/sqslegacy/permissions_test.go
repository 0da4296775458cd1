package sqslegacy

import (
	"encoding/json"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// TestQueryProtocolPermissions: AddPermission and RemovePermission through the query
// protocol (AWSAccountId.N, ActionName.N; an empty list as ActionName=) edit the queue's
// Policy, and Policy="" removes it.
func TestQueryProtocolPermissions(t *testing.T) {
	for _, tg := range targets(t) {
		t.Run(tg.Name, func(t *testing.T) { permissions(t, tg) })
	}
}

func permissions(t *testing.T, tg target) {
	ctx, c := t.Context(), tg.client()
	// Not named legacy…: TestQueryProtocolLifecycle counts the queues with that prefix.
	q := must(c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("perm-legacy")})).get(t).QueueUrl
	statements := func() []map[string]any {
		t.Helper()
		a := must(c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: q,
			AttributeNames: []types.QueueAttributeName{"All"}})).get(t).Attributes
		raw, ok := a["Policy"]
		if !ok {
			return nil
		}
		var doc struct{ Statement []map[string]any }
		if err := json.Unmarshal([]byte(raw), &doc); err != nil {
			t.Fatalf("Policy %q: %v", raw, err)
		}
		return doc.Statement
	}
	must(c.AddPermission(ctx, &sqs.AddPermissionInput{QueueUrl: q, Label: aws.String("a"),
		AWSAccountIds: []string{"111111111111", "222222222222"}, Actions: []string{"SendMessage", "ReceiveMessage"}})).get(t)
	must(c.AddPermission(ctx, &sqs.AddPermissionInput{QueueUrl: q, Label: aws.String("b"),
		AWSAccountIds: []string{"111111111111"}, Actions: []string{"*"}})).get(t)
	st := statements()
	if len(st) != 2 || st[0]["Sid"] != "a" || st[1]["Sid"] != "b" || st[1]["Action"] != "SQS:*" {
		t.Fatalf("statements %v", st)
	}
	if acts, _ := st[0]["Action"].([]any); len(acts) != 2 || acts[0] != "SQS:SendMessage" {
		t.Fatalf("statement a's actions %v", st[0]["Action"])
	}
	_, err := c.AddPermission(ctx, &sqs.AddPermissionInput{QueueUrl: q, Label: aws.String("a"),
		AWSAccountIds: []string{"1"}, Actions: []string{"SendMessage"}})
	wantCode(t, err, "InvalidParameterValue")
	_, err = c.AddPermission(ctx, &sqs.AddPermissionInput{QueueUrl: q, Label: aws.String("c"),
		AWSAccountIds: []string{"1"}, Actions: []string{}})
	wantCode(t, err, "MissingParameter")
	must(c.RemovePermission(ctx, &sqs.RemovePermissionInput{QueueUrl: q, Label: aws.String("a")})).get(t)
	_, err = c.RemovePermission(ctx, &sqs.RemovePermissionInput{QueueUrl: q, Label: aws.String("a")})
	wantCode(t, err, "InvalidParameterValue")
	if st := statements(); len(st) != 1 || st[0]["Sid"] != "b" {
		t.Fatalf("after removing a: %v", st)
	}
	must(c.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: q, Attributes: map[string]string{"Policy": ""}})).get(t)
	if st := statements(); st != nil {
		t.Fatalf("Policy listed after Policy=\"\": %v", st)
	}
}
