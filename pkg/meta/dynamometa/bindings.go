package dynamometa

// Bindings: the item layout is in topics.go.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
)

// bindingChunk bounds the bindings one DeleteTopic transaction deletes (three items each,
// under DynamoDB's 100 items a transaction).
const bindingChunk = 25

type bindingItem struct {
	PK            string    `dynamodbav:"pk"`
	SK            string    `dynamodbav:"sk"`
	ID            string    `dynamodbav:"id"`
	ProjectID     string    `dynamodbav:"projectId"`
	QueueID       string    `dynamodbav:"queueId"`
	TopicID       string    `dynamodbav:"topicId"`
	Filter        string    `dynamodbav:"filter,omitempty"`
	From          string    `dynamodbav:"from"`
	StartSequence uint64    `dynamodbav:"startSequence"`
	CreatedAt     time.Time `dynamodbav:"createdAt"`
	UpdatedAt     time.Time `dynamodbav:"updatedAt"`
	Version       int64     `dynamodbav:"version"`
}

func bindingItemOf(b meta.Binding, pk, sk string) bindingItem {
	return bindingItem{
		PK: pk, SK: sk, ID: b.ID.String(), ProjectID: b.ProjectID.String(), QueueID: b.QueueID.String(),
		TopicID: b.TopicID.String(), Filter: b.Filter, From: b.From, StartSequence: b.StartSequence,
		CreatedAt: utc(b.CreatedAt), UpdatedAt: utc(b.UpdatedAt), Version: b.Version,
	}
}

// copies are a binding's two items: the queue's (index 0) and the topic's.
func bindingCopies(b meta.Binding) ([2]map[string]types.AttributeValue, error) {
	var out [2]map[string]types.AttributeValue
	var err error
	if out[0], err = marshal(bindingItemOf(b, queueBindPK(b.QueueID), bindingPre+b.TopicID.String())); err != nil {
		return out, err
	}
	out[1], err = marshal(bindingItemOf(b, topicPK(b.TopicID), bindingPre+b.ID.String()))
	return out, err
}

func (it bindingItem) binding() (meta.Binding, error) {
	id, err1 := ids.ParseUUID(it.ID)
	pid, err2 := ids.ParseUUID(it.ProjectID)
	qid, err3 := ids.ParseUUID(it.QueueID)
	tid, err4 := ids.ParseUUID(it.TopicID)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return meta.Binding{}, corrupt("binding %s/%s: %v", it.PK, it.SK, err)
	}
	return meta.Binding{
		ID: id, ProjectID: pid, QueueID: qid, TopicID: tid, Filter: it.Filter, From: it.From,
		StartSequence: it.StartSequence, CreatedAt: utc(it.CreatedAt), UpdatedAt: utc(it.UpdatedAt), Version: it.Version,
	}, nil
}

// CreateBinding stores a new binding with Version 1 in one transaction (topics.go).
func (s *Store) CreateBinding(ctx context.Context, b meta.Binding) error {
	if err := b.CheckNew(); err != nil {
		return err
	}
	b.Version = 1
	copies, err := bindingCopies(b)
	if err != nil {
		return err
	}
	p := str(b.ProjectID.String())
	err = s.transact(ctx, "create binding", []types.TransactWriteItem{
		{ConditionCheck: &types.ConditionCheck{
			TableName: aws.String(s.table), Key: key(queueIDPK(b.QueueID), queueIDSK),
			ConditionExpression:       aws.String("attribute_exists(pk) AND projectId = :p"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":p": p},
		}},
		{Update: &types.Update{
			TableName: aws.String(s.table), Key: key(topicPK(b.TopicID), topicIDSK),
			UpdateExpression: aws.String("ADD bindingCount :one"),
			ConditionExpression: aws.String("attribute_exists(pk) AND projectId = :p AND attribute_not_exists(deleting) AND " +
				"(attribute_not_exists(bindingCount) OR bindingCount < :max)"),
			ExpressionAttributeValues:           map[string]types.AttributeValue{":one": num(1), ":p": p, ":max": num(meta.MaxBindingsPerTopic)},
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}},
		{Update: &types.Update{
			TableName: aws.String(s.table), Key: key(queueBindPK(b.QueueID), queueBindN),
			UpdateExpression:          aws.String("ADD n :one"),
			ConditionExpression:       aws.String("attribute_not_exists(n) OR n < :max"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":one": num(1), ":max": num(meta.MaxSourcesPerQueue)},
		}},
		{Put: &types.Put{TableName: aws.String(s.table), Item: copies[0], ConditionExpression: aws.String("attribute_not_exists(pk)")}},
		{Put: &types.Put{TableName: aws.String(s.table), Item: copies[1], ConditionExpression: aws.String("attribute_not_exists(pk)")}},
	})
	return createBindingErr(err, b)
}

// createBindingErr tells why a binding's create transaction failed, in the order the
// conformance suite pins.
func createBindingErr(err error, b meta.Binding) error {
	var c *canceled
	if !errors.As(err, &c) {
		return err
	}
	topicGone := false
	if c.failed(1) {
		var idx struct {
			ProjectID string `dynamodbav:"projectId"`
			Deleting  bool   `dynamodbav:"deleting"`
		}
		item := c.item(1)
		topicGone = item == nil || attributevalue.UnmarshalMap(item, &idx) != nil ||
			idx.ProjectID != b.ProjectID.String() || idx.Deleting
	}
	switch {
	case c.failed(0):
		return meta.NotFound(meta.KindQueue, b.QueueID)
	case topicGone:
		return meta.TopicNotFound(b.TopicID)
	case c.failed(3):
		return meta.BindingTaken(b.QueueID, b.TopicID)
	case c.failed(4):
		return meta.IDTaken(meta.KindBinding, b.ID)
	case c.failed(2):
		return meta.SourcesQuota()
	default:
		return meta.BindingsQuota()
	}
}

// partitionBindings reads every binding item of a partition (a queue's or a topic's).
func (s *Store) partitionBindings(ctx context.Context, pk string) ([]meta.Binding, error) {
	in := &dynamodb.QueryInput{
		TableName: aws.String(s.table), ConsistentRead: aws.Bool(true),
		KeyConditionExpression:    aws.String("pk = :pk AND begins_with(sk, :pre)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(pk), ":pre": str(bindingPre)},
	}
	var out []meta.Binding
	for {
		res, err := s.db.Query(ctx, in)
		if err != nil {
			return nil, mapErr("list bindings", err)
		}
		for _, m := range res.Items {
			var it bindingItem
			if err := attributevalue.UnmarshalMap(m, &it); err != nil {
				return nil, corrupt("binding listing: %v", err)
			}
			b, err := it.binding()
			if err != nil {
				return nil, err
			}
			out = append(out, b)
		}
		if res.LastEvaluatedKey == nil {
			slices.SortFunc(out, func(a, b meta.Binding) int { return cmp.Compare(a.ID.String(), b.ID.String()) })
			return out, nil
		}
		in.ExclusiveStartKey = res.LastEvaluatedKey
	}
}

// QueueBindings lists a queue's bindings (one Query) in binding id order.
func (s *Store) QueueBindings(ctx context.Context, queueID ids.ID) ([]meta.Binding, error) {
	return s.partitionBindings(ctx, queueBindPK(queueID))
}

// TopicBindings lists a topic's bindings (one Query) in binding id order.
func (s *Store) TopicBindings(ctx context.Context, topicID ids.ID) ([]meta.Binding, error) {
	return s.partitionBindings(ctx, topicPK(topicID))
}

// GetBinding reads one binding of a queue (from the queue's few).
func (s *Store) GetBinding(ctx context.Context, queueID, bindingID ids.ID) (meta.Binding, error) {
	bs, err := s.QueueBindings(ctx, queueID)
	if err != nil {
		return meta.Binding{}, err
	}
	for _, b := range bs {
		if b.ID == bindingID {
			return b, nil
		}
	}
	return meta.Binding{}, meta.BindingNotFound(bindingID)
}

// UpdateBinding replaces Filter (and UpdatedAt) in both copies if the stored Version is
// b.Version.
func (s *Store) UpdateBinding(ctx context.Context, b meta.Binding) (meta.Binding, error) {
	cur, err := s.GetBinding(ctx, b.QueueID, b.ID)
	if err != nil {
		return meta.Binding{}, err
	}
	if cur.Version != b.Version {
		return meta.Binding{}, meta.ErrBindingConflict
	}
	next := cur
	next.Filter, next.UpdatedAt, next.Version = b.Filter, utc(b.UpdatedAt), cur.Version+1
	copies, err := bindingCopies(next)
	if err != nil {
		return meta.Binding{}, err
	}
	err = s.transact(ctx, "update binding", []types.TransactWriteItem{
		{Put: &types.Put{
			TableName: aws.String(s.table), Item: copies[0],
			ConditionExpression: aws.String("id = :id AND version = :v"),
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":id": str(b.ID.String()), ":v": num(cur.Version),
			},
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}},
		{Put: &types.Put{TableName: aws.String(s.table), Item: copies[1], ConditionExpression: aws.String("attribute_exists(pk)")}},
	})
	var c *canceled
	switch {
	case err == nil:
		return next, nil
	case !errors.As(err, &c):
		return meta.Binding{}, err
	case c.failed(0) && c.item(0) != nil && idOf(c.item(0)) == b.ID.String():
		return meta.Binding{}, meta.ErrBindingConflict
	default:
		return meta.Binding{}, meta.BindingNotFound(b.ID)
	}
}

func idOf(item map[string]types.AttributeValue) string {
	v, _ := item["id"].(*types.AttributeValueMemberS)
	if v == nil {
		return ""
	}
	return v.Value
}

// deleteCopies deletes a binding's two items, on the condition that the queue's copy is
// still this binding (so that a concurrent delete cannot count twice).
func (s *Store) deleteCopies(b meta.Binding) []types.TransactWriteItem {
	return []types.TransactWriteItem{
		{Delete: &types.Delete{
			TableName: aws.String(s.table), Key: key(queueBindPK(b.QueueID), bindingPre+b.TopicID.String()),
			ConditionExpression:       aws.String("id = :id"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":id": str(b.ID.String())},
		}},
		{Delete: &types.Delete{TableName: aws.String(s.table), Key: key(topicPK(b.TopicID), bindingPre+b.ID.String())}},
	}
}

// countBy adds by to a count attribute of an existing item (a count's item exists while any
// binding it counts does, so the condition only keeps a late decrement from recreating it).
func (s *Store) countBy(pk, sk, attr string, by int64) types.TransactWriteItem {
	return types.TransactWriteItem{Update: &types.Update{
		TableName: aws.String(s.table), Key: key(pk, sk),
		UpdateExpression: aws.String("ADD #n :by"), ConditionExpression: aws.String("attribute_exists(pk)"),
		ExpressionAttributeNames:  map[string]string{"#n": attr},
		ExpressionAttributeValues: map[string]types.AttributeValue{":by": num(by)},
	}}
}

// DeleteBinding deletes one binding of a queue: both copies and one from both counts.
func (s *Store) DeleteBinding(ctx context.Context, queueID, bindingID ids.ID) (meta.Binding, error) {
	for attempt := 0; ; attempt++ {
		b, err := s.GetBinding(ctx, queueID, bindingID)
		if err != nil {
			return meta.Binding{}, err
		}
		items := append(s.deleteCopies(b),
			s.countBy(queueBindPK(queueID), queueBindN, "n", -1),
			s.countBy(topicPK(b.TopicID), topicIDSK, "bindingCount", -1))
		err = s.transact(ctx, "delete binding", items)
		var c *canceled
		switch {
		case err == nil:
			return b, nil
		case !errors.As(err, &c):
			return meta.Binding{}, err
		}
		// Deleted since the read: read again (NotFound then).
		if attempt >= casRetries {
			return meta.Binding{}, meta.Unavailable(fmt.Sprintf("binding %s keeps changing", bindingID), nil)
		}
	}
}

// DeleteQueueBindings deletes every binding of a queue (at most MaxSourcesPerQueue: one
// transaction) with the queue's count item, on the condition that the count is the number
// read, so a bind racing the delete makes it read again rather than leave a binding uncounted.
func (s *Store) DeleteQueueBindings(ctx context.Context, queueID ids.ID) ([]meta.Binding, error) {
	for attempt := 0; ; attempt++ {
		bs, err := s.QueueBindings(ctx, queueID)
		if err != nil {
			return nil, err
		}
		var items []types.TransactWriteItem
		for _, b := range bs {
			items = append(items, s.deleteCopies(b)...)
			items = append(items, s.countBy(topicPK(b.TopicID), topicIDSK, "bindingCount", -1))
		}
		items = append(items, types.TransactWriteItem{Delete: &types.Delete{
			TableName: aws.String(s.table), Key: key(queueBindPK(queueID), queueBindN),
			ConditionExpression:       aws.String("attribute_not_exists(n) OR n = :n"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":n": num(int64(len(bs)))},
		}})
		err = s.transact(ctx, "delete queue bindings", items)
		var c *canceled
		switch {
		case err == nil:
			return bs, nil
		case !errors.As(err, &c):
			return nil, err
		}
		if attempt >= casRetries {
			return nil, meta.Unavailable(fmt.Sprintf("bindings of queue %s keep changing", queueID), nil)
		}
	}
}

// deleteTopicBindings deletes every binding of a topic marked deleting (no more are added),
// a chunk a transaction, and returns them. The topic's count goes with its index item.
func (s *Store) deleteTopicBindings(ctx context.Context, topicID ids.ID) ([]meta.Binding, error) {
	var out []meta.Binding
	for attempt := 0; ; attempt++ {
		bs, err := s.TopicBindings(ctx, topicID)
		if err != nil || len(bs) == 0 {
			return out, err
		}
		failed := false
		for chunk := range slices.Chunk(bs, bindingChunk) {
			var items []types.TransactWriteItem
			for _, b := range chunk {
				items = append(items, s.deleteCopies(b)...)
				items = append(items, s.countBy(queueBindPK(b.QueueID), queueBindN, "n", -1))
			}
			err := s.transact(ctx, "delete topic bindings", items)
			var c *canceled
			if errors.As(err, &c) {
				failed = true // one of them was deleted meanwhile: list again
				break
			}
			if err != nil {
				return nil, err
			}
			out = append(out, chunk...)
		}
		if failed && attempt >= casRetries {
			return nil, meta.Unavailable(fmt.Sprintf("bindings of topic %s keep changing", topicID), nil)
		}
	}
}
