package dynamometa

// Topics and bindings (no new key or index, so no migration):
//
//	pk=P#<project>    sk=TN#<name>        a topic's settings and Version; the conditional put
//	                                      makes names unique per project (apart from the
//	                                      queues' Q#<name>), begins_with lists by prefix
//	pk=TOPIC#<topic>  sk=T                the topic's id index: project, name, bindingCount
//	                                      (< MaxBindingsPerTopic) and deleting (set while
//	                                      DeleteTopic removes its bindings: no binding is added)
//	pk=TOPIC#<topic>  sk=B#<binding id>   a binding, the topic's copy: TopicBindings is one
//	                                      Query of the partition, in binding id order
//	pk=QB#<queue>     sk=B#<topic id>     a binding, the queue's copy: the conditional put makes
//	                                      one binding per queue and topic; QueueBindings is one
//	                                      Query of the partition (sorted by binding id here)
//	pk=QB#<queue>     sk=N                n: how many bindings the queue has
//	                                      (< MaxSourcesPerQueue)
//
// The project item counts topics (topicCount), as it counts queues. Creating a binding is one
// transaction: the queue's id index must exist in the project, the topic's index must exist
// in the project, not be deleting and count under the bound (ADD 1), the queue's count must be
// under its bound (ADD 1), and both copies are put on the condition that they are new.
// Updating or deleting one changes both copies (and the counts) in one transaction.

import (
	"context"
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
)

const (
	topicPre       = "TN#"
	topicIDSK      = "T"
	bindingPre     = "B#"
	queueBindN     = "N"
	topicCountAttr = "topicCount"
)

var _ meta.TopicStore = (*Store)(nil)

func topicPK(id ids.ID) string     { return "TOPIC#" + id.String() }
func queueBindPK(id ids.ID) string { return "QB#" + id.String() }

type topicItem struct {
	PK               string    `dynamodbav:"pk"`
	SK               string    `dynamodbav:"sk"`
	ID               string    `dynamodbav:"id"`
	ProjectID        string    `dynamodbav:"projectId"`
	Name             string    `dynamodbav:"name"`
	Type             string    `dynamodbav:"type"`
	RetentionSeconds int       `dynamodbav:"retentionSeconds"`
	CreatedAt        time.Time `dynamodbav:"createdAt"`
	UpdatedAt        time.Time `dynamodbav:"updatedAt"`
	Version          int64     `dynamodbav:"version"`
}

type topicIDItem struct {
	PK        string `dynamodbav:"pk"`
	SK        string `dynamodbav:"sk"`
	ProjectID string `dynamodbav:"projectId"`
	Name      string `dynamodbav:"name"`
}

func toTopicItem(t meta.Topic) topicItem {
	return topicItem{
		PK: projectPK(t.ProjectID), SK: topicPre + t.Name, ID: t.ID.String(), ProjectID: t.ProjectID.String(),
		Name: t.Name, Type: t.Type, RetentionSeconds: t.RetentionSeconds,
		CreatedAt: utc(t.CreatedAt), UpdatedAt: utc(t.UpdatedAt), Version: t.Version,
	}
}

func (it topicItem) topic() (meta.Topic, error) {
	id, err1 := ids.ParseUUID(it.ID)
	pid, err2 := ids.ParseUUID(it.ProjectID)
	if err := errors.Join(err1, err2); err != nil {
		return meta.Topic{}, corrupt("topic %s/%s: %v", it.PK, it.SK, err)
	}
	return meta.Topic{
		ID: id, ProjectID: pid, Name: it.Name, Type: it.Type, RetentionSeconds: it.RetentionSeconds,
		CreatedAt: utc(it.CreatedAt), UpdatedAt: utc(it.UpdatedAt), Version: it.Version,
	}, nil
}

// CreateTopicWithin stores a new topic with Version 1: the project item's topic count goes
// up in the same transaction, on the condition that it is under maxTopics (<= 0: no limit).
func (s *Store) CreateTopicWithin(ctx context.Context, t meta.Topic, maxTopics int64) error {
	if err := t.CheckNew(); err != nil {
		return err
	}
	t.Version = 1
	item, err := marshal(toTopicItem(t))
	if err != nil {
		return err
	}
	idItem, err := marshal(topicIDItem{PK: topicPK(t.ID), SK: topicIDSK, ProjectID: t.ProjectID.String(), Name: t.Name})
	if err != nil {
		return err
	}
	notExists := aws.String("attribute_not_exists(pk)")
	err = s.transact(ctx, "create topic", []types.TransactWriteItem{
		s.countUp(t.ProjectID, topicCountAttr, maxTopics),
		{Put: &types.Put{TableName: aws.String(s.table), Item: item, ConditionExpression: notExists}},
		{Put: &types.Put{TableName: aws.String(s.table), Item: idItem, ConditionExpression: notExists}},
	})
	var c *canceled
	switch {
	case !errors.As(err, &c):
		return err
	case c.failed(0) && c.item(0) == nil:
		return meta.NotFound(meta.KindProject, t.ProjectID)
	case c.failed(1):
		return meta.TopicNameTaken(t.Name)
	case c.failed(0):
		return meta.TopicQuota(maxTopics)
	default:
		return meta.IDTaken(meta.KindTopic, t.ID)
	}
}

// GetTopic reads a topic by id within a project.
func (s *Store) GetTopic(ctx context.Context, projectID, topicID ids.ID) (meta.Topic, error) {
	t, err := s.GetTopicByID(ctx, topicID)
	if err != nil {
		return meta.Topic{}, err
	}
	if t.ProjectID != projectID {
		return meta.Topic{}, meta.TopicNotFound(topicID)
	}
	return t, nil
}

// GetTopicByName reads a topic by name within a project.
func (s *Store) GetTopicByName(ctx context.Context, projectID ids.ID, name string) (meta.Topic, error) {
	notFound := meta.NameNotFound(meta.KindTopic, name)
	if name == "" {
		return meta.Topic{}, notFound
	}
	var it topicItem
	ok, err := s.get(ctx, "get topic", projectPK(projectID), topicPre+name, &it)
	if err != nil {
		return meta.Topic{}, err
	}
	if !ok {
		return meta.Topic{}, notFound
	}
	return it.topic()
}

// GetTopicByID reads a topic by id alone: the id index, then the topic under its name.
func (s *Store) GetTopicByID(ctx context.Context, topicID ids.ID) (meta.Topic, error) {
	var idx topicIDItem
	ok, err := s.get(ctx, "get topic", topicPK(topicID), topicIDSK, &idx)
	if err != nil {
		return meta.Topic{}, err
	}
	if !ok {
		return meta.Topic{}, meta.TopicNotFound(topicID)
	}
	pid, err := ids.ParseUUID(idx.ProjectID)
	if err != nil {
		return meta.Topic{}, corrupt("%s: project: %v", idx.PK, err)
	}
	t, err := s.GetTopicByName(ctx, pid, idx.Name)
	if err != nil || t.ID != topicID {
		// Deleted (and maybe the name reused) between the two reads.
		if err == nil || errors.Is(err, meta.ErrNotFound) {
			return meta.Topic{}, meta.TopicNotFound(topicID)
		}
		return meta.Topic{}, err
	}
	return t, nil
}

// ListTopics lists a project's topics whose names start with prefix, in name (byte) order.
func (s *Store) ListTopics(ctx context.Context, projectID ids.ID, prefix string, page meta.Page) ([]meta.Topic, string, error) {
	return listByName(ctx, s, "topic", topicPre, projectID, prefix, page, topicItem.topic)
}

// CountTopics reads the project item's topic count (0 for a missing project).
func (s *Store) CountTopics(ctx context.Context, projectID ids.ID) (int64, error) {
	item, err := s.projectItem(ctx, "count topics", projectID)
	if errors.Is(err, meta.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n, _ := numAttr(item, topicCountAttr)
	return max(n, 0), nil
}

// UpdateTopic replaces RetentionSeconds (and UpdatedAt) if the stored Version is t.Version.
func (s *Store) UpdateTopic(ctx context.Context, t meta.Topic) (meta.Topic, error) {
	cur, err := s.GetTopic(ctx, t.ProjectID, t.ID)
	if err != nil {
		return meta.Topic{}, err
	}
	if cur.Version != t.Version {
		return meta.Topic{}, meta.ErrTopicConflict
	}
	next := cur
	next.RetentionSeconds, next.UpdatedAt, next.Version = t.RetentionSeconds, utc(t.UpdatedAt), cur.Version+1
	item, err := marshal(toTopicItem(next))
	if err != nil {
		return meta.Topic{}, err
	}
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(s.table), Item: item,
		ConditionExpression: aws.String("id = :id AND version = :v"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":id": str(t.ID.String()), ":v": num(cur.Version),
		},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		var old topicItem
		if ccf.Item != nil && attributevalue.UnmarshalMap(ccf.Item, &old) == nil && old.ID == t.ID.String() {
			return meta.Topic{}, meta.ErrTopicConflict
		}
		return meta.Topic{}, meta.TopicNotFound(t.ID)
	}
	if err != nil {
		return meta.Topic{}, mapErr("update topic", err)
	}
	return next, nil
}

// DeleteTopic deletes a topic in three steps, each safe to repeat: it marks the topic's
// index deleting (no binding is added after that), deletes the bindings it then lists, and
// deletes the topic's items with the project's count. A DeleteTopic cut short leaves the
// topic there, marked; the next one finishes it.
func (s *Store) DeleteTopic(ctx context.Context, projectID, topicID ids.ID) (meta.Topic, []meta.Binding, error) {
	t, err := s.GetTopic(ctx, projectID, topicID)
	if err != nil {
		return meta.Topic{}, nil, err
	}
	_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.table), Key: key(topicPK(topicID), topicIDSK),
		UpdateExpression:    aws.String("SET deleting = :t"),
		ConditionExpression: aws.String("attribute_exists(pk)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":t": &types.AttributeValueMemberBOOL{Value: true},
		},
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return meta.Topic{}, nil, meta.TopicNotFound(topicID)
	}
	if err != nil {
		return meta.Topic{}, nil, mapErr("delete topic", err)
	}
	bs, err := s.deleteTopicBindings(ctx, topicID)
	if err != nil {
		return meta.Topic{}, nil, err
	}
	err = s.transact(ctx, "delete topic", []types.TransactWriteItem{
		{Delete: &types.Delete{
			TableName: aws.String(s.table), Key: key(projectPK(projectID), topicPre+t.Name),
			ConditionExpression:       aws.String("id = :id"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":id": str(topicID.String())},
		}},
		{Delete: &types.Delete{
			TableName: aws.String(s.table), Key: key(topicPK(topicID), topicIDSK),
			ConditionExpression: aws.String("attribute_exists(pk)"),
		}},
		s.countDown(projectID, topicCountAttr),
	})
	var c *canceled
	if errors.As(err, &c) {
		// Another DeleteTopic finished first.
		return meta.Topic{}, nil, meta.TopicNotFound(topicID)
	}
	if err != nil {
		return meta.Topic{}, nil, err
	}
	return t, bs, nil
}
