package sqslegacy

import (
	"crypto/rand"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// TestQueryProtocolUUIDName: a UUID-shaped queue name through the query protocol: created,
// found by GetQueueUrl, sent to and received from by its QueueUrl.
func TestQueryProtocolUUIDName(t *testing.T) {
	var b [16]byte
	_, _ = rand.Read(b[:])
	name := fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
	for _, tg := range targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			ctx, c := t.Context(), tg.client()
			q := must(c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name)})).get(t)
			if !strings.HasSuffix(*q.QueueUrl, "/"+name) {
				t.Fatalf("QueueUrl %s", *q.QueueUrl)
			}
			if u := must(c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})).get(t); *u.QueueUrl != *q.QueueUrl {
				t.Fatalf("GetQueueUrl %s, want %s", *u.QueueUrl, *q.QueueUrl)
			}
			must(c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("uuid")})).get(t)
			r := must(c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl})).get(t)
			if len(r.Messages) != 1 || *r.Messages[0].Body != "uuid" {
				t.Fatalf("received %+v", r.Messages)
			}
			must(c.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: q.QueueUrl})).get(t)
		})
	}
}
