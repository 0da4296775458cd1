package sqs_test

import (
	"encoding/base64"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

type v1Message struct {
	MessageID     string            `json:"messageId"`
	Body          string            `json:"body"`
	Attributes    map[string]string `json:"attributes"`
	ReceiptHandle string            `json:"receiptHandle"`
	ReceiveCount  int               `json:"receiveCount"`
	GroupID       string            `json:"groupId"`
	DeadLetter    *struct {
		SourceQueue string `json:"sourceQueue"`
		Reason      string `json:"reason"`
	} `json:"deadLetter"`
}

func (e *env) v1Receive(t *testing.T, queue string, max int) []v1Message {
	t.Helper()
	var out struct {
		Messages []v1Message `json:"messages"`
	}
	e.do(t, "POST", "/v1/queues/"+queue+"/receive", map[string]any{"maxMessages": max, "waitSeconds": 0}, 200, &out)
	return out.Messages
}

func (e *env) v1Send(t *testing.T, queue string, msgs ...map[string]any) {
	t.Helper()
	var out struct {
		Failed []any `json:"failed"`
	}
	e.do(t, "POST", "/v1/queues/"+queue+"/messages", map[string]any{"messages": msgs}, 200, &out)
	if len(out.Failed) > 0 {
		t.Fatalf("/v1 send failed: %v", out.Failed)
	}
}

type v1Counts struct {
	ID     string `json:"id"`
	Counts struct {
		Visible, InFlight, Delayed int
	} `json:"counts"`
}

func (e *env) v1Queue(t *testing.T, queue string) v1Counts {
	t.Helper()
	var q v1Counts
	e.do(t, "GET", "/v1/queues/"+queue, nil, 200, &q)
	return q
}

// TestCrossDoorStandard: SQS send, /v1 receive and settle; /v1 send, SQS receive and settle;
// typed attributes shown as strings on /v1 and returned with their types on SQS.
func TestCrossDoorStandard(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		ctx, c := t.Context(), e.sqs
		q := must(c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("cross")})).get(t)
		bin := []byte{0xde, 0xad, 0xbe, 0xef}
		sent := must(c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("from sqs"), MessageAttributes: map[string]types.MessageAttributeValue{
			"kind":  {DataType: aws.String("String"), StringValue: aws.String("new")},
			"price": {DataType: aws.String("Number"), StringValue: aws.String("12.50")},
			"blob":  {DataType: aws.String("Binary"), BinaryValue: bin},
		}})).get(t)
		got := e.v1Receive(t, "cross", 10)
		if len(got) != 1 || got[0].MessageID != *sent.MessageId || got[0].Body != "from sqs" {
			t.Fatalf("/v1 received %+v", got)
		}
		a := got[0].Attributes
		if a["kind"] != "new" || a["price"] != "12.50" || a["blob"] != base64.StdEncoding.EncodeToString(bin) {
			t.Fatalf("/v1 attributes %v", a)
		}
		// The SQS door settles the /v1 handle: release it, receive through SQS with the types.
		must(c.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: q.QueueUrl, ReceiptHandle: aws.String(got[0].ReceiptHandle), VisibilityTimeout: 0})).get(t)
		r := must(c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, MessageAttributeNames: []string{"All"}})).get(t)
		if len(r.Messages) != 1 || *r.Messages[0].MD5OfMessageAttributes != *sent.MD5OfMessageAttributes ||
			string(r.Messages[0].MessageAttributes["blob"].BinaryValue) != string(bin) || *r.Messages[0].MessageAttributes["price"].DataType != "Number" {
			t.Fatalf("SQS received %+v", r.Messages)
		}
		// ... and /v1 acknowledges the SQS handle.
		e.do(t, "POST", "/v1/receipts/ack", map[string]any{"receiptHandle": *r.Messages[0].ReceiptHandle}, 204, nil)
		e.do(t, "POST", "/v1/receipts/ack", map[string]any{"receiptHandle": *r.Messages[0].ReceiptHandle}, 410, nil)

		// /v1 send, SQS receive (String attributes, SQS's MD5) and delete.
		e.v1Send(t, "cross", map[string]any{"body": "from v1", "attributes": map[string]string{"kind": "old"}})
		r = must(c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, MessageAttributeNames: []string{"All"}})).get(t)
		if len(r.Messages) != 1 || *r.Messages[0].Body != "from v1" || *r.Messages[0].MessageAttributes["kind"].DataType != "String" ||
			*r.Messages[0].MD5OfMessageAttributes != md5OfStringAttr("kind", "old") {
			t.Fatalf("SQS received %+v", r.Messages)
		}
		must(c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: q.QueueUrl, ReceiptHandle: r.Messages[0].ReceiptHandle})).get(t)
		if n := e.v1Queue(t, "cross").Counts; n.Visible+n.InFlight+n.Delayed != 0 {
			t.Fatalf("counts after settling everything: %+v", n)
		}

		// Purge through either door empties the queue for both.
		e.v1Send(t, "cross", map[string]any{"body": "1"}, map[string]any{"body": "2"})
		must(c.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: q.QueueUrl})).get(t)
		if n := e.v1Queue(t, "cross").Counts; n.Visible != 0 {
			t.Fatalf("visible after an SQS purge: %d", n.Visible)
		}
		must(c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("later")})).get(t)
		if n := e.v1Queue(t, "cross").Counts; n.Visible != 1 {
			t.Fatalf("a send after the purge: visible %d", n.Visible)
		}
	})
}

// TestCrossDoorFIFOAndDeadLetter: fifo order and groups across doors, and a redrive policy set
// through SQS moving a message that /v1 released.
func TestCrossDoorFIFOAndDeadLetter(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		ctx, c := t.Context(), e.sqs
		e.do(t, "POST", "/v1/queues", map[string]any{"name": "f.fifo", "type": "fifo"}, 201, nil)
		url := must(c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("f.fifo")})).get(t).QueueUrl
		must(c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: url, MessageBody: aws.String("1"), MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String("one")})).get(t)
		e.v1Send(t, "f.fifo", map[string]any{"body": "2", "groupId": "g", "dedupId": "two"})
		got := e.v1Receive(t, "f.fifo", 10)
		if len(got) != 2 || got[0].Body != "1" || got[1].Body != "2" || got[0].GroupID != "g" {
			t.Fatalf("/v1 received %+v", got)
		}
		del := must(c.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: url, Entries: []types.DeleteMessageBatchRequestEntry{
			{Id: aws.String("a"), ReceiptHandle: aws.String(got[0].ReceiptHandle)}, {Id: aws.String("b"), ReceiptHandle: aws.String(got[1].ReceiptHandle)}}})).get(t)
		if len(del.Successful) != 2 {
			t.Fatalf("SQS batch delete of /v1 handles: %+v", del)
		}

		// Dead-letter: a standard queue whose RedrivePolicy comes through SQS.
		dlq := must(c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("dead")})).get(t)
		arn := must(c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: dlq.QueueUrl, AttributeNames: []types.QueueAttributeName{"QueueArn"}})).get(t).Attributes["QueueArn"]
		src := must(c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("work"), Attributes: map[string]string{
			"RedrivePolicy": `{"deadLetterTargetArn":"` + arn + `","maxReceiveCount":1}`}})).get(t)
		e.v1Send(t, "work", map[string]any{"body": "poison"})
		r := must(c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: src.QueueUrl})).get(t)
		if len(r.Messages) != 1 {
			t.Fatalf("received %d", len(r.Messages))
		}
		e.do(t, "POST", "/v1/receipts/visibility", map[string]any{"receiptHandle": *r.Messages[0].ReceiptHandle, "visibilityTimeoutSeconds": 0}, 204, nil)
		// The second receive finds it received maxReceiveCount times and moves it.
		if again := must(c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: src.QueueUrl})).get(t); len(again.Messages) != 0 {
			t.Fatalf("a message past maxReceiveCount was returned: %+v", again.Messages)
		}
		moved := must(c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: dlq.QueueUrl, WaitTimeSeconds: 5,
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{"DeadLetterQueueSourceArn"}})).get(t)
		if len(moved.Messages) != 1 || *moved.Messages[0].Body != "poison" || moved.Messages[0].Attributes["DeadLetterQueueSourceArn"] != "arn:aws:sqs:eu-west-3:"+e.project+":work" {
			t.Fatalf("dead-letter queue received %+v", moved.Messages)
		}
		// The dead-letter queue lists its source, and /v1 shows the policy.
		srcs := must(c.ListDeadLetterSourceQueues(ctx, &sqs.ListDeadLetterSourceQueuesInput{QueueUrl: dlq.QueueUrl})).get(t)
		if len(srcs.QueueUrls) != 1 {
			t.Fatalf("sources %v", srcs.QueueUrls)
		}
		var wq struct {
			Redrive struct {
				DeadLetterQueue string `json:"deadLetterQueue"`
				MaxReceiveCount int    `json:"maxReceiveCount"`
			} `json:"redrive"`
		}
		e.do(t, "GET", "/v1/queues/work", nil, 200, &wq)
		if wq.Redrive.DeadLetterQueue != e.v1Queue(t, "dead").ID || wq.Redrive.MaxReceiveCount != 1 {
			t.Fatalf("/v1 redrive %+v", wq.Redrive)
		}
		// Removing the policy through SQS removes it on /v1.
		must(c.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: src.QueueUrl, Attributes: map[string]string{"RedrivePolicy": ""}})).get(t)
		var after map[string]any
		e.do(t, "GET", "/v1/queues/work", nil, 200, &after)
		if after["redrive"] != nil {
			t.Fatalf("redrive after removal: %v", after["redrive"])
		}
	})
}

// TestProjectIsolation: a project's key pair reaches no other project's queues or handles.
func TestProjectIsolation(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		ctx := t.Context()
		other := newEnv(t, e.b, []string{"*"})
		q := must(e.sqs.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("mine")})).get(t)
		must(e.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("secret")})).get(t)
		_, err := other.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl})
		wantCode(t, err, "AWS.SimpleQueueService.NonExistentQueue")
		_, err = other.sqs.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("mine")})
		wantCode(t, err, "AWS.SimpleQueueService.NonExistentQueue")
		_, err = other.sqs.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("mine"), QueueOwnerAWSAccountId: aws.String(e.project)})
		wantCode(t, err, "AWS.SimpleQueueService.NonExistentQueue")
		// A handle of e's queue does not settle through a queue of the other project.
		r := must(e.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl})).get(t)
		theirs := must(other.sqs.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("mine")})).get(t)
		_, err = other.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: theirs.QueueUrl, ReceiptHandle: r.Messages[0].ReceiptHandle})
		wantCode(t, err, "ReceiptHandleIsInvalid")
		if n := e.v1Queue(t, "mine").Counts; n.InFlight != 1 {
			t.Fatalf("the message was settled from another project: %+v", n)
		}
	})
}

// TestCrossDoorAtMostOnce: SQS ReceiveMessage on an at-most-once queue removes the message and
// still returns a ReceiptHandle (SQS clients delete what they processed): DeleteMessage with
// it succeeds, as SQS's stale deletes do; ChangeMessageVisibility fails, nothing is in flight.
func TestCrossDoorAtMostOnce(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		ctx, c := t.Context(), e.sqs
		e.do(t, "POST", "/v1/queues", map[string]any{"name": "once", "delivery": "atMostOnce"}, 201, nil)
		url := must(c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("once")})).get(t).QueueUrl
		e.v1Send(t, "once", map[string]any{"body": "only once"})
		r := must(c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: 10})).get(t)
		if len(r.Messages) != 1 || *r.Messages[0].Body != "only once" || aws.ToString(r.Messages[0].ReceiptHandle) == "" {
			t.Fatalf("SQS received %+v, want the message with a receipt handle", r.Messages)
		}
		if n := e.v1Queue(t, "once").Counts; n.Visible+n.InFlight+n.Delayed != 0 {
			t.Fatalf("counts after an at-most-once receive: %+v", n)
		}
		if _, err := c.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: url, ReceiptHandle: r.Messages[0].ReceiptHandle, VisibilityTimeout: 0}); err == nil {
			t.Fatal("ChangeMessageVisibility of an at-most-once delivery succeeded")
		}
		must(c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: url, ReceiptHandle: r.Messages[0].ReceiptHandle})).get(t)
		if got := must(c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: 10})).get(t); len(got.Messages) != 0 {
			t.Fatalf("received again %+v", got.Messages)
		}
	})
}
