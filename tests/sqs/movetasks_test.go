package sqs_test

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// TestMessageMoveTasks redrives a dead-letter queue with the SDK's StartMessageMoveTask,
// lists and cancels tasks, and reads ListMessageMoveTasks over the query protocol.
func TestMessageMoveTasks(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		ctx, c := t.Context(), e.sqs
		dlq := must(c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("mdead")})).get(t)
		arn := "arn:aws:sqs:eu-west-3:" + e.project + ":mdead"
		src := must(c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("mwork"), Attributes: map[string]string{
			"RedrivePolicy": `{"deadLetterTargetArn":"` + arn + `","maxReceiveCount":1}`}})).get(t)
		sent := must(c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: src.QueueUrl, MessageBody: aws.String("poison")})).get(t)
		r := must(c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: src.QueueUrl})).get(t)
		e.do(t, "POST", "/v1/receipts/dead-letter", map[string]any{"receiptHandle": *r.Messages[0].ReceiptHandle}, 204, nil)

		_, err := c.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String("arn:aws:sqs:eu-west-3:" + e.project + ":nope")})
		wantCode(t, err, "ResourceNotFoundException")
		_, err = c.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(arn), MaxNumberOfMessagesPerSecond: aws.Int32(0)})
		wantCode(t, err, "InvalidParameterValue")

		start := must(c.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(arn)})).get(t)
		if aws.ToString(start.TaskHandle) == "" {
			t.Fatal("no TaskHandle")
		}
		// The message comes back to its source with its id.
		back := must(c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: src.QueueUrl, WaitTimeSeconds: 10,
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{"ApproximateReceiveCount"}})).get(t)
		if len(back.Messages) != 1 || *back.Messages[0].MessageId != *sent.MessageId || back.Messages[0].Attributes["ApproximateReceiveCount"] != "1" {
			t.Fatalf("redriven: %+v", back.Messages)
		}
		var list *sqs.ListMessageMoveTasksOutput
		for deadline := time.Now().Add(30 * time.Second); ; {
			list = must(c.ListMessageMoveTasks(ctx, &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(arn), MaxResults: aws.Int32(10)})).get(t)
			if len(list.Results) == 1 && aws.ToString(list.Results[0].Status) != "RUNNING" || time.Now().After(deadline) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if len(list.Results) != 1 {
			t.Fatalf("listed %d tasks", len(list.Results))
		}
		got := list.Results[0]
		if aws.ToString(got.Status) != "COMPLETED" || got.ApproximateNumberOfMessagesMoved != 1 || aws.ToInt64(got.ApproximateNumberOfMessagesToMove) != 1 ||
			aws.ToString(got.SourceArn) != arn || got.TaskHandle != nil || got.StartedTimestamp == 0 {
			t.Fatalf("listed task %+v", got)
		}
		_, err = c.CancelMessageMoveTask(ctx, &sqs.CancelMessageMoveTaskInput{TaskHandle: start.TaskHandle})
		wantCode(t, err, "AWS.SimpleQueueService.UnsupportedOperation")

		// A slow task to another queue, refused twice, then cancelled.
		must(c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("mreplay")})).get(t)
		for range 5 { // at 1 a second, the task runs for seconds
			must(c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: dlq.QueueUrl, MessageBody: aws.String("x")})).get(t)
		}
		slow := must(c.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(arn),
			DestinationArn: aws.String("arn:aws:sqs:eu-west-3:" + e.project + ":mreplay"), MaxNumberOfMessagesPerSecond: aws.Int32(1)})).get(t)
		_, err = c.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(arn)})
		wantCode(t, err, "AWS.SimpleQueueService.UnsupportedOperation")
		must(c.CancelMessageMoveTask(ctx, &sqs.CancelMessageMoveTaskInput{TaskHandle: slow.TaskHandle})).get(t)
		_, err = c.CancelMessageMoveTask(ctx, &sqs.CancelMessageMoveTaskInput{TaskHandle: aws.String("bm9wZQ")})
		wantCode(t, err, "InvalidParameterValue")

		// The query protocol's shapes.
		form := "Action=ListMessageMoveTasks&Version=2012-11-05&MaxResults=10&SourceArn=" + url.QueryEscape(arn)
		req, _ := http.NewRequestWithContext(ctx, "POST", e.b.url+"/", strings.NewReader(form))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		sum := sha256.Sum256([]byte(form))
		_ = v4.NewSigner().SignHTTP(ctx, aws.Credentials{AccessKeyID: e.token.Slug, SecretAccessKey: e.token.SQSSecretAccessKey}, req, hex.EncodeToString(sum[:]), "sqs", "eu-west-3", time.Now())
		st, _, body := do(t, req)
		if st != 200 || strings.Count(body, "<ListMessageMoveTasksResultEntry>") != 2 || !strings.Contains(body, "<Status>CANCELLED</Status>") ||
			!strings.Contains(body, "<Status>COMPLETED</Status>") || !strings.Contains(body, "<DestinationArn>arn:aws:sqs:eu-west-3:"+e.project+":mreplay</DestinationArn>") {
			t.Fatalf("query ListMessageMoveTasks: %d %s", st, body)
		}
	})
}
