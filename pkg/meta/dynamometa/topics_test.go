package dynamometa_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/meta/dynamometa"
)

// TestTopicDeleteCutShort: a DeleteTopic cut short after marking the topic (its process
// killed) leaves a topic that takes no new binding, and the next DeleteTopic finishes it.
func TestTopicDeleteCutShort(t *testing.T) {
	c := client(t)
	table := newTable(t, c)
	s := dynamometa.New(c, table)
	ctx := t.Context()
	now := time.Now().UTC()
	p := meta.Project{ID: ids.New(), Name: "p", CreatedAt: now}
	q1 := meta.Queue{ID: ids.New(), ProjectID: p.ID, Name: "q1", Type: "standard", CreatedAt: now, UpdatedAt: now}
	q2 := meta.Queue{ID: ids.New(), ProjectID: p.ID, Name: "q2", Type: "standard", CreatedAt: now, UpdatedAt: now}
	tp := meta.Topic{ID: ids.New(), ProjectID: p.ID, Name: "t", Type: "standard", CreatedAt: now, UpdatedAt: now}
	b := meta.Binding{ID: ids.New(), ProjectID: p.ID, QueueID: q1.ID, TopicID: tp.ID, From: "now", CreatedAt: now, UpdatedAt: now}
	for _, err := range []error{s.CreateProject(ctx, p), s.CreateQueue(ctx, q1), s.CreateQueue(ctx, q2),
		s.CreateTopicWithin(ctx, tp, 0), s.CreateBinding(ctx, b)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	// What the first step of DeleteTopic writes.
	if _, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(table),
		Key: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: "TOPIC#" + tp.ID.String()}, "sk": &types.AttributeValueMemberS{Value: "T"}},
		UpdateExpression:          aws.String("SET deleting = :t"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":t": &types.AttributeValueMemberBOOL{Value: true}},
	}); err != nil {
		t.Fatal(err)
	}
	b2 := b
	b2.ID, b2.QueueID = ids.New(), q2.ID
	if err := s.CreateBinding(ctx, b2); apierr.CodeOf(err) != apierr.NotFound {
		t.Fatalf("binding to a topic being deleted: %v, want not_found", err)
	}
	if _, err := s.GetTopic(ctx, p.ID, tp.ID); err != nil {
		t.Fatalf("the marked topic is still there until deleted: %v", err)
	}
	_, bs, err := s.DeleteTopic(ctx, p.ID, tp.ID)
	if err != nil || len(bs) != 1 || bs[0].ID != b.ID {
		t.Fatalf("DeleteTopic after a cut-short one: %v, %v", bs, err)
	}
	if n, err := s.CountTopics(ctx, p.ID); err != nil || n != 0 {
		t.Fatalf("CountTopics = %d, %v", n, err)
	}
	if bs, err := s.QueueBindings(ctx, q1.ID); err != nil || len(bs) != 0 {
		t.Fatalf("q1's bindings: %v, %v", bs, err)
	}
}

// TestTopicCallsUnavailable: topic and binding calls of a throttling table answer unavailable.
func TestTopicCallsUnavailable(t *testing.T) {
	s, p := faultyStore(t, func(op string, w http.ResponseWriter) bool {
		dynamoError(w, "ProvisionedThroughputExceededException",
			`{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException","message":"slow down"}`)
		return true
	})
	ctx := t.Context()
	tp := meta.Topic{ID: ids.New(), ProjectID: p.ID, Name: "t", Type: "standard"}
	b := meta.Binding{ID: ids.New(), ProjectID: p.ID, QueueID: ids.New(), TopicID: tp.ID}
	for what, err := range map[string]error{
		"CreateTopicWithin":   s.CreateTopicWithin(ctx, tp, 10),
		"GetTopicByID":        func() error { _, err := s.GetTopicByID(ctx, tp.ID); return err }(),
		"ListTopics":          func() error { _, _, err := s.ListTopics(ctx, p.ID, "", meta.Page{}); return err }(),
		"CreateBinding":       s.CreateBinding(ctx, b),
		"TopicBindings":       func() error { _, err := s.TopicBindings(ctx, tp.ID); return err }(),
		"QueueBindings":       func() error { _, err := s.QueueBindings(ctx, b.QueueID); return err }(),
		"DeleteQueueBindings": func() error { _, err := s.DeleteQueueBindings(ctx, b.QueueID); return err }(),
	} {
		if apierr.CodeOf(err) != apierr.Unavailable {
			t.Errorf("%s while throttled: %v, want unavailable", what, err)
		}
	}
}
