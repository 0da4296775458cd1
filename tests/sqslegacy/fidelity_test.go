package sqslegacy

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

// wantText checks an SDK error's code and AWS's text, word for word.
func wantText(t *testing.T, err error, code, text string) {
	t.Helper()
	wantCode(t, err, code)
	var ae smithy.APIError
	errors.As(err, &ae)
	if ae.ErrorMessage() != text {
		t.Fatalf("%s: text %q, want %q", code, ae.ErrorMessage(), text)
	}
}

// TestQueryProtocolFidelity: the query protocol's empty lists (this SDK sends [] as
// AttributeName=) are empty lists in every action that takes one; a bare queue name is a
// QueueUrl; MessageAttributeNames wildcards select as on SQS; NonExistentQueue has the query
// protocol's own text.
func TestQueryProtocolFidelity(t *testing.T) {
	for _, tg := range targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			ctx, c := t.Context(), tg.client()
			must(c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("qfid"), Attributes: map[string]string{"VisibilityTimeout": "0"}})).get(t)
			q := aws.String("qfid") // the bare name
			str := func(v string) types.MessageAttributeValue {
				return types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
			}
			must(c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q, MessageBody: aws.String("m"),
				MessageAttributes: map[string]types.MessageAttributeValue{"Custom1": str("a"), "Custom.x": str("b"), "Other": str("c")}})).get(t)
			r := must(c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q, AttributeNames: []types.QueueAttributeName{},
				MessageAttributeNames: []string{}})).get(t)
			if len(r.Messages) != 1 || len(r.Messages[0].MessageAttributes) != 0 || len(r.Messages[0].Attributes) != 0 {
				t.Fatalf("receive with empty lists: %+v", r.Messages)
			}
			r = must(c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q, MessageAttributeNames: []string{"Custom.*"}})).get(t)
			var names []string
			for n := range r.Messages[0].MessageAttributes {
				names = append(names, n)
			}
			sort.Strings(names)
			if strings.Join(names, ",") != "Custom.x,Custom1" {
				t.Fatalf("Custom.* selected %v", names)
			}
			must(c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: q, AttributeNames: []types.QueueAttributeName{}})).get(t)
			must(c.TagQueue(ctx, &sqs.TagQueueInput{QueueUrl: q, Tags: map[string]string{"k": "v"}})).get(t)
			must(c.UntagQueue(ctx, &sqs.UntagQueueInput{QueueUrl: q, TagKeys: []string{}})).get(t)
			if tags := must(c.ListQueueTags(ctx, &sqs.ListQueueTagsInput{QueueUrl: q})).get(t).Tags; tags["k"] != "v" {
				t.Fatalf("an empty UntagQueue changed the tags: %v", tags)
			}
			_, err := c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: q, Entries: []types.SendMessageBatchRequestEntry{}})
			wantCode(t, err, "AWS.SimpleQueueService.EmptyBatchRequest")
			_, err = c.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: q, Entries: []types.DeleteMessageBatchRequestEntry{}})
			wantCode(t, err, "AWS.SimpleQueueService.EmptyBatchRequest") // this SDK drops a modeled error's text
			_, err = c.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: q, Entries: []types.ChangeMessageVisibilityBatchRequestEntry{}})
			wantCode(t, err, "AWS.SimpleQueueService.EmptyBatchRequest")
			_, err = c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String("nope")})
			wantText(t, err, "AWS.SimpleQueueService.NonExistentQueue", "The specified queue does not exist for this wsdl version.")
			must(c.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: q})).get(t)
		})
	}
}

// TestQueryProtocolFIFOBatchAndOlderHandles: through the query protocol, a fifo batch with an
// entry lacking MessageGroupId fails whole and sends nothing, and an older receipt handle
// changes its message's visibility as it is now.
func TestQueryProtocolFIFOBatchAndOlderHandles(t *testing.T) {
	for _, tg := range targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			ctx, c := t.Context(), tg.client()
			f := must(c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("qwhole.fifo"),
				Attributes: map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true", "VisibilityTimeout": "0"}})).get(t).QueueUrl
			_, err := c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: f, Entries: []types.SendMessageBatchRequestEntry{
				{Id: aws.String("a"), MessageBody: aws.String("a"), MessageGroupId: aws.String("g")},
				{Id: aws.String("b"), MessageBody: aws.String("b")}}})
			wantText(t, err, "InvalidParameterValue", "The request must contain the parameter MessageGroupId.")
			must(c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: f, MessageBody: aws.String("m"), MessageGroupId: aws.String("g")})).get(t)
			recv := func(vis int32) *sqs.ReceiveMessageOutput {
				return must(c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: f, VisibilityTimeout: vis})).get(t)
			}
			first := recv(0)
			if len(first.Messages) != 1 || *first.Messages[0].Body != "m" {
				t.Fatalf("received %+v: the refused batch sent something", first.Messages)
			}
			if len(recv(600).Messages) != 1 { // received again: the first handle is older
				t.Fatal("no second receive")
			}
			must(c.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: f, ReceiptHandle: first.Messages[0].ReceiptHandle, VisibilityTimeout: 0})).get(t)
			if len(recv(600).Messages) != 1 {
				t.Fatal("the older handle did not release the message")
			}
		})
	}
}
