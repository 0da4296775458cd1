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

// TestAWSErrorTexts: errors whose codes match SQS's carry AWS's texts word for word (those
// recorded against AWS, in localstack's snapshots and AWS's documentation).
func TestAWSErrorTexts(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		ctx, c := t.Context(), e.sqs
		const bad = "InvalidParameterValue"
		q := must(c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("texts"),
			Attributes: map[string]string{"MaximumMessageSize": "1024"}})).get(t).QueueUrl
		f := must(c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("texts.fifo"),
			Attributes: map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"}})).get(t).QueueUrl
		_, err := c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: q, Entries: []types.SendMessageBatchRequestEntry{}})
		wantError(t, err, "AWS.SimpleQueueService.EmptyBatchRequest", "There should be at least one SendMessageBatchRequestEntry in the request.")
		_, err = c.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: q, Entries: []types.DeleteMessageBatchRequestEntry{}})
		wantError(t, err, "AWS.SimpleQueueService.EmptyBatchRequest", "There should be at least one DeleteMessageBatchRequestEntry in the request.")
		_, err = c.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: q, Entries: []types.ChangeMessageVisibilityBatchRequestEntry{}})
		wantError(t, err, "AWS.SimpleQueueService.EmptyBatchRequest", "There should be at least one ChangeMessageVisibilityBatchRequestEntry in the request.")
		_, err = c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q, MaxNumberOfMessages: 11})
		wantError(t, err, bad, "Value 11 for parameter MaxNumberOfMessages is invalid. Reason: Must be between 1 and 10, if provided.")
		_, err = c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q, WaitTimeSeconds: 21})
		wantError(t, err, bad, "Value 21 for parameter WaitTimeSeconds is invalid. Reason: Must be >= 0 and <= 20, if provided.")
		_, err = c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q, MessageBody: aws.String("m"), DelaySeconds: 901})
		wantError(t, err, bad, "Value 901 for parameter DelaySeconds is invalid. Reason: DelaySeconds must be >= 0 and <= 900.")
		_, err = c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: f, MessageBody: aws.String("m"), MessageGroupId: aws.String("g"), DelaySeconds: 5})
		wantError(t, err, bad, "Value 5 for parameter DelaySeconds is invalid. Reason: The request include parameter that is not valid for this queue type.")
		_, err = c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: f, MessageBody: aws.String("m"), MessageGroupId: aws.String("group 123")})
		wantError(t, err, bad, "Value group 123 for parameter MessageGroupId is invalid. Reason: MessageGroupId can only include alphanumeric and punctuation characters. 1 to 128 in length.")
		_, err = c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q, MessageBody: aws.String(strings.Repeat("a", 1025))})
		wantError(t, err, bad, "One or more parameters are invalid. Reason: Message must be shorter than 1024 bytes.")
		_, err = c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q, MessageBody: aws.String("m"), MessageAttributes: map[string]types.MessageAttributeValue{
			"ErrorDetails": {DataType: aws.String("String"), StringValue: aws.String("")}}})
		wantError(t, err, bad, "Message (user) attribute 'ErrorDetails' must contain a non-empty value of type 'String'.")
		_, err = c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: q, ReceiptHandle: aws.String("garbage")})
		wantError(t, err, "ReceiptHandleIsInvalid", `The input receipt handle "garbage" is not a valid receipt handle.`)
		must(c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q, MessageBody: aws.String("m")})).get(t)
		h := must(c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q})).get(t).Messages[0].ReceiptHandle
		must(c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: q, ReceiptHandle: h})).get(t)
		must(c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: q, ReceiptHandle: h})).get(t) // again: no error, as on SQS
		_, err = c.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: q, ReceiptHandle: h, VisibilityTimeout: 42})
		wantError(t, err, bad, "Value "+*h+" for parameter ReceiptHandle is invalid. Reason: Message does not exist or is not available for visibility timeout change.")
		_, err = c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("texts"), Attributes: map[string]string{"DelaySeconds": "3"}})
		wantError(t, err, "QueueAlreadyExists", "A queue already exists with the same name and a different value for attribute DelaySeconds")
		_, err = c.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: q, Attributes: map[string]string{"FifoQueue": "true"}})
		wantError(t, err, "InvalidAttributeName", "Unknown Attribute FifoQueue.")
		must(c.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: f, Attributes: map[string]string{"FifoQueue": "true"}})).get(t)
		_, err = c.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: f, Attributes: map[string]string{"FifoQueue": "false"}})
		wantError(t, err, "InvalidAttributeValue", "Invalid value for the parameter FifoQueue. Reason: Modifying queue type is not supported.")
		_, err = c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("texts2"), Attributes: map[string]string{"FifoQueue": "false"}})
		wantError(t, err, "InvalidAttributeName", "Unknown Attribute FifoQueue.")
		_, err = c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("texts2"), Attributes: map[string]string{"DeduplicationScope": "queue"}})
		wantError(t, err, "InvalidAttributeName", "You can specify the DeduplicationScope only when FifoQueue is set to true.")
		must(c.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: q})).get(t)
		_, err = c.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: q})
		wantError(t, err, "AWS.SimpleQueueService.PurgeQueueInProgress", "Only one PurgeQueue operation on texts is allowed every 60 seconds.")
	})
}

// TestOlderReceiptHandles: on the SQS door, a handle from an earlier receive of a message
// received again changes the message's visibility as it is now (as SQS keeps all of a
// message's handles usable), and DeleteMessage with it succeeds without deleting (AWS's
// DeleteMessage reference); once the message is deleted, a visibility change with any of its
// handles fails with AWS's text.
func TestOlderReceiptHandles(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		ctx, c := t.Context(), e.sqs
		// The queue's visibility timeout is 0: a receive without one leaves the message visible.
		q := must(c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("older"),
			Attributes: map[string]string{"VisibilityTimeout": "0"}})).get(t).QueueUrl
		receive := func(vis int32) *string {
			t.Helper()
			out := must(c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q, VisibilityTimeout: vis})).get(t)
			if len(out.Messages) != 1 {
				t.Fatalf("received %d messages, want 1", len(out.Messages))
			}
			return out.Messages[0].ReceiptHandle
		}
		must(c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q, MessageBody: aws.String("m")})).get(t)
		h1 := receive(0) // visible again at once
		receive(600)     // received again: h1 is older
		must(c.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: q, ReceiptHandle: h1, VisibilityTimeout: 0})).get(t)
		h3 := receive(600) // h1 released the current delivery
		batch := must(c.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: q,
			Entries: []types.ChangeMessageVisibilityBatchRequestEntry{{Id: aws.String("a"), ReceiptHandle: h1, VisibilityTimeout: 0}}})).get(t)
		if len(batch.Successful) != 1 || len(batch.Failed) != 0 {
			t.Fatalf("batch with an older handle: %+v", batch)
		}
		h4 := receive(600)
		must(c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: q, ReceiptHandle: h3})).get(t) // older: succeeds, deletes nothing
		must(c.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: q, ReceiptHandle: h4, VisibilityTimeout: 0})).get(t)
		h5 := receive(600)
		must(c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: q, ReceiptHandle: h5})).get(t)
		_, err := c.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: q, ReceiptHandle: h1, VisibilityTimeout: 5})
		wantError(t, err, "InvalidParameterValue", "Value "+*h1+" for parameter ReceiptHandle is invalid. Reason: Message does not exist or is not available for visibility timeout change.")
	})
}
