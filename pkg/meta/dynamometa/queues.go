package dynamometa

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
)

type queueItem struct {
	PK                string            `dynamodbav:"pk"`
	SK                string            `dynamodbav:"sk"`
	ID                string            `dynamodbav:"id"`
	ProjectID         string            `dynamodbav:"projectId"`
	Name              string            `dynamodbav:"name"`
	Type              string            `dynamodbav:"type"`
	CreatedAt         time.Time         `dynamodbav:"createdAt"`
	UpdatedAt         time.Time         `dynamodbav:"updatedAt"`
	VisibilityTimeout int               `dynamodbav:"visibilityTimeoutSeconds"`
	Retention         int               `dynamodbav:"retentionSeconds"`
	Delay             int               `dynamodbav:"delaySeconds"`
	ReceiveWait       int               `dynamodbav:"receiveWaitSeconds"`
	DeadLetterQueue   string            `dynamodbav:"dlq,omitempty"`
	MaxReceiveCount   int               `dynamodbav:"maxReceiveCount,omitempty"`
	ContentBasedDedup bool              `dynamodbav:"contentBasedDedup"`
	Fairness          string            `dynamodbav:"fairness,omitempty"`
	OnDeadLetter      string            `dynamodbav:"onDeadLetter,omitempty"`
	Delivery          string            `dynamodbav:"delivery,omitempty"`
	MaxCancels        *int              `dynamodbav:"maxCancels"`                     // NULL or absent: the default
	MaxMessageBytes   int               `dynamodbav:"maxMessageBytes,omitempty"`      // absent: the default
	GroupPolicy       string            `dynamodbav:"groupPolicy,omitempty"`          // absent: sequenced
	GroupAffinity     int               `dynamodbav:"groupAffinitySeconds,omitempty"` // absent: the default
	MaxGroups         int               `dynamodbav:"maxGroupsPerConsumer,omitempty"` // absent: the default
	Tags              map[string]string `dynamodbav:"tags,omitempty"`
	SQSAttributes     map[string]string `dynamodbav:"sqsAttributes,omitempty"`
	Version           int64             `dynamodbav:"version"`
}

type queueIDItem struct {
	PK        string `dynamodbav:"pk"`
	SK        string `dynamodbav:"sk"`
	ProjectID string `dynamodbav:"projectId"`
	Name      string `dynamodbav:"name"`
	Type      string `dynamodbav:"type"`
	Refs      int64  `dynamodbav:"refs"`
}

func toQueueItem(q meta.Queue) queueItem {
	it := queueItem{
		PK: projectPK(q.ProjectID), SK: queuePre + q.Name,
		ID: q.ID.String(), ProjectID: q.ProjectID.String(), Name: q.Name, Type: q.Type,
		CreatedAt: utc(q.CreatedAt), UpdatedAt: utc(q.UpdatedAt),
		VisibilityTimeout: q.VisibilityTimeoutSeconds, Retention: q.RetentionSeconds,
		Delay: q.DelaySeconds, ReceiveWait: q.ReceiveWaitSeconds,
		ContentBasedDedup: q.ContentBasedDedup, Delivery: q.Delivery, Version: q.Version, Fairness: q.Fairness, OnDeadLetter: q.OnDeadLetter,
		MaxCancels: q.MaxCancels, MaxMessageBytes: q.MaxMessageBytes, Tags: q.Tags, SQSAttributes: q.SQSAttributes,
		GroupPolicy: q.GroupPolicy, GroupAffinity: q.GroupAffinitySeconds, MaxGroups: q.MaxGroupsPerConsumer,
	}
	if q.Redrive != nil {
		it.DeadLetterQueue = q.Redrive.DeadLetterQueue.String()
		it.MaxReceiveCount = q.Redrive.MaxReceiveCount
	}
	return it
}

func (it queueItem) queue() (meta.Queue, error) {
	id, err1 := ids.ParseUUID(it.ID)
	pid, err2 := ids.ParseUUID(it.ProjectID)
	if err := errors.Join(err1, err2); err != nil {
		return meta.Queue{}, corrupt("queue %s/%s: %v", it.PK, it.SK, err)
	}
	q := meta.Queue{
		ID: id, ProjectID: pid, Name: it.Name, Type: it.Type,
		CreatedAt: utc(it.CreatedAt), UpdatedAt: utc(it.UpdatedAt),
		VisibilityTimeoutSeconds: it.VisibilityTimeout, RetentionSeconds: it.Retention,
		DelaySeconds: it.Delay, ReceiveWaitSeconds: it.ReceiveWait,
		ContentBasedDedup: it.ContentBasedDedup, Delivery: it.Delivery, Version: it.Version, Fairness: it.Fairness, OnDeadLetter: it.OnDeadLetter,
		MaxCancels: it.MaxCancels, MaxMessageBytes: it.MaxMessageBytes, Tags: nonEmpty(it.Tags), SQSAttributes: nonEmpty(it.SQSAttributes),
		GroupPolicy: it.GroupPolicy, GroupAffinitySeconds: it.GroupAffinity, MaxGroupsPerConsumer: it.MaxGroups,
	}
	if it.DeadLetterQueue != "" {
		dlq, err := ids.ParseUUID(it.DeadLetterQueue)
		if err != nil {
			return meta.Queue{}, corrupt("queue %s/%s: dead-letter queue: %v", it.PK, it.SK, err)
		}
		q.Redrive = &meta.Redrive{DeadLetterQueue: dlq, MaxReceiveCount: it.MaxReceiveCount}
	}
	return q, nil
}

func nonEmpty(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return m
}

func queueNotFound(id ids.ID) error {
	return meta.NotFound(meta.KindQueue, id)
}

// addRef adds one reference to dlq, on the condition that it exists in project.
func (s *Store) addRef(dlq, project ids.ID) types.TransactWriteItem {
	return types.TransactWriteItem{Update: &types.Update{
		TableName:                 aws.String(s.table),
		Key:                       key(queueIDPK(dlq), queueIDSK),
		UpdateExpression:          aws.String("ADD refs :one"),
		ConditionExpression:       aws.String("attribute_exists(pk) AND projectId = :p"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": num(1), ":p": str(project.String())},
	}}
}

// dropRef removes one reference from dlq (which cannot have gone while referenced).
func (s *Store) dropRef(dlq ids.ID) types.TransactWriteItem {
	return types.TransactWriteItem{Update: &types.Update{
		TableName:                 aws.String(s.table),
		Key:                       key(queueIDPK(dlq), queueIDSK),
		UpdateExpression:          aws.String("ADD refs :minus"),
		ConditionExpression:       aws.String("attribute_exists(pk) AND refs > :zero"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":minus": num(-1), ":zero": num(0)},
	}}
}

// CreateQueue stores a new queue with Version 1. The project must exist (NotFound), the name
// must be free (meta.ErrQueueNameTaken), a redrive's dead-letter queue must exist in the
// project (meta.ErrDeadLetterNotFound).
func (s *Store) CreateQueue(ctx context.Context, q meta.Queue) error {
	return s.CreateQueueWithin(ctx, q, 0)
}

// CreateQueueWithin is CreateQueue with the project's maxQueues quota (<= 0: none): the
// project item's queue count goes up in the same transaction, on the condition that it is
// under the limit (tenancy.go).
func (s *Store) CreateQueueWithin(ctx context.Context, q meta.Queue, maxQueues int64) error {
	if err := q.CheckNew(); err != nil {
		return err
	}
	q.Version = 1
	item, err := marshal(toQueueItem(q))
	if err != nil {
		return err
	}
	idItem, err := marshal(queueIDItem{PK: queueIDPK(q.ID), SK: queueIDSK, ProjectID: q.ProjectID.String(), Name: q.Name, Type: q.Type})
	if err != nil {
		return err
	}
	notExists := aws.String("attribute_not_exists(pk)")
	items := []types.TransactWriteItem{
		s.countUp(q.ProjectID, queueCountAttr, maxQueues),
		{Put: &types.Put{TableName: aws.String(s.table), Item: item, ConditionExpression: notExists}},
		{Put: &types.Put{TableName: aws.String(s.table), Item: idItem, ConditionExpression: notExists}},
	}
	if q.Redrive != nil {
		items = append(items, s.addRef(q.Redrive.DeadLetterQueue, q.ProjectID))
	}
	err = s.transact(ctx, "create queue", items)
	var c *canceled
	switch {
	case !errors.As(err, &c):
		return err
	case c.failed(0) && c.item(0) != nil:
		return meta.QuotaReached(meta.LimitMaxQueues, maxQueues)
	case c.failed(0):
		return meta.NotFound(meta.KindProject, q.ProjectID)
	case c.failed(1):
		return meta.QueueNameTaken(q.Name)
	case c.failed(3):
		return meta.DeadLetterNotFound(q.Redrive.DeadLetterQueue)
	default:
		return meta.IDTaken(meta.KindQueue, q.ID)
	}
}

// GetQueue reads a queue by id within a project.
func (s *Store) GetQueue(ctx context.Context, projectID, queueID ids.ID) (meta.Queue, error) {
	q, err := s.GetQueueByID(ctx, queueID)
	if err != nil {
		return meta.Queue{}, err
	}
	if q.ProjectID != projectID {
		return meta.Queue{}, queueNotFound(queueID)
	}
	return q, nil
}

// GetQueueByName reads a queue by name within a project.
func (s *Store) GetQueueByName(ctx context.Context, projectID ids.ID, name string) (meta.Queue, error) {
	if name == "" {
		return meta.Queue{}, meta.NameNotFound(meta.KindQueue, name)
	}
	var it queueItem
	ok, err := s.get(ctx, "get queue", projectPK(projectID), queuePre+name, &it)
	if err != nil {
		return meta.Queue{}, err
	}
	if !ok {
		return meta.Queue{}, meta.NameNotFound(meta.KindQueue, name)
	}
	return it.queue()
}

// GetQueueByID reads a queue by id alone: the id index, then the queue under its name.
func (s *Store) GetQueueByID(ctx context.Context, queueID ids.ID) (meta.Queue, error) {
	var idx queueIDItem
	ok, err := s.get(ctx, "get queue", queueIDPK(queueID), queueIDSK, &idx)
	if err != nil {
		return meta.Queue{}, err
	}
	if !ok {
		return meta.Queue{}, queueNotFound(queueID)
	}
	pid, err := ids.ParseUUID(idx.ProjectID)
	if err != nil {
		return meta.Queue{}, corrupt("%s: project: %v", idx.PK, err)
	}
	q, err := s.GetQueueByName(ctx, pid, idx.Name)
	if err != nil || q.ID != queueID {
		// Deleted (and maybe the name reused) between the two reads.
		if err == nil || errors.Is(err, meta.ErrNotFound) {
			return meta.Queue{}, queueNotFound(queueID)
		}
		return meta.Queue{}, err
	}
	return q, nil
}

// ListQueues lists a project's queues whose names start with prefix, in name (byte) order.
func (s *Store) ListQueues(ctx context.Context, projectID ids.ID, prefix string, page meta.Page) ([]meta.Queue, string, error) {
	return listByName(ctx, s, "queue", queuePre, projectID, prefix, page, queueItem.queue)
}

// listByName lists the items of one kind (the name items under sort-key prefix pre, what
// names the kind in errors) of a project whose names start with prefix, in name (byte)
// order, each converted by conv.
func listByName[I, T any](ctx context.Context, s *Store, what, pre string, projectID ids.ID, prefix string, page meta.Page, conv func(I) (T, error)) ([]T, string, error) {
	pk := projectPK(projectID)
	start, err := decodeCursor(page.Cursor, pk, func(sk string) bool {
		return strings.HasPrefix(sk, pre+prefix) && len(sk) > len(pre)
	})
	if err != nil {
		return nil, "", err
	}
	items, next, err := s.query(ctx, "list "+what+"s", &dynamodb.QueryInput{
		KeyConditionExpression:    aws.String("pk = :pk AND begins_with(sk, :pre)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(pk), ":pre": str(pre + prefix)},
	}, start, page.Size())
	if err != nil {
		return nil, "", err
	}
	out := make([]T, 0, len(items))
	for _, m := range items {
		var it I
		if err := attributevalue.UnmarshalMap(m, &it); err != nil {
			return nil, "", corrupt("%s listing: %v", what, err)
		}
		v, err := conv(it)
		if err != nil {
			return nil, "", err
		}
		out = append(out, v)
	}
	return out, next, nil
}

func sameDLQ(a, b *meta.Redrive) bool {
	switch {
	case a == nil || b == nil:
		return a == nil && b == nil
	default:
		return a.DeadLetterQueue == b.DeadLetterQueue
	}
}

// UpdateQueue replaces the settings of q if the stored Version is q.Version, moving the
// dead-letter reference when the redrive names another queue.
func (s *Store) UpdateQueue(ctx context.Context, q meta.Queue) (meta.Queue, error) {
	if err := q.CheckRedrive(); err != nil {
		return meta.Queue{}, err
	}
	for attempt := 0; ; attempt++ {
		cur, err := s.GetQueue(ctx, q.ProjectID, q.ID)
		if err != nil {
			return meta.Queue{}, err
		}
		if cur.Version != q.Version {
			return meta.Queue{}, meta.ErrVersionConflict
		}
		next := cur
		next.UpdatedAt = utc(q.UpdatedAt)
		next.VisibilityTimeoutSeconds = q.VisibilityTimeoutSeconds
		next.RetentionSeconds = q.RetentionSeconds
		next.DelaySeconds = q.DelaySeconds
		next.ReceiveWaitSeconds = q.ReceiveWaitSeconds
		next.ContentBasedDedup = q.ContentBasedDedup
		next.Fairness = q.Fairness
		next.MaxCancels = q.MaxCancels
		next.MaxMessageBytes = q.MaxMessageBytes
		next.GroupPolicy, next.GroupAffinitySeconds, next.MaxGroupsPerConsumer = q.GroupPolicy, q.GroupAffinitySeconds, q.MaxGroupsPerConsumer
		next.OnDeadLetter = q.OnDeadLetter
		next.Tags, next.SQSAttributes = nonEmpty(q.Tags), nonEmpty(q.SQSAttributes)
		next.Redrive = nil
		if q.Redrive != nil {
			r := *q.Redrive
			next.Redrive = &r
		}
		next.Version = cur.Version + 1
		item, err := marshal(toQueueItem(next))
		if err != nil {
			return meta.Queue{}, err
		}
		items := []types.TransactWriteItem{{Put: &types.Put{
			TableName:           aws.String(s.table),
			Item:                item,
			ConditionExpression: aws.String("id = :id AND version = :v"),
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":id": str(q.ID.String()), ":v": num(cur.Version),
			},
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}}}
		dropAt, addAt := -1, -1
		if !sameDLQ(cur.Redrive, next.Redrive) {
			if cur.Redrive != nil {
				dropAt = len(items)
				items = append(items, s.dropRef(cur.Redrive.DeadLetterQueue))
			}
			if next.Redrive != nil {
				addAt = len(items)
				items = append(items, s.addRef(next.Redrive.DeadLetterQueue, q.ProjectID))
			}
		}
		err = s.transact(ctx, "update queue", items)
		var c *canceled
		switch {
		case err == nil:
			return next, nil
		case !errors.As(err, &c):
			return meta.Queue{}, err
		case c.failed(0):
			// Changed or deleted since the read: tell which from the stored item, else re-read.
			if old := c.item(0); old != nil {
				var it queueItem
				if attributevalue.UnmarshalMap(old, &it) == nil && it.ID == q.ID.String() {
					return meta.Queue{}, meta.ErrVersionConflict
				}
			}
			if attempt >= casRetries {
				return meta.Queue{}, meta.ErrVersionConflict
			}
		case c.failed(addAt):
			return meta.Queue{}, meta.DeadLetterNotFound(next.Redrive.DeadLetterQueue)
		case c.failed(dropAt):
			return meta.Queue{}, meta.Fault(fmt.Sprintf("dead-letter reference of queue %s is missing", q.ID), nil)
		default:
			return meta.Queue{}, meta.Fault(fmt.Sprintf("update queue %s: unexpected condition failure", q.ID), nil)
		}
	}
}

// DeleteQueue deletes a queue that no queue names as its dead-letter queue (else QueueInUse).
func (s *Store) DeleteQueue(ctx context.Context, projectID, queueID ids.ID) (meta.Queue, error) {
	for attempt := 0; ; attempt++ {
		cur, err := s.GetQueue(ctx, projectID, queueID)
		if err != nil {
			return meta.Queue{}, err
		}
		items := []types.TransactWriteItem{
			{Delete: &types.Delete{
				TableName:           aws.String(s.table),
				Key:                 key(projectPK(projectID), queuePre+cur.Name),
				ConditionExpression: aws.String("id = :id AND version = :v"),
				ExpressionAttributeValues: map[string]types.AttributeValue{
					":id": str(queueID.String()), ":v": num(cur.Version),
				},
			}},
			{Delete: &types.Delete{
				TableName:                 aws.String(s.table),
				Key:                       key(queueIDPK(queueID), queueIDSK),
				ConditionExpression:       aws.String("attribute_exists(pk) AND refs = :zero"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":zero": num(0)},
			}},
		}
		if cur.Redrive != nil {
			items = append(items, s.dropRef(cur.Redrive.DeadLetterQueue))
		}
		items = append(items, s.countDown(projectID, queueCountAttr))
		err = s.transact(ctx, "delete queue", items)
		var c *canceled
		switch {
		case err == nil:
			return cur, nil
		case !errors.As(err, &c):
			return meta.Queue{}, err
		case c.failed(1) && !c.failed(0):
			return meta.Queue{}, meta.QueueInUse(queueID)
		case c.failed(0):
			// Changed or deleted since the read: read again.
			if attempt >= casRetries {
				return meta.Queue{}, meta.Unavailable(fmt.Sprintf("queue %s keeps changing", queueID), nil)
			}
		default:
			return meta.Queue{}, meta.Fault(fmt.Sprintf("dead-letter reference of queue %s is missing", queueID), nil)
		}
	}
}
