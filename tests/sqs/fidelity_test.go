package sqs_test

import (
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// TestMessageAttributeNameWildcards: MessageAttributeNames selects as SQS does: "All", ".*"
// and "*" select every attribute, "Custom.*" every name starting with "Custom" (a dot after
// it or not), other names themselves.
func TestMessageAttributeNameWildcards(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		ctx, c := t.Context(), e.sqs
		q := must(c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("wild"),
			Attributes: map[string]string{"VisibilityTimeout": "0"}})).get(t).QueueUrl
		str := func(v string) types.MessageAttributeValue {
			return types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
		}
		must(c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q, MessageBody: aws.String("m"),
			MessageAttributes: map[string]types.MessageAttributeValue{
				"Custom1": str("a"), "Custom.x": str("b"), "Other": str("c")}})).get(t)
		for names, want := range map[string]string{
			"All": "Custom.x,Custom1,Other", ".*": "Custom.x,Custom1,Other", "*": "Custom.x,Custom1,Other",
			"Custom.*": "Custom.x,Custom1", "Custom.x.*": "Custom.x", "Other,Nope": "Other", "Nope": "",
		} {
			out := must(c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q,
				MessageAttributeNames: strings.Split(names, ",")})).get(t)
			if len(out.Messages) != 1 {
				t.Fatalf("%s: received %d messages", names, len(out.Messages))
			}
			var got []string
			for n := range out.Messages[0].MessageAttributes {
				got = append(got, n)
			}
			sort.Strings(got)
			if strings.Join(got, ",") != want {
				t.Errorf("MessageAttributeNames %s selected %v, want %s", names, got, want)
			}
		}
	})
}
