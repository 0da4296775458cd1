package sqslegacy

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// TestQueryProtocolMaximumMessageSize: over the query protocol, MaximumMessageSize is the
// queue's maxMessageBytes (up to 1 MiB), a 1 MiB message goes through whole, and one byte more
// is refused.
func TestQueryProtocolMaximumMessageSize(t *testing.T) {
	for _, tg := range targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			ctx, c := t.Context(), tg.client()
			q := must(c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("legacy-size"), Attributes: map[string]string{"MaximumMessageSize": "1048576"}})).get(t)
			a := must(c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: q.QueueUrl, AttributeNames: []types.QueueAttributeName{"MaximumMessageSize"}})).get(t).Attributes
			if a["MaximumMessageSize"] != "1048576" {
				t.Fatalf("MaximumMessageSize %q", a["MaximumMessageSize"])
			}
			if out := v1(t, tg, "GET", "/v1/queues/legacy-size", ""); !strings.Contains(out, `"maxMessageBytes":1048576`) {
				t.Fatalf("/v1 shows %.300s", out)
			}
			body := strings.Repeat("w", 1<<20)
			must(c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String(body)})).get(t)
			r := must(c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl})).get(t)
			if len(r.Messages) != 1 || *r.Messages[0].Body != body {
				t.Fatalf("received %d messages, want the 1 MiB one", len(r.Messages))
			}
			_, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String(body + "w")})
			wantCode(t, err, "InvalidParameterValue")
			_, err = c.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: q.QueueUrl, Attributes: map[string]string{"MaximumMessageSize": "1048577"}})
			wantCode(t, err, "InvalidAttributeValue")
			must(c.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: q.QueueUrl})).get(t)
		})
	}
}
