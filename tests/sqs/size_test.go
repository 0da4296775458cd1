package sqs_test

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// TestMaximumMessageSize: MaximumMessageSize is the queue's maxMessageBytes on the SQS door
// (1,024 to 1,048,576, SQS's range since it raised the limit to 1 MiB; default 262,144): set at
// CreateQueue and SetQueueAttributes, shown by GetQueueAttributes and /v1 alike, and enforced
// on sends; a 1 MiB message goes through SQS whole; a batch holds at most 1 MiB in all.
func TestMaximumMessageSize(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		ctx, c := t.Context(), e.sqs
		size := func(url *string) string {
			t.Helper()
			a := must(c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: url,
				AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameMaximumMessageSize}})).get(t).Attributes
			return a["MaximumMessageSize"]
		}
		v1Size := func(queue string) float64 {
			t.Helper()
			var q map[string]any
			e.do(t, "GET", "/v1/queues/"+queue, nil, 200, &q)
			n, _ := q["maxMessageBytes"].(float64)
			return n
		}
		plain := must(c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("plain")})).get(t)
		if s := size(plain.QueueUrl); s != "262144" {
			t.Fatalf("default MaximumMessageSize %q", s)
		}
		for _, bad := range []string{"1023", "1048577", "big"} {
			_, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("bad"), Attributes: map[string]string{"MaximumMessageSize": bad}})
			wantCode(t, err, "InvalidAttributeValue")
		}
		big := must(c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("big"), Attributes: map[string]string{"MaximumMessageSize": "1048576"}})).get(t)
		if s, n := size(big.QueueUrl), v1Size("big"); s != "1048576" || n != 1048576 {
			t.Fatalf("created with 1048576: SQS %q, /v1 %v", s, n)
		}

		body := strings.Repeat("q", 1<<20)
		sent := must(c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: big.QueueUrl, MessageBody: aws.String(body)})).get(t)
		r := must(c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: big.QueueUrl})).get(t)
		if len(r.Messages) != 1 || *r.Messages[0].MessageId != *sent.MessageId || *r.Messages[0].Body != body {
			t.Fatalf("received %d messages, want the 1 MiB one", len(r.Messages))
		}
		_, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: big.QueueUrl, MessageBody: aws.String(body + "q")})
		wantCode(t, err, "InvalidParameterValue")
		_, err = c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: plain.QueueUrl, MessageBody: aws.String(strings.Repeat("p", 262145))})
		wantCode(t, err, "InvalidParameterValue")

		// A batch's messages together: at most 1 MiB.
		half := strings.Repeat("h", 600<<10)
		_, err = c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: big.QueueUrl, Entries: []types.SendMessageBatchRequestEntry{
			{Id: aws.String("a"), MessageBody: aws.String(half)}, {Id: aws.String("b"), MessageBody: aws.String(half)}}})
		wantCode(t, err, "AWS.SimpleQueueService.BatchRequestTooLong")

		// Either door changes it; the other sees the change and enforces it.
		must(c.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: big.QueueUrl, Attributes: map[string]string{"MaximumMessageSize": "1024"}})).get(t)
		if n := v1Size("big"); n != 1024 {
			t.Fatalf("/v1 after SetQueueAttributes 1024: %v", n)
		}
		_, err = c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: big.QueueUrl, MessageBody: aws.String(strings.Repeat("s", 1025))})
		wantCode(t, err, "InvalidParameterValue")
		e.do(t, "PATCH", "/v1/queues/big", map[string]any{"maxMessageBytes": 4096}, 200, nil)
		if s := size(big.QueueUrl); s != "4096" {
			t.Fatalf("SQS after a /v1 PATCH to 4096: %q", s)
		}
		must(c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: big.QueueUrl, MessageBody: aws.String(strings.Repeat("s", 4096))})).get(t)
	})
}
