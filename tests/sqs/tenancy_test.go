package sqs_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
)

// The project's limits and metering (docs/tenancy.md) hold on the SQS door as on /v1: a quota is
// SQS's OverLimit, the request rate its RequestThrottled, and the door's sends and receives
// are metered to the project.
func TestProjectLimitsAndMetering(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		ctx := t.Context()
		v1(t, e.b.url, operator, "PATCH", "/v1/projects/"+e.project,
			map[string]any{"limits": map[string]any{"maxQueues": 1, "maxStoredBytes": 100}}, 200, nil)
		url := mustQueue(t, e, "first")
		if _, err := e.sqs.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("second")}); errorCode(err) != "OverLimit" {
			t.Fatalf("a queue past maxQueues: %v, want OverLimit", err)
		}
		if _, err := e.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("0123456789")}); err != nil {
			t.Fatal(err)
		}
		big := strings.Repeat("x", 200)
		if _, err := e.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: &big}); errorCode(err) != "OverLimit" {
			t.Fatalf("a send past maxStoredBytes: %v, want OverLimit", err)
		}
		got, err := e.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url})
		if err != nil || len(got.Messages) != 1 {
			t.Fatalf("receive: %+v %v", got, err)
		}
		waitMetered(t, e, func(h map[string]any) bool {
			return h["messagesSent"] == 1.0 && h["messagesDelivered"] == 1.0 && h["bytesIn"] == 10.0 && h["requests"].(float64) >= 5
		})

		v1(t, e.b.url, operator, "PATCH", "/v1/projects/"+e.project,
			map[string]any{"limits": map[string]any{"requestsPerSecond": 2}}, 200, nil)
		noRetry := e.client(e.token.Slug, e.token.SQSSecretAccessKey)
		// Limits are cached for up to 2 s: calls keep coming until the new rate applies.
		for deadline := time.Now().Add(30 * time.Second); ; {
			_, err := noRetry.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("first")}, func(o *sqs.Options) {
				o.Retryer = aws.NopRetryer{}
			})
			if errorCode(err) == "RequestThrottled" {
				break
			}
			if err != nil {
				t.Fatalf("GetQueueUrl: %v", err)
			}
			if time.Now().After(deadline) {
				t.Fatal("calls at a limit of 2/s were never throttled")
			}
		}
	})
}

func mustQueue(t *testing.T, e *env, name string) string {
	t.Helper()
	out, err := e.sqs.CreateQueue(t.Context(), &sqs.CreateQueueInput{QueueName: &name})
	if err != nil {
		t.Fatalf("CreateQueue %s: %v", name, err)
	}
	return *out.QueueUrl
}

func errorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// waitMetered polls the operator's usage route until this hour's counters satisfy ok (the
// meter flushes every few seconds).
func waitMetered(t *testing.T, e *env, ok func(hour map[string]any) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	for {
		var u struct {
			Usage []map[string]any `json:"usage"`
		}
		v1(t, e.b.url, operator, "GET", "/v1/projects/"+e.project+"/usage", nil, 200, &u)
		if n := len(u.Usage); n > 0 && ok(u.Usage[n-1]) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("usage never reached the expected counts: %+v", u.Usage)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// TestSendBytesPerSecond (issue 31): the project's sendBytesPerSecond bounds the SQS door's
// sends as it does /v1's: SendMessage and SendMessageBatch beyond it answer RequestThrottled
// (HTTP 400, as SQS does), and nothing more is stored.
func TestSendBytesPerSecond(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		ctx := t.Context()
		url := mustQueue(t, e, "bytes")
		v1(t, e.b.url, operator, "PATCH", "/v1/projects/"+e.project,
			map[string]any{"limits": map[string]any{"sendBytesPerSecond": 1024}}, 200, nil)
		noRetry := func(o *sqs.Options) { o.Retryer = aws.NopRetryer{} }
		body := strings.Repeat("b", 900)
		// Limits are cached for up to 2 s: sends keep coming until the new rate applies.
		sent := 0
		for deadline := time.Now().Add(20 * time.Second); ; sent++ {
			_, err := e.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: &body}, noRetry)
			if errorCode(err) == "RequestThrottled" {
				wantStatus(t, err, 400)
				break
			}
			if err != nil {
				t.Fatalf("SendMessage: %v", err)
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d sends of 900 bytes at a limit of 1,024 bytes/s were never throttled", sent+1)
			}
		}
		entries := []types.SendMessageBatchRequestEntry{{Id: aws.String("a"), MessageBody: &body}, {Id: aws.String("b"), MessageBody: &body}}
		_, err := e.sqs.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: &url, Entries: entries}, noRetry)
		if errorCode(err) != "RequestThrottled" {
			t.Fatalf("SendMessageBatch past sendBytesPerSecond: %v, want RequestThrottled", err)
		}
		wantStatus(t, err, 400)
		attrs := must(e.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &url,
			AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages}})).get(t)
		if n := attrs.Attributes["ApproximateNumberOfMessages"]; n != strconv.Itoa(sent) {
			t.Fatalf("%s messages stored, want the %d admitted", n, sent)
		}
	})
}

func wantStatus(t *testing.T, err error, status int) {
	t.Helper()
	var re *awshttp.ResponseError
	if !errors.As(err, &re) || re.HTTPStatusCode() != status {
		t.Fatalf("%v: want HTTP %d", err, status)
	}
}
