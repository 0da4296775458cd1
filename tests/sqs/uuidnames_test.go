package sqs_test

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/queueshq/queues/pkg/ids"
)

// TestUUIDShapedQueueNames: SQS code often names queues with a UUID; the door creates them and
// finds them by name, also a name equal to another queue's id (the SQS door names queues by
// name only, while /v1 tries such a value as an id first: docs/api-tour.md).
func TestUUIDShapedQueueNames(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		ctx, c := t.Context(), e.sqs
		name := ids.New().String()
		q := must(c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name)})).get(t)
		if !strings.HasSuffix(*q.QueueUrl, "/"+name) {
			t.Fatalf("QueueUrl %s", *q.QueueUrl)
		}
		if u := must(c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})).get(t); *u.QueueUrl != *q.QueueUrl {
			t.Fatalf("GetQueueUrl %s, want %s", *u.QueueUrl, *q.QueueUrl)
		}
		must(c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("by uuid name")})).get(t)
		if got := e.v1Receive(t, name, 10); len(got) != 1 || got[0].Body != "by uuid name" {
			t.Fatalf("/v1 received %+v", got)
		}
		_, err := c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(strings.ToUpper(name))})
		wantCode(t, err, "AWS.SimpleQueueService.NonExistentQueue")

		// A queue named with another queue's id: the door's QueueUrl and GetQueueUrl name it,
		// not the queue whose id it is.
		must(c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("other")})).get(t)
		other := e.v1Queue(t, "other")
		twin := must(c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(other.ID)})).get(t)
		if u := must(c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(other.ID)})).get(t); *u.QueueUrl != *twin.QueueUrl || !strings.HasSuffix(*u.QueueUrl, "/"+other.ID) {
			t.Fatalf("GetQueueUrl of the twin %s, want %s", *u.QueueUrl, *twin.QueueUrl)
		}
		must(c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: twin.QueueUrl, MessageBody: aws.String("to the twin")})).get(t)
		if n := e.v1Queue(t, "other").Counts.Visible; n != 0 {
			t.Fatalf("the queue whose id the twin's name is holds %d messages", n)
		}
		a := must(c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: twin.QueueUrl, AttributeNames: []types.QueueAttributeName{"ApproximateNumberOfMessages", "QueueArn"}})).get(t).Attributes
		if a["ApproximateNumberOfMessages"] != "1" || !strings.HasSuffix(a["QueueArn"], ":"+other.ID) {
			t.Fatalf("the twin's attributes %v", a)
		}
		// On /v1 the id finds "other"; the twin answers to its own id.
		if got := e.v1Queue(t, other.ID); got.ID != other.ID {
			t.Fatalf("/v1 by id answered %+v", got)
		}
	})
}
