package sqs_test

import (
	"errors"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
)

// TestMessageAttributeNameWildcards: MessageAttributeNames selects as SQS does: "All", ".*"
// and "*" select every attribute, "Custom.*" every name starting with "Custom" (a dot after
// it or not), other names themselves.
func TestMessageAttributeNameWildcards(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		ctx, c := t.Context(), e.sqs
		q := must(c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("wild"),
			Attributes: map[string]string{"VisibilityTimeout": "0"}})).get(t).QueueUrl
		str := func(v string) types.MessageAttributeValue {
			return types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
		}
		must(c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q, MessageBody: aws.String("m"),
			MessageAttributes: map[string]types.MessageAttributeValue{
				"Custom1": str("a"), "Custom.x": str("b"), "Other": str("c")}})).get(t)
		for names, want := range map[string]string{
			"All": "Custom.x,Custom1,Other", ".*": "Custom.x,Custom1,Other", "*": "Custom.x,Custom1,Other",
			"Custom.*": "Custom.x,Custom1", "Custom.x.*": "Custom.x", "Other,Nope": "Other", "Nope": "",
		} {
			out := must(c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q,
				MessageAttributeNames: strings.Split(names, ",")})).get(t)
			if len(out.Messages) != 1 {
				t.Fatalf("%s: received %d messages", names, len(out.Messages))
			}
			var got []string
			for n := range out.Messages[0].MessageAttributes {
				got = append(got, n)
			}
			sort.Strings(got)
			if strings.Join(got, ",") != want {
				t.Errorf("MessageAttributeNames %s selected %v, want %s", names, got, want)
			}
		}
	})
}

// wantError checks an SDK error's SQS code and AWS's text, word for word.
func wantError(t *testing.T, err error, code, text string) {
	t.Helper()
	wantCode(t, err, code)
	var ae smithy.APIError
	errors.As(err, &ae)
	if ae.ErrorMessage() != text {
		t.Fatalf("%s: text %q, want %q", code, ae.ErrorMessage(), text)
	}
}

// TestFIFOBatchMissingIDsFailsWhole: a fifo SendMessageBatch with an entry lacking its
// MessageGroupId, or its MessageDeduplicationId without content-based deduplication, fails
// as a whole with SQS's code and text, and sends nothing.
func TestFIFOBatchMissingIDsFailsWhole(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		ctx, c := t.Context(), e.sqs
		q := must(c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("whole.fifo"),
			Attributes: map[string]string{"FifoQueue": "true"}})).get(t).QueueUrl
		good := types.SendMessageBatchRequestEntry{Id: aws.String("a"), MessageBody: aws.String("a"),
			MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String("d1")}
		noGroup := types.SendMessageBatchRequestEntry{Id: aws.String("b"), MessageBody: aws.String("b"),
			MessageDeduplicationId: aws.String("d2")}
		noDedup := types.SendMessageBatchRequestEntry{Id: aws.String("c"), MessageBody: aws.String("c"),
			MessageGroupId: aws.String("g")}
		_, err := c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: q, Entries: []types.SendMessageBatchRequestEntry{good, noGroup}})
		wantError(t, err, "InvalidParameterValue", "The request must contain the parameter MessageGroupId.")
		wantStatus(t, err, 400)
		_, err = c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: q, Entries: []types.SendMessageBatchRequestEntry{good, noDedup}})
		wantError(t, err, "InvalidParameterValue", "The queue should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly")
		attrs := must(c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: q,
			AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages}})).get(t)
		if n := attrs.Attributes["ApproximateNumberOfMessages"]; n != "0" {
			t.Fatalf("a refused batch stored %s messages", n)
		}
	})
}

// TestQueueURLForms: QueueUrl may be the bare queue name, or any URL whose last path segment
// is the name (an AWS one), for every action that takes it; a URL of this door's form must
// name the caller's project.
func TestQueueURLForms(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		ctx, c := t.Context(), e.sqs
		must(c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("bare")})).get(t)
		for _, u := range []string{"bare", "https://sqs.us-east-1.amazonaws.com/123456789012/bare", "http://elsewhere.test/x/y/bare"} {
			q := aws.String(u)
			must(c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q, MessageBody: aws.String("m")})).get(t)
			must(c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: q, Entries: []types.SendMessageBatchRequestEntry{
				{Id: aws.String("1"), MessageBody: aws.String("n")}}})).get(t)
			got := must(c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q, MaxNumberOfMessages: 10})).get(t)
			if len(got.Messages) != 2 {
				t.Fatalf("%s: received %d messages, want 2", u, len(got.Messages))
			}
			must(c.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: q,
				ReceiptHandle: got.Messages[0].ReceiptHandle, VisibilityTimeout: 60})).get(t)
			must(c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: q, ReceiptHandle: got.Messages[0].ReceiptHandle})).get(t)
			must(c.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: q, Entries: []types.DeleteMessageBatchRequestEntry{
				{Id: aws.String("1"), ReceiptHandle: got.Messages[1].ReceiptHandle}}})).get(t)
			must(c.TagQueue(ctx, &sqs.TagQueueInput{QueueUrl: q, Tags: map[string]string{"k": "v"}})).get(t)
			attrs := must(c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: q,
				AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages}})).get(t)
			if n := attrs.Attributes["ApproximateNumberOfMessages"]; n != "0" {
				t.Fatalf("%s: %s messages left", u, n)
			}
		}
		other := newEnv(t, e.b, []string{"*"})
		_, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(e.b.url + "/sqs/" + other.project + "/bare")})
		wantError(t, err, "AWS.SimpleQueueService.NonExistentQueue", "The specified queue does not exist.")
		_, err = c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String("nope")})
		wantError(t, err, "AWS.SimpleQueueService.NonExistentQueue", "The specified queue does not exist.")
	})
}
