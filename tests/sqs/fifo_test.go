package sqs_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// TestFIFOLifecycle: fifo names, deduplication, groups, system attributes and the receive
// attempt id, through the SDK.
func TestFIFOLifecycle(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		ctx, c := t.Context(), e.sqs
		_, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("jobs"), Attributes: map[string]string{"FifoQueue": "true"}})
		wantCode(t, err, "InvalidParameterValue")
		_, err = c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("jobs.fifo")})
		wantCode(t, err, "InvalidParameterValue")
		q := must(c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("jobs.fifo"),
			Attributes: map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"}})).get(t)
		qa := must(c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: q.QueueUrl, AttributeNames: []types.QueueAttributeName{"All"}})).get(t).Attributes
		if qa["FifoQueue"] != "true" || qa["ContentBasedDeduplication"] != "true" {
			t.Fatalf("fifo attributes %v", qa)
		}

		_, err = c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("no group")})
		wantCode(t, err, "MissingParameter")
		first := must(c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("a1"), MessageGroupId: aws.String("a"), MessageDeduplicationId: aws.String("d1")})).get(t)
		dup := must(c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("other body"), MessageGroupId: aws.String("a"), MessageDeduplicationId: aws.String("d1")})).get(t)
		if *dup.MessageId != *first.MessageId {
			t.Fatalf("a duplicate send answered %s, want the first's %s", *dup.MessageId, *first.MessageId)
		}
		must(c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: q.QueueUrl, Entries: []types.SendMessageBatchRequestEntry{
			{Id: aws.String("1"), MessageBody: aws.String("a2"), MessageGroupId: aws.String("a")},
			{Id: aws.String("2"), MessageBody: aws.String("b1"), MessageGroupId: aws.String("b")},
		}})).get(t)
		// Content-based deduplication: the same body again is the same message.
		must(c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("b1"), MessageGroupId: aws.String("b")})).get(t)

		in := &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, MaxNumberOfMessages: 10, ReceiveRequestAttemptId: aws.String("attempt-1"),
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{"MessageGroupId", "MessageDeduplicationId", "SequenceNumber", "ApproximateReceiveCount"}}
		r1 := must(c.ReceiveMessage(ctx, in)).get(t)
		if len(r1.Messages) != 3 {
			t.Fatalf("received %d messages, want 3 (a1, a2, b1)", len(r1.Messages))
		}
		order := map[string][]string{}
		for _, m := range r1.Messages {
			g := m.Attributes["MessageGroupId"]
			order[g] = append(order[g], *m.Body)
			if m.Attributes["SequenceNumber"] == "" || m.Attributes["MessageDeduplicationId"] == "" {
				t.Errorf("system attributes %v", m.Attributes)
			}
		}
		if len(order["a"]) != 2 || order["a"][0] != "a1" || order["a"][1] != "a2" || len(order["b"]) != 1 {
			t.Fatalf("groups %v", order)
		}
		if r1.Messages[0].Attributes["MessageDeduplicationId"] != "d1" {
			t.Errorf("first message's dedup id %v", r1.Messages[0].Attributes)
		}
		// A retried receive with the same attempt id answers the same messages and handles.
		r2 := must(c.ReceiveMessage(ctx, in)).get(t)
		if len(r2.Messages) != 3 || *r2.Messages[0].ReceiptHandle != *r1.Messages[0].ReceiptHandle {
			t.Fatalf("retried receive answered %d messages (handles equal: %v)", len(r2.Messages), len(r2.Messages) > 0 && *r2.Messages[0].ReceiptHandle == *r1.Messages[0].ReceiptHandle)
		}
		// Groups are in flight: a receive without the attempt id finds nothing.
		none := must(c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, MaxNumberOfMessages: 10})).get(t)
		if len(none.Messages) != 0 {
			t.Fatalf("received %d messages of groups in flight", len(none.Messages))
		}
		for _, m := range r1.Messages {
			must(c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: q.QueueUrl, ReceiptHandle: m.ReceiptHandle})).get(t)
		}

		plain := must(c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("nodedup.fifo"), Attributes: map[string]string{"FifoQueue": "true"}})).get(t)
		_, err = c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: plain.QueueUrl, MessageBody: aws.String("x"), MessageGroupId: aws.String("g")})
		wantCode(t, err, "InvalidParameterValue")
		_, err = c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: plain.QueueUrl, MessageBody: aws.String("x"), MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String("1"), DelaySeconds: 5})
		wantCode(t, err, "InvalidParameterValue")
	})
}

// TestAttemptIDAcrossReplicas: a fifo receive retried with its ReceiveRequestAttemptId on
// another API replica answers the same messages and handles.
func TestAttemptIDAcrossReplicas(t *testing.T) {
	e := newEnv(t, backends[0], []string{"*"}) // the stack
	ctx, c := t.Context(), e.sqs
	q := must(c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("r.fifo"), Attributes: map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"}})).get(t)
	must(c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("x"), MessageGroupId: aws.String("g")})).get(t)
	in := &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, ReceiveRequestAttemptId: aws.String("lost-answer")}
	first := must(c.ReceiveMessage(ctx, in)).get(t)
	other := (&env{b: backend{"stack-b", secondReplica}}).client(e.token.Slug, e.token.SQSSecretAccessKey)
	retry := must(other.ReceiveMessage(ctx, in)).get(t)
	if len(first.Messages) != 1 || len(retry.Messages) != 1 || *retry.Messages[0].ReceiptHandle != *first.Messages[0].ReceiptHandle {
		t.Fatalf("first %+v, retry on another replica %+v", first.Messages, retry.Messages)
	}
	must(other.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: q.QueueUrl, ReceiptHandle: retry.Messages[0].ReceiptHandle})).get(t)
}
