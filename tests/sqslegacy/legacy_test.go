// Package sqslegacy drives the SQS door with aws-sdk-go-v2/service/sqs v1.26.0, the last
// release that speaks SQS's query protocol (form-encoded requests, XML answers). It is its own
// module so that the SDK's old core (aws-sdk-go-v2 v1.22.1, smithy-go v1.16.0) stays as that
// release shipped it. The main module's tests/sqs runs it against the production stack and
// `queues serve`, passing each target in QUEUES_SQSLEGACY_TARGETS; without targets it starts
// `queues serve` itself (built from this repository).
package sqslegacy

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
)

// target is one running service and a project's credentials on it.
type target struct {
	Name    string `json:"name"`
	URL     string `json:"url"`
	Project string `json:"project"`
	Key     string `json:"key"`
	Secret  string `json:"secret"`
	Bearer  string `json:"bearer"`
}

func targets(t *testing.T) []target {
	var ts []target
	if v := os.Getenv("QUEUES_SQSLEGACY_TARGETS"); v != "" {
		if err := json.Unmarshal([]byte(v), &ts); err != nil {
			t.Fatalf("QUEUES_SQSLEGACY_TARGETS: %v", err)
		}
		return ts
	}
	return []target{serveTarget(t)}
}

func (tg target) client() *sqs.Client {
	return sqs.New(sqs.Options{
		BaseEndpoint: aws.String(tg.URL),
		Region:       "us-east-2",
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: tg.Key, SecretAccessKey: tg.Secret}, nil
		}),
	})
}

func must[T any](v T, err error) result[T] { return result[T]{v, err} }

type result[T any] struct {
	v   T
	err error
}

func (r result[T]) get(t *testing.T) T {
	t.Helper()
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r.v
}

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != code {
		t.Fatalf("got %v, want the SQS error %s", err, code)
	}
}

func md5hex(b []byte) string {
	s := md5.Sum(b)
	return hex.EncodeToString(s[:])
}

// TestQueryProtocolLifecycle runs every action through the query protocol, with the SDK's
// own checks on.
func TestQueryProtocolLifecycle(t *testing.T) {
	for _, tg := range targets(t) {
		t.Run(tg.Name, func(t *testing.T) { lifecycle(t, tg) })
	}
}

func lifecycle(t *testing.T, tg target) {
	ctx, c := t.Context(), tg.client()
	dlq := must(c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("legacy-dlq")})).get(t)
	arn := must(c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: dlq.QueueUrl, AttributeNames: []types.QueueAttributeName{"QueueArn"}})).get(t).Attributes["QueueArn"]
	attrs := map[string]string{"VisibilityTimeout": "40", "RedrivePolicy": `{"deadLetterTargetArn":"` + arn + `","maxReceiveCount":5}`}
	q := must(c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("legacy"), Attributes: attrs, Tags: map[string]string{"a": "1"}})).get(t)
	if want := tg.URL + "/sqs/" + tg.Project + "/legacy"; *q.QueueUrl != want {
		t.Fatalf("QueueUrl %s, want %s", *q.QueueUrl, want)
	}
	if again := must(c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("legacy"), Attributes: attrs})).get(t); *again.QueueUrl != *q.QueueUrl {
		t.Fatal("CreateQueue is not idempotent")
	}
	_, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("legacy"), Attributes: map[string]string{"DelaySeconds": "9"}})
	var qne *types.QueueNameExists
	if !errors.As(err, &qne) {
		t.Fatalf("CreateQueue with other attributes: %v", err)
	}
	if u := must(c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("legacy")})).get(t); *u.QueueUrl != *q.QueueUrl {
		t.Fatal("GetQueueUrl")
	}
	_, err = c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("missing")})
	var dne *types.QueueDoesNotExist
	if !errors.As(err, &dne) {
		t.Fatalf("GetQueueUrl of a missing queue: %v", err)
	}
	if l := must(c.ListQueues(ctx, &sqs.ListQueuesInput{QueueNamePrefix: aws.String("legacy")})).get(t); len(l.QueueUrls) != 2 {
		t.Fatalf("ListQueues %v", l.QueueUrls)
	}
	if l := must(c.ListQueues(ctx, &sqs.ListQueuesInput{MaxResults: aws.Int32(1)})).get(t); len(l.QueueUrls) != 1 || l.NextToken == nil {
		t.Fatalf("ListQueues page %v %v", l.QueueUrls, l.NextToken)
	}
	must(c.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: q.QueueUrl, Attributes: map[string]string{"DelaySeconds": "0", "MessageRetentionPeriod": "7200"}})).get(t)
	qa := must(c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: q.QueueUrl, AttributeNames: []types.QueueAttributeName{"All"}})).get(t).Attributes
	if qa["VisibilityTimeout"] != "40" || qa["MessageRetentionPeriod"] != "7200" || !strings.Contains(qa["RedrivePolicy"], arn) {
		t.Fatalf("attributes %v", qa)
	}
	must(c.TagQueue(ctx, &sqs.TagQueueInput{QueueUrl: q.QueueUrl, Tags: map[string]string{"b": "2", "c": "3"}})).get(t)
	must(c.UntagQueue(ctx, &sqs.UntagQueueInput{QueueUrl: q.QueueUrl, TagKeys: []string{"a"}})).get(t)
	if tags := must(c.ListQueueTags(ctx, &sqs.ListQueueTagsInput{QueueUrl: q.QueueUrl})).get(t).Tags; len(tags) != 2 || tags["c"] != "3" {
		t.Fatalf("tags %v", tags)
	}
	if s := must(c.ListDeadLetterSourceQueues(ctx, &sqs.ListDeadLetterSourceQueuesInput{QueueUrl: dlq.QueueUrl})).get(t); len(s.QueueUrls) != 1 {
		t.Fatalf("sources %v", s.QueueUrls)
	}

	bin := []byte{0, 0xff, 7}
	mattrs := map[string]types.MessageAttributeValue{
		"s": {DataType: aws.String("String"), StringValue: aws.String("ünï")},
		"n": {DataType: aws.String("Number.float"), StringValue: aws.String("3.25")},
		"b": {DataType: aws.String("Binary"), BinaryValue: bin},
	}
	sent := must(c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("légacy <&>"), MessageAttributes: mattrs})).get(t)
	batch := must(c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: q.QueueUrl, Entries: []types.SendMessageBatchRequestEntry{
		{Id: aws.String("one"), MessageBody: aws.String("b1"), MessageAttributes: map[string]types.MessageAttributeValue{"k": {DataType: aws.String("String"), StringValue: aws.String("v")}}},
		{Id: aws.String("two"), MessageBody: aws.String("b2")},
		{Id: aws.String("bad"), MessageBody: aws.String("b3"), DelaySeconds: 901},
	}})).get(t)
	if len(batch.Successful) != 2 || len(batch.Failed) != 1 || *batch.Failed[0].Id != "bad" {
		t.Fatalf("SendMessageBatch %+v", batch)
	}
	r := must(c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, MaxNumberOfMessages: 10, VisibilityTimeout: 60,
		AttributeNames: []types.QueueAttributeName{"All"}, MessageAttributeNames: []string{"All"}})).get(t)
	if len(r.Messages) != 3 {
		t.Fatalf("received %d", len(r.Messages))
	}
	var first types.Message
	for _, m := range r.Messages {
		if *m.MessageId == *sent.MessageId {
			first = m
		}
	}
	if first.Body == nil || *first.Body != "légacy <&>" || *first.MD5OfMessageAttributes != *sent.MD5OfMessageAttributes ||
		string(first.MessageAttributes["b"].BinaryValue) != string(bin) || *first.MessageAttributes["n"].DataType != "Number.float" ||
		first.Attributes["ApproximateReceiveCount"] != "1" || first.Attributes["SentTimestamp"] == "" {
		t.Fatalf("received %+v", first)
	}
	must(c.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: q.QueueUrl, ReceiptHandle: first.ReceiptHandle, VisibilityTimeout: 120})).get(t)
	cv := must(c.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: q.QueueUrl, Entries: []types.ChangeMessageVisibilityBatchRequestEntry{
		{Id: aws.String("x"), ReceiptHandle: r.Messages[1].ReceiptHandle, VisibilityTimeout: 0},
		{Id: aws.String("y"), ReceiptHandle: aws.String("AAAA"), VisibilityTimeout: 0},
	}})).get(t)
	if len(cv.Successful) != 1 || len(cv.Failed) != 1 {
		t.Fatalf("ChangeMessageVisibilityBatch %+v", cv)
	}
	_, err = c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: q.QueueUrl, ReceiptHandle: aws.String("AAAA")})
	wantCode(t, err, "ReceiptHandleIsInvalid")
	must(c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: q.QueueUrl, ReceiptHandle: first.ReceiptHandle})).get(t)
	d := must(c.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: q.QueueUrl, Entries: []types.DeleteMessageBatchRequestEntry{
		{Id: aws.String("1"), ReceiptHandle: r.Messages[1].ReceiptHandle}, {Id: aws.String("2"), ReceiptHandle: r.Messages[2].ReceiptHandle}}})).get(t)
	if len(d.Successful) != 2 {
		t.Fatalf("DeleteMessageBatch %+v", d)
	}

	// Cross-door: a /v1 send is received here; this door's send is received on /v1.
	v1(t, tg, "POST", "/v1/queues/legacy/messages", `{"messages":[{"body":"from v1","attributes":{"via":"v1"}}]}`)
	r = must(c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, MessageAttributeNames: []string{"via"}, WaitTimeSeconds: 1})).get(t)
	if len(r.Messages) != 1 || *r.Messages[0].Body != "from v1" || *r.Messages[0].MessageAttributes["via"].StringValue != "v1" {
		t.Fatalf("received %+v", r.Messages)
	}
	v1(t, tg, "POST", "/v1/receipts/ack", `{"receiptHandle":"`+*r.Messages[0].ReceiptHandle+`"}`)
	must(c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("to v1"), MessageAttributes: map[string]types.MessageAttributeValue{"b": {DataType: aws.String("Binary"), BinaryValue: bin}}})).get(t)
	got := v1(t, tg, "POST", "/v1/queues/legacy/receive", `{"maxMessages":10}`)
	if !strings.Contains(got, `"to v1"`) || !strings.Contains(got, `"b":"`+base64.StdEncoding.EncodeToString(bin)+`"`) {
		t.Fatalf("/v1 received %s", got)
	}

	must(c.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: q.QueueUrl})).get(t)
	_, err = c.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: q.QueueUrl})
	wantCode(t, err, "AWS.SimpleQueueService.PurgeQueueInProgress")
	must(c.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: q.QueueUrl})).get(t)
	must(c.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: dlq.QueueUrl})).get(t)
	_, err = c.ListQueueTags(ctx, &sqs.ListQueueTagsInput{QueueUrl: q.QueueUrl})
	wantCode(t, err, "AWS.SimpleQueueService.NonExistentQueue")
	_ = md5hex
}

// TestQueryProtocolFIFO: a fifo queue through the query protocol.
func TestQueryProtocolFIFO(t *testing.T) {
	for _, tg := range targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			ctx, c := t.Context(), tg.client()
			q := must(c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("legacy.fifo"), Attributes: map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"}})).get(t)
			for _, b := range []string{"1", "2", "1"} {
				must(c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String(b), MessageGroupId: aws.String("g")})).get(t)
			}
			r := must(c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, MaxNumberOfMessages: 10, ReceiveRequestAttemptId: aws.String("try"),
				AttributeNames: []types.QueueAttributeName{"MessageGroupId", "SequenceNumber", "MessageDeduplicationId"}})).get(t)
			if len(r.Messages) != 2 || *r.Messages[0].Body != "1" || r.Messages[0].Attributes["MessageGroupId"] != "g" || r.Messages[0].Attributes["MessageDeduplicationId"] == "" {
				t.Fatalf("received %+v", r.Messages)
			}
			for _, m := range r.Messages {
				must(c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: q.QueueUrl, ReceiptHandle: m.ReceiptHandle})).get(t)
			}
			must(c.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: q.QueueUrl})).get(t)
		})
	}
}

// v1 calls the /v1 API with the target's bearer token.
func v1(t *testing.T, tg target, method, path, body string) string {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), method, tg.URL+path, bytes.NewReader([]byte(body)))
	req.Header.Set("Authorization", "Bearer "+tg.Bearer)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	return string(b)
}
