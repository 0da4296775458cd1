package sqs_test

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

var digits = regexp.MustCompile(`^[0-9]{1,20}$`)

type v1Sent struct {
	Messages []struct {
		MessageID      string `json:"messageId"`
		Duplicate      bool   `json:"duplicate"`
		SequenceNumber string `json:"sequenceNumber"`
	} `json:"messages"`
	Failed []any `json:"failed"`
}

// TestFIFOSendSequenceNumber: fifo SendMessage and SendMessageBatch answer each message's
// SequenceNumber (a string of digits, the one its receive reports; a duplicate answers the
// original's), /v1 sends the same as sequenceNumber, and standard queues answer none.
func TestFIFOSendSequenceNumber(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		ctx, c := t.Context(), e.sqs
		q := must(c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("seq.fifo"), Attributes: map[string]string{"FifoQueue": "true"}})).get(t)
		one := must(c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("a1"), MessageGroupId: aws.String("a"), MessageDeduplicationId: aws.String("d1")})).get(t)
		if one.SequenceNumber == nil || !digits.MatchString(*one.SequenceNumber) {
			t.Fatalf("SendMessage answered SequenceNumber %v", one.SequenceNumber)
		}
		dup := must(c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("x"), MessageGroupId: aws.String("b"), MessageDeduplicationId: aws.String("d1")})).get(t)
		if *dup.MessageId != *one.MessageId || aws.ToString(dup.SequenceNumber) != *one.SequenceNumber {
			t.Fatalf("duplicate answered %s/%v, want the original's %s/%s", *dup.MessageId, dup.SequenceNumber, *one.MessageId, *one.SequenceNumber)
		}
		batch := must(c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: q.QueueUrl, Entries: []types.SendMessageBatchRequestEntry{
			{Id: aws.String("e1"), MessageBody: aws.String("a2"), MessageGroupId: aws.String("a"), MessageDeduplicationId: aws.String("d2")},
			{Id: aws.String("e2"), MessageBody: aws.String("b1"), MessageGroupId: aws.String("b"), MessageDeduplicationId: aws.String("d3")},
		}})).get(t)
		sent := map[string]string{*one.MessageId: *one.SequenceNumber}
		for _, s := range batch.Successful {
			if s.SequenceNumber == nil || !digits.MatchString(*s.SequenceNumber) {
				t.Fatalf("batch entry %s answered SequenceNumber %v", *s.Id, s.SequenceNumber)
			}
			sent[*s.MessageId] = *s.SequenceNumber
		}
		var v1 v1Sent
		e.do(t, "POST", "/v1/queues/seq.fifo/messages", map[string]any{"messages": []map[string]any{
			{"body": "c1", "groupId": "c", "dedupId": "d4"}, {"body": "again", "groupId": "c", "dedupId": "d1"}}}, 200, &v1)
		if len(v1.Messages) != 2 || !digits.MatchString(v1.Messages[0].SequenceNumber) ||
			!v1.Messages[1].Duplicate || v1.Messages[1].SequenceNumber != *one.SequenceNumber {
			t.Fatalf("/v1 send answered %+v", v1)
		}
		sent[v1.Messages[0].MessageID] = v1.Messages[0].SequenceNumber

		r := must(c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, MaxNumberOfMessages: 10,
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{"SequenceNumber"}})).get(t)
		if len(r.Messages) != len(sent) {
			t.Fatalf("received %d messages, want %d", len(r.Messages), len(sent))
		}
		for _, m := range r.Messages {
			if got, want := m.Attributes["SequenceNumber"], sent[*m.MessageId]; got != want {
				t.Fatalf("message %s received with SequenceNumber %q, sent with %q", *m.Body, got, want)
			}
		}

		std := must(c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("seq-standard")})).get(t)
		s := must(c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: std.QueueUrl, MessageBody: aws.String("s")})).get(t)
		sb := must(c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: std.QueueUrl, Entries: []types.SendMessageBatchRequestEntry{
			{Id: aws.String("e1"), MessageBody: aws.String("s")}}})).get(t)
		if s.SequenceNumber != nil || len(sb.Successful) != 1 || sb.Successful[0].SequenceNumber != nil {
			t.Fatalf("standard queue answered SequenceNumber %v / %+v", s.SequenceNumber, sb.Successful)
		}
		var v1s map[string]any
		e.do(t, "POST", "/v1/queues/seq-standard/messages", map[string]any{"messages": []map[string]any{{"body": "s"}}}, 200, &v1s)
		if m := v1s["messages"].([]any)[0].(map[string]any); m["sequenceNumber"] != nil {
			t.Fatalf("/v1 standard send answered %v", m)
		}
	})
}

// TestHashDedupID: on a fifo queue with content-based deduplication, an explicit
// MessageDeduplicationId equal to a body's content hash (the id the queue shows for a
// content-based send) is that send's id, either way round, through both doors.
func TestHashDedupID(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		ctx, c := t.Context(), e.sqs
		q := must(c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("hash.fifo"),
			Attributes: map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"}})).get(t)
		byContent := must(c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("alpha"), MessageGroupId: aws.String("g")})).get(t)
		r := must(c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl,
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{"MessageDeduplicationId"}})).get(t)
		if len(r.Messages) != 1 {
			t.Fatalf("received %d messages", len(r.Messages))
		}
		shown := r.Messages[0].Attributes["MessageDeduplicationId"]
		if shown != sha256hex("alpha") {
			t.Fatalf("content-based MessageDeduplicationId %q, want the body's SHA-256 %s", shown, sha256hex("alpha"))
		}
		again := must(c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("another body"),
			MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String(shown)})).get(t)
		if *again.MessageId != *byContent.MessageId {
			t.Fatalf("explicit id = the shown hash answered %s, want the content-based send's %s", *again.MessageId, *byContent.MessageId)
		}
		// The other way round: an explicit hash id first, then a content-based send of that
		// body, on /v1 and on the SQS door.
		explicit := must(c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("carrier"),
			MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String(sha256hex("beta"))})).get(t)
		var v1 v1Sent
		e.do(t, "POST", "/v1/queues/hash.fifo/messages", map[string]any{"messages": []map[string]any{{"body": "beta", "groupId": "h"}}}, 200, &v1)
		if len(v1.Messages) != 1 || !v1.Messages[0].Duplicate || v1.Messages[0].MessageID != *explicit.MessageId {
			t.Fatalf("/v1 content-based send of a body whose hash was an explicit id: %+v, want a duplicate of %s", v1, *explicit.MessageId)
		}
		e.do(t, "POST", "/v1/queues/hash.fifo/messages", map[string]any{"messages": []map[string]any{{"body": "x", "groupId": "h", "dedupId": sha256hex("gamma")}}}, 200, &v1)
		viaSQS := must(c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("gamma"), MessageGroupId: aws.String("g")})).get(t)
		if len(v1.Messages) != 1 || *viaSQS.MessageId != v1.Messages[0].MessageID {
			t.Fatalf("SQS content-based send after a /v1 explicit hash id answered %s, want %+v", *viaSQS.MessageId, v1)
		}
	})
}

func sha256hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
