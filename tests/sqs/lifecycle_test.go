package sqs_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
)

// must(f()).get(t) is f's value, or t fails with f's error.
func must[T any](v T, err error) result[T] { return result[T]{v, err} }

type result[T any] struct {
	v   T
	err error
}

func (r result[T]) get(t testing.TB) T {
	t.Helper()
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r.v
}

// wantCode checks an SDK error's SQS code.
func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		t.Fatalf("got %v, want the SQS error %s", err, code)
	}
	if ae.ErrorCode() != code {
		t.Fatalf("error code %q (%s), want %q", ae.ErrorCode(), ae.ErrorMessage(), code)
	}
}

// TestStandardLifecycle runs every action on a standard queue with the SDK's own checks (the
// body and attribute MD5s) on.
func TestStandardLifecycle(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		ctx, c := t.Context(), e.sqs
		dlq := must(c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("orders-dlq")})).get(t)
		dlqArn := must(c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: dlq.QueueUrl,
			AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})).get(t).Attributes["QueueArn"]
		if want := "arn:aws:sqs:eu-west-3:" + e.project + ":orders-dlq"; dlqArn != want {
			t.Fatalf("QueueArn %q, want %q", dlqArn, want)
		}
		attrs := map[string]string{
			"VisibilityTimeout": "45", "DelaySeconds": "0", "MessageRetentionPeriod": "3600",
			"RedrivePolicy": `{"deadLetterTargetArn":"` + dlqArn + `","maxReceiveCount":"3"}`,
		}
		q := must(c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("orders"), Attributes: attrs,
			Tags: map[string]string{"team": "shop"}})).get(t)
		if want := e.b.url + "/sqs/" + e.project + "/orders"; *q.QueueUrl != want {
			t.Fatalf("QueueUrl %q, want %q", *q.QueueUrl, want)
		}
		// Idempotent with the same attributes; QueueNameExists with others.
		again := must(c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("orders"), Attributes: attrs})).get(t)
		if *again.QueueUrl != *q.QueueUrl {
			t.Fatalf("second CreateQueue answered %q", *again.QueueUrl)
		}
		// Attributes at their defaults, named or not, are the same queue.
		if same := must(c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("orders"), Attributes: map[string]string{
			"VisibilityTimeout": "45", "MaximumMessageSize": "262144", "ReceiveMessageWaitTimeSeconds": "0"}})).get(t); *same.QueueUrl != *q.QueueUrl {
			t.Fatalf("CreateQueue with default attributes answered %q", *same.QueueUrl)
		}
		// Without attributes, CreateQueue finds the queue whatever its attributes.
		if bare := must(c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("orders")})).get(t); *bare.QueueUrl != *q.QueueUrl {
			t.Fatalf("CreateQueue without attributes answered %q", *bare.QueueUrl)
		}
		_, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("orders"), Attributes: map[string]string{"VisibilityTimeout": "46"}})
		wantCode(t, err, "QueueAlreadyExists")
		var qne *types.QueueNameExists
		if !errors.As(err, &qne) {
			t.Fatalf("CreateQueue with other attributes: %T, want *types.QueueNameExists", err)
		}

		got := must(c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("orders")})).get(t)
		if *got.QueueUrl != *q.QueueUrl {
			t.Fatalf("GetQueueUrl %q", *got.QueueUrl)
		}
		_, err = c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("nope")})
		var dne *types.QueueDoesNotExist
		if !errors.As(err, &dne) {
			t.Fatalf("GetQueueUrl of a missing queue: %v", err)
		}
		wantCode(t, err, "AWS.SimpleQueueService.NonExistentQueue")

		list := must(c.ListQueues(ctx, &sqs.ListQueuesInput{QueueNamePrefix: aws.String("ord")})).get(t)
		if len(list.QueueUrls) != 2 {
			t.Fatalf("ListQueues: %v", list.QueueUrls)
		}
		page := must(c.ListQueues(ctx, &sqs.ListQueuesInput{MaxResults: aws.Int32(1)})).get(t)
		if len(page.QueueUrls) != 1 || page.NextToken == nil {
			t.Fatalf("ListQueues MaxResults 1: %v %v", page.QueueUrls, page.NextToken)
		}
		page = must(c.ListQueues(ctx, &sqs.ListQueuesInput{MaxResults: aws.Int32(1), NextToken: page.NextToken})).get(t)
		if len(page.QueueUrls) != 1 || page.NextToken != nil {
			t.Fatalf("ListQueues second page: %v %v", page.QueueUrls, page.NextToken)
		}

		must(c.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: q.QueueUrl, Attributes: map[string]string{"ReceiveMessageWaitTimeSeconds": "1", "MaximumMessageSize": "2048"}})).get(t)
		qa := must(c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: q.QueueUrl, AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}})).get(t).Attributes
		for k, v := range map[string]string{"VisibilityTimeout": "45", "MessageRetentionPeriod": "3600", "ReceiveMessageWaitTimeSeconds": "1",
			"MaximumMessageSize": "2048", "ApproximateNumberOfMessages": "0", "DelaySeconds": "0"} {
			if qa[k] != v {
				t.Errorf("attribute %s = %q, want %q (all: %v)", k, qa[k], v, qa)
			}
		}
		if !strings.Contains(qa["RedrivePolicy"], dlqArn) || qa["CreatedTimestamp"] == "" || qa["LastModifiedTimestamp"] == "" {
			t.Errorf("attributes %v", qa)
		}
		_, err = c.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: q.QueueUrl, Attributes: map[string]string{"VisibilityTimeout": "99999"}})
		wantCode(t, err, "InvalidAttributeValue")
		_, err = c.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: q.QueueUrl, Attributes: map[string]string{"Bogus": "1"}})
		wantCode(t, err, "InvalidAttributeName")

		must(c.TagQueue(ctx, &sqs.TagQueueInput{QueueUrl: q.QueueUrl, Tags: map[string]string{"env": "prod"}})).get(t)
		must(c.UntagQueue(ctx, &sqs.UntagQueueInput{QueueUrl: q.QueueUrl, TagKeys: []string{"team"}})).get(t)
		tags := must(c.ListQueueTags(ctx, &sqs.ListQueueTagsInput{QueueUrl: q.QueueUrl})).get(t).Tags
		if len(tags) != 1 || tags["env"] != "prod" {
			t.Fatalf("tags %v", tags)
		}
		src := must(c.ListDeadLetterSourceQueues(ctx, &sqs.ListDeadLetterSourceQueuesInput{QueueUrl: dlq.QueueUrl})).get(t)
		if len(src.QueueUrls) != 1 || src.QueueUrls[0] != *q.QueueUrl {
			t.Fatalf("ListDeadLetterSourceQueues %v", src.QueueUrls)
		}

		// Messages with every attribute type; the SDK checks the body MD5 itself.
		mattrs := map[string]types.MessageAttributeValue{
			"s":          {DataType: aws.String("String"), StringValue: aws.String("héllo")},
			"n":          {DataType: aws.String("Number"), StringValue: aws.String("-12.5e3")},
			"b":          {DataType: aws.String("Binary"), BinaryValue: []byte{0, 1, 2, 255}},
			"custom":     {DataType: aws.String("Number.int"), StringValue: aws.String("7")},
			"pre.fix.a":  {DataType: aws.String("Binary.gzip"), BinaryValue: []byte("zz")},
			"pre.fix.b":  {DataType: aws.String("String.json"), StringValue: aws.String(`{"a":1}`)},
			"other.name": {DataType: aws.String("String"), StringValue: aws.String("x")},
		}
		sent := must(c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("order 1"), MessageAttributes: mattrs,
			MessageSystemAttributes: map[string]types.MessageSystemAttributeValue{"AWSTraceHeader": {DataType: aws.String("String"), StringValue: aws.String("Root=1-5759e988-bd862e3fe1be46a994272793")}}})).get(t)
		if *sent.MD5OfMessageBody != md5hex("order 1") || sent.MD5OfMessageAttributes == nil || sent.MD5OfMessageSystemAttributes == nil {
			t.Fatalf("SendMessage answer %+v", sent)
		}
		batch := must(c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: q.QueueUrl, Entries: []types.SendMessageBatchRequestEntry{
			{Id: aws.String("a"), MessageBody: aws.String("order 2")},
			{Id: aws.String("b"), MessageBody: aws.String("order 3"), DelaySeconds: 0},
			{Id: aws.String("bad"), MessageBody: aws.String(strings.Repeat("x", 3000))},
		}})).get(t)
		if len(batch.Successful) != 2 || len(batch.Failed) != 1 || *batch.Failed[0].Id != "bad" || *batch.Failed[0].Code != "InvalidParameterValue" || !batch.Failed[0].SenderFault {
			t.Fatalf("SendMessageBatch %+v", batch)
		}
		_, err = c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: q.QueueUrl, Entries: []types.SendMessageBatchRequestEntry{
			{Id: aws.String("a"), MessageBody: aws.String("x")}, {Id: aws.String("a"), MessageBody: aws.String("y")}}})
		wantCode(t, err, "AWS.SimpleQueueService.BatchEntryIdsNotDistinct")
		_, err = c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: q.QueueUrl, Entries: []types.SendMessageBatchRequestEntry{}})
		wantCode(t, err, "AWS.SimpleQueueService.EmptyBatchRequest")

		// Receive the first with every system attribute and prefixed message attributes.
		rcv := must(c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, MaxNumberOfMessages: 1,
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
			MessageAttributeNames:       []string{"s", "n", "b", "custom", "pre.fix.*"}})).get(t)
		if len(rcv.Messages) != 1 {
			t.Fatalf("received %d", len(rcv.Messages))
		}
		m := rcv.Messages[0]
		if *m.Body != "order 1" || *m.MessageId != *sent.MessageId || *m.MD5OfMessageAttributes == "" || len(m.MessageAttributes) != 6 {
			t.Fatalf("received %+v", m)
		}
		for k, v := range mattrs {
			if k == "other.name" {
				continue
			}
			gv := m.MessageAttributes[k]
			if *gv.DataType != *v.DataType || aws.ToString(gv.StringValue) != aws.ToString(v.StringValue) || string(gv.BinaryValue) != string(v.BinaryValue) {
				t.Errorf("attribute %s = %+v, want %+v", k, gv, v)
			}
		}
		if *m.MD5OfMessageAttributes == *sent.MD5OfMessageAttributes {
			t.Error("the received MD5 covers only the returned attributes, so it must differ from the sent one")
		}
		if m.Attributes["ApproximateReceiveCount"] != "1" || m.Attributes["SentTimestamp"] == "" || m.Attributes["ApproximateFirstReceiveTimestamp"] == "" ||
			m.Attributes["AWSTraceHeader"] != "Root=1-5759e988-bd862e3fe1be46a994272793" {
			t.Errorf("system attributes %v", m.Attributes)
		}
		all := must(c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 0, VisibilityTimeout: 30, MessageAttributeNames: []string{"All"}})).get(t)
		if len(all.Messages) != 2 {
			t.Fatalf("second receive: %d messages", len(all.Messages))
		}

		// Visibility: release one and receive it again; change a batch.
		must(c.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: q.QueueUrl, ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0})).get(t)
		_, err = c.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: q.QueueUrl, ReceiptHandle: aws.String("forged"), VisibilityTimeout: 0})
		wantCode(t, err, "ReceiptHandleIsInvalid")
		cv := must(c.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: q.QueueUrl, Entries: []types.ChangeMessageVisibilityBatchRequestEntry{
			{Id: aws.String("x"), ReceiptHandle: all.Messages[0].ReceiptHandle, VisibilityTimeout: 60},
			{Id: aws.String("y"), ReceiptHandle: aws.String("forged"), VisibilityTimeout: 60},
		}})).get(t)
		if len(cv.Successful) != 1 || len(cv.Failed) != 1 || *cv.Failed[0].Code != "ReceiptHandleIsInvalid" {
			t.Fatalf("ChangeMessageVisibilityBatch %+v", cv)
		}
		again2 := must(c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameApproximateReceiveCount}})).get(t)
		if len(again2.Messages) != 1 || again2.Messages[0].Attributes["ApproximateReceiveCount"] != "2" {
			t.Fatalf("receive after release: %+v", again2.Messages)
		}
		// The first handle is stale now: SQS's delete of a stale handle succeeds.
		must(c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: q.QueueUrl, ReceiptHandle: m.ReceiptHandle})).get(t)
		must(c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: q.QueueUrl, ReceiptHandle: again2.Messages[0].ReceiptHandle})).get(t)
		del := must(c.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: q.QueueUrl, Entries: []types.DeleteMessageBatchRequestEntry{
			{Id: aws.String("0"), ReceiptHandle: all.Messages[0].ReceiptHandle},
			{Id: aws.String("1"), ReceiptHandle: all.Messages[1].ReceiptHandle},
		}})).get(t)
		if len(del.Successful) != 2 || len(del.Failed) != 0 {
			t.Fatalf("DeleteMessageBatch %+v", del)
		}
		counts := must(c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: q.QueueUrl, AttributeNames: []types.QueueAttributeName{
			types.QueueAttributeNameApproximateNumberOfMessages, types.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})).get(t).Attributes
		if counts["ApproximateNumberOfMessages"] != "0" || counts["ApproximateNumberOfMessagesNotVisible"] != "0" {
			t.Fatalf("counts after deleting everything: %v", counts)
		}

		must(c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("to purge")})).get(t)
		must(c.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: q.QueueUrl})).get(t)
		_, err = c.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: q.QueueUrl})
		wantCode(t, err, "AWS.SimpleQueueService.PurgeQueueInProgress")
		empty := must(c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, WaitTimeSeconds: 0})).get(t)
		if len(empty.Messages) != 0 {
			t.Fatalf("purged queue answered %d messages", len(empty.Messages))
		}

		must(c.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: q.QueueUrl})).get(t)
		must(c.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: dlq.QueueUrl})).get(t)
		_, err = c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("orders")})
		wantCode(t, err, "AWS.SimpleQueueService.NonExistentQueue")
	})
}
