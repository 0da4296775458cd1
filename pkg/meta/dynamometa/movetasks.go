package dynamometa

// Move tasks (docs/redrive.md):
//
//	pk=MOVES#<queue id>  sk=meta.MoveTaskKey(task id)  a task: request, progress, lease (a
//	                     queue's tasks are one partition, newest first)
//	pk=MOVERUN           sk=<queue id>                 the queue's running task (taskId, and
//	                     queueId: the task's source, a replay's topic, as the key is its
//	                     destination, meta.MoveTask.RunQueue): the put is conditional on the
//	                     item not existing, so a queue runs one task at a time; the runners
//	                     list this partition to find work
//	pk=MOVEPROJ          sk=<project id>               running: how many tasks of the project
//	                     run, conditionally under meta.MaxRunningMoveTasks
//
// Creating a task writes the three in one transaction; the update that ends a task deletes
// the MOVERUN item and takes one from MOVEPROJ in the same transaction (only for a task whose
// item says it was counted, slot: tasks created before the count are not).

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
)

const (
	moveRunPK  = "MOVERUN"
	moveProjPK = "MOVEPROJ"
)

var _ meta.MoveTaskStore = (*Store)(nil)

func movesPK(q ids.ID) string { return "MOVES#" + q.String() }

type moveItem struct {
	PK           string     `dynamodbav:"pk"`
	SK           string     `dynamodbav:"sk"`
	ID           string     `dynamodbav:"id"`
	ProjectID    string     `dynamodbav:"projectId"`
	QueueID      string     `dynamodbav:"queueId"`
	Destination  string     `dynamodbav:"destination,omitempty"`
	TopicID      string     `dynamodbav:"topicId,omitempty"`
	FromSequence uint64     `dynamodbav:"fromSequence,omitempty"`
	ToSequence   uint64     `dynamodbav:"toSequence,omitempty"`
	Action       string     `dynamodbav:"action,omitempty"`
	Filter       string     `dynamodbav:"filter,omitempty"`
	MaxPerSecond int        `dynamodbav:"maxPerSecond"`
	Status       string     `dynamodbav:"status"`
	DryRun       bool       `dynamodbav:"dryRun,omitempty"`
	Counting     bool       `dynamodbav:"counting,omitempty"`
	Moved        int64      `dynamodbav:"moved"`
	ToMove       int64      `dynamodbav:"toMove"`
	Failed       int64      `dynamodbav:"failed"`
	Error        string     `dynamodbav:"error,omitempty"`
	Cursor       string     `dynamodbav:"cursor,omitempty"`
	StartedAt    time.Time  `dynamodbav:"startedAt"`
	FinishedAt   *time.Time `dynamodbav:"finishedAt,omitempty"`
	Owner        string     `dynamodbav:"owner,omitempty"`
	LeaseUntil   time.Time  `dynamodbav:"leaseUntil"`
	Version      int64      `dynamodbav:"version"`
	// Slot: the task counts in its project's MOVEPROJ item while it runs.
	Slot bool `dynamodbav:"slot,omitempty"`
}

type moveRunItem struct {
	PK      string `dynamodbav:"pk"`
	SK      string `dynamodbav:"sk"`
	TaskID  string `dynamodbav:"taskId"`
	QueueID string `dynamodbav:"queueId"`
}

func toMoveItem(t meta.MoveTask) moveItem {
	it := moveItem{
		PK: movesPK(t.QueueID), SK: meta.MoveTaskKey(t.ID),
		ID: t.ID.String(), ProjectID: t.ProjectID.String(), QueueID: t.QueueID.String(),
		Action: t.Action, Filter: t.Filter, FromSequence: t.FromSequence, ToSequence: t.ToSequence, MaxPerSecond: t.MaxPerSecond, Status: t.Status,
		DryRun: t.DryRun, Counting: t.Counting, Moved: t.Moved, ToMove: t.ToMove, Failed: t.Failed, Error: t.Error, Cursor: t.Cursor,
		StartedAt: utc(t.StartedAt), Owner: t.Owner, LeaseUntil: utc(t.LeaseUntil), Version: t.Version,
	}
	if !t.Destination.IsZero() {
		it.Destination = t.Destination.String()
	}
	if t.IsReplay() {
		it.TopicID = t.TopicID.String()
	}
	if !t.FinishedAt.IsZero() {
		f := utc(t.FinishedAt)
		it.FinishedAt = &f
	}
	return it
}

func (it moveItem) task() (meta.MoveTask, error) {
	id, err1 := ids.ParseUUID(it.ID)
	pid, err2 := ids.ParseUUID(it.ProjectID)
	qid, err3 := ids.ParseUUID(it.QueueID)
	var dst, topic ids.ID
	var err4, err5 error
	if it.Destination != "" {
		dst, err4 = ids.ParseUUID(it.Destination)
	}
	if it.TopicID != "" {
		topic, err5 = ids.ParseUUID(it.TopicID)
	}
	if err := errors.Join(err1, err2, err3, err4, err5); err != nil {
		return meta.MoveTask{}, corrupt("move task %s/%s: %v", it.PK, it.SK, err)
	}
	t := meta.MoveTask{
		ID: id, ProjectID: pid, QueueID: qid, Destination: dst, Action: it.Action, Filter: it.Filter,
		TopicID: topic, FromSequence: it.FromSequence, ToSequence: it.ToSequence,
		MaxPerSecond: it.MaxPerSecond, Status: it.Status, DryRun: it.DryRun, Counting: it.Counting, Moved: it.Moved, ToMove: it.ToMove,
		Failed: it.Failed, Error: it.Error, Cursor: it.Cursor, StartedAt: it.StartedAt,
		Owner: it.Owner, LeaseUntil: it.LeaseUntil, Version: it.Version,
	}
	if it.FinishedAt != nil {
		t.FinishedAt = *it.FinishedAt
	}
	return t.Clone(), nil
}

func moveNotFound(id ids.ID) error { return meta.NotFound(meta.KindMoveTask, id) }

// CreateMoveTask stores a new running task and its queue's MOVERUN item, unless the queue
// has a running task (MoveTaskRunning).
func (s *Store) CreateMoveTask(ctx context.Context, t meta.MoveTask) error {
	rq := t.RunQueue()
	if t.ID.IsZero() || t.QueueID.IsZero() || rq.IsZero() {
		return meta.ZeroID("task or queue")
	}
	t.Status, t.Version = meta.MoveRunning, 1
	mi := toMoveItem(t)
	mi.Slot = true
	item, err := marshal(mi)
	if err != nil {
		return err
	}
	run, err := marshal(moveRunItem{PK: moveRunPK, SK: rq.String(), TaskID: t.ID.String(), QueueID: t.QueueID.String()})
	if err != nil {
		return err
	}
	notExists := aws.String("attribute_not_exists(pk)")
	err = s.transact(ctx, "create move task", []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String(s.table), Item: run, ConditionExpression: notExists}},
		{Put: &types.Put{TableName: aws.String(s.table), Item: item, ConditionExpression: notExists}},
		{Update: &types.Update{
			TableName: aws.String(s.table), Key: key(moveProjPK, t.ProjectID.String()),
			UpdateExpression:          aws.String("ADD running :one"),
			ConditionExpression:       aws.String("attribute_not_exists(running) OR running < :max"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":one": num(1), ":max": num(meta.MaxRunningMoveTasks)},
		}},
	})
	var c *canceled
	switch {
	case errors.As(err, &c) && c.failed(2) && !c.failed(0):
		return meta.RunningQuota()
	case errors.As(err, &c):
		return meta.MoveTaskRunning(rq, ids.ID{})
	}
	return err
}

// projectDone takes one from a project's running count.
func (s *Store) projectDone(p ids.ID) types.TransactWriteItem {
	return types.TransactWriteItem{Update: &types.Update{
		TableName: aws.String(s.table), Key: key(moveProjPK, p.String()),
		UpdateExpression:          aws.String("ADD running :minus"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":minus": num(-1)},
	}}
}

// GetMoveTask reads one task with a strongly consistent read.
func (s *Store) GetMoveTask(ctx context.Context, queueID, taskID ids.ID) (meta.MoveTask, error) {
	var it moveItem
	ok, err := s.get(ctx, "get move task", movesPK(queueID), meta.MoveTaskKey(taskID), &it)
	if err != nil {
		return meta.MoveTask{}, err
	}
	if !ok {
		return meta.MoveTask{}, moveNotFound(taskID)
	}
	return it.task()
}

// ListMoveTasks lists a queue's tasks, newest first.
func (s *Store) ListMoveTasks(ctx context.Context, queueID ids.ID, page meta.Page) ([]meta.MoveTask, string, error) {
	return listPartition(ctx, s, "move task", movesPK(queueID), func(sk string) bool {
		return len(sk) == 32 && strings.Trim(sk, "0123456789abcdef") == ""
	}, page, moveItem.task)
}

// RunningMoveTasks lists the MOVERUN partition and reads each running task.
func (s *Store) RunningMoveTasks(ctx context.Context) ([]meta.MoveTask, error) {
	var out []meta.MoveTask
	var start map[string]types.AttributeValue
	for {
		items, next, err := s.query(ctx, "list running move tasks", &dynamodb.QueryInput{
			KeyConditionExpression:    aws.String("pk = :pk"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(moveRunPK)},
		}, start, meta.MaxLimit)
		if err != nil {
			return nil, err
		}
		for _, m := range items {
			var it moveRunItem
			if err := attributevalue.UnmarshalMap(m, &it); err != nil {
				return nil, corrupt("running move tasks: %v", err)
			}
			q, err1 := ids.ParseUUID(it.QueueID)
			id, err2 := ids.ParseUUID(it.TaskID)
			if err1 != nil || err2 != nil {
				return nil, corrupt("running move task %s: bad ids", it.SK)
			}
			t, err := s.GetMoveTask(ctx, q, id)
			if err != nil {
				return nil, err
			}
			out = append(out, t)
		}
		if next == "" {
			return out, nil
		}
		if start, err = decodeCursor(next, moveRunPK, func(string) bool { return true }); err != nil {
			return nil, err
		}
	}
}

// UpdateMoveTask replaces a task if its stored Version is t.Version; the update that ends a
// running task deletes its queue's MOVERUN item in the same transaction.
func (s *Store) UpdateMoveTask(ctx context.Context, t meta.MoveTask) (meta.MoveTask, error) {
	var curItem moveItem
	ok, err := s.get(ctx, "get move task", movesPK(t.QueueID), meta.MoveTaskKey(t.ID), &curItem)
	if err != nil {
		return meta.MoveTask{}, err
	}
	if !ok {
		return meta.MoveTask{}, moveNotFound(t.ID)
	}
	cur, err := curItem.task()
	if err != nil {
		return meta.MoveTask{}, err
	}
	if cur.Version != t.Version || (cur.Status != meta.MoveRunning && t.Status == meta.MoveRunning) {
		return meta.MoveTask{}, meta.ErrMoveTaskConflict
	}
	next := t
	next.ProjectID, next.StartedAt = cur.ProjectID, cur.StartedAt
	next.TopicID, next.Destination = cur.TopicID, cur.Destination
	next.Version = cur.Version + 1
	ni := toMoveItem(next)
	ni.Slot = curItem.Slot
	item, err := marshal(ni)
	if err != nil {
		return meta.MoveTask{}, err
	}
	put := &types.Put{
		TableName: aws.String(s.table), Item: item,
		ConditionExpression:       aws.String("version = :v"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":v": num(cur.Version)},
	}
	writes := []types.TransactWriteItem{{Put: put}}
	if cur.Status == meta.MoveRunning && next.Status != meta.MoveRunning {
		writes = append(writes, types.TransactWriteItem{Delete: &types.Delete{
			TableName: aws.String(s.table), Key: key(moveRunPK, cur.RunQueue().String()),
			ConditionExpression:       aws.String("taskId = :id"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":id": str(t.ID.String())},
		}})
		if curItem.Slot {
			writes = append(writes, s.projectDone(cur.ProjectID))
		}
	}
	err = s.transact(ctx, "update move task", writes)
	var c *canceled
	if errors.As(err, &c) {
		return meta.MoveTask{}, meta.ErrMoveTaskConflict
	}
	if err != nil {
		return meta.MoveTask{}, err
	}
	return next.Clone(), nil
}
