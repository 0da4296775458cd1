package sqslegacy

import (
	"regexp"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// TestQueryProtocolSequenceNumber: through the query protocol, fifo SendMessage and
// SendMessageBatch answer each message's SequenceNumber (a duplicate the original's), the one
// its receive reports; a standard queue's sends answer none.
func TestQueryProtocolSequenceNumber(t *testing.T) {
	digits := regexp.MustCompile(`^[0-9]{1,20}$`)
	for _, tg := range targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			ctx, c := t.Context(), tg.client()
			q := must(c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("legacy-seq.fifo"), Attributes: map[string]string{"FifoQueue": "true"}})).get(t)
			one := must(c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("1"), MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String("d1")})).get(t)
			if !digits.MatchString(aws.ToString(one.SequenceNumber)) {
				t.Fatalf("SendMessage answered SequenceNumber %v", one.SequenceNumber)
			}
			dup := must(c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("2"), MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String("d1")})).get(t)
			if aws.ToString(dup.SequenceNumber) != *one.SequenceNumber {
				t.Fatalf("duplicate answered SequenceNumber %v, want %s", dup.SequenceNumber, *one.SequenceNumber)
			}
			b := must(c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: q.QueueUrl, Entries: []types.SendMessageBatchRequestEntry{
				{Id: aws.String("a"), MessageBody: aws.String("3"), MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String("d3")}}})).get(t)
			if len(b.Successful) != 1 || !digits.MatchString(aws.ToString(b.Successful[0].SequenceNumber)) {
				t.Fatalf("SendMessageBatch answered %+v", b.Successful)
			}
			r := must(c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, MaxNumberOfMessages: 10,
				AttributeNames: []types.QueueAttributeName{"SequenceNumber"}})).get(t)
			want := map[string]string{*one.MessageId: *one.SequenceNumber, *b.Successful[0].MessageId: *b.Successful[0].SequenceNumber}
			if len(r.Messages) != 2 {
				t.Fatalf("received %d messages", len(r.Messages))
			}
			for _, m := range r.Messages {
				if m.Attributes["SequenceNumber"] != want[*m.MessageId] {
					t.Fatalf("message %s received with SequenceNumber %q, sent with %q", *m.Body, m.Attributes["SequenceNumber"], want[*m.MessageId])
				}
			}
			std := must(c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("legacy-seq")})).get(t)
			if s := must(c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: std.QueueUrl, MessageBody: aws.String("s")})).get(t); s.SequenceNumber != nil {
				t.Fatalf("standard queue answered SequenceNumber %s", *s.SequenceNumber)
			}
		})
	}
}
