package dynamometa

// Tenancy data, in the same table (no new key or index, so no migration):
//
//	pk=P#<project>  sk=P              the project item also holds the project's own limits
//	                                  (limit_<name>, absent: the default) and its counts
//	                                  (queueCount, subCount, topicCount), which
//	                                  CreateQueue/DeleteQueue, CreateSubscription/
//	                                  DeleteSubscription and CreateTopicWithin/DeleteTopic move
//	                                  in their transactions, conditional on the quota when one
//	                                  is given
//	pk=P#<project>  sk=U#<hour>       the project's metered use in one UTC hour
//	                                  (2006-01-02T15): the counters, f_<replica> = the last
//	                                  flush of that replica added (a flush is added on the
//	                                  condition that its sequence is higher: a retried flush
//	                                  is added once), and sbhSlot = the last storedByteHours
//	                                  sample slot added.

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
)

const (
	queueCountAttr = "queueCount"
	subCountAttr   = "subCount"
	limitPre       = "limit_"
	usagePre       = "U#"
	hourLayout     = "2006-01-02T15"
)

var _ meta.TenancyStore = (*Store)(nil)

// countUp adds one to a project item's count, on the condition that the project exists and,
// when max > 0, that the count is under max. A failed condition returns the item when the
// project exists (so the caller can tell a full quota from a missing project).
func (s *Store) countUp(project ids.ID, attr string, max int64) types.TransactWriteItem {
	cond := "attribute_exists(pk)"
	vals := map[string]types.AttributeValue{":one": num(1)}
	if max > 0 {
		cond += " AND (attribute_not_exists(#n) OR #n < :max)"
		vals[":max"] = num(max)
	}
	return types.TransactWriteItem{Update: &types.Update{
		TableName: aws.String(s.table), Key: key(projectPK(project), projectSK),
		UpdateExpression: aws.String("ADD #n :one"), ConditionExpression: aws.String(cond),
		ExpressionAttributeNames: map[string]string{"#n": attr}, ExpressionAttributeValues: vals,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}}
}

// countDown takes one from a project item's count.
func (s *Store) countDown(project ids.ID, attr string) types.TransactWriteItem {
	return types.TransactWriteItem{Update: &types.Update{
		TableName: aws.String(s.table), Key: key(projectPK(project), projectSK),
		UpdateExpression:          aws.String("ADD #n :minus"),
		ExpressionAttributeNames:  map[string]string{"#n": attr},
		ExpressionAttributeValues: map[string]types.AttributeValue{":minus": num(-1)},
	}}
}

func (s *Store) projectItem(ctx context.Context, op string, project ids.ID) (map[string]types.AttributeValue, error) {
	res, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.table), Key: key(projectPK(project), projectSK), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, mapErr(op, err)
	}
	if res.Item == nil {
		return nil, meta.NotFound(meta.KindProject, project)
	}
	return res.Item, nil
}

func numAttr(item map[string]types.AttributeValue, name string) (int64, bool) {
	n, ok := item[name].(*types.AttributeValueMemberN)
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseInt(n.Value, 10, 64)
	return v, err == nil
}

func limitsOf(item map[string]types.AttributeValue) meta.Limits {
	l := meta.Limits{}
	for name := range item {
		if lim, ok := strings.CutPrefix(name, limitPre); ok {
			if v, ok := numAttr(item, name); ok {
				l[lim] = v
			}
		}
	}
	return l
}

// GetLimits reads a project's own limits from its item.
func (s *Store) GetLimits(ctx context.Context, project ids.ID) (meta.Limits, error) {
	item, err := s.projectItem(ctx, "get limits", project)
	if err != nil {
		return nil, err
	}
	return limitsOf(item), nil
}

// UpdateLimits sets and removes limit attributes of the project item in one update.
func (s *Store) UpdateLimits(ctx context.Context, project ids.ID, patch meta.LimitsPatch) (meta.Limits, error) {
	var set, remove []string
	names := map[string]string{}
	vals := map[string]types.AttributeValue{}
	i := 0
	for name, v := range patch {
		ph := "#l" + strconv.Itoa(i)
		names[ph] = limitPre + name
		if v == nil {
			remove = append(remove, ph)
		} else {
			set = append(set, ph+" = :l"+strconv.Itoa(i))
			vals[":l"+strconv.Itoa(i)] = num(*v)
		}
		i++
	}
	if len(set)+len(remove) == 0 {
		return s.GetLimits(ctx, project)
	}
	expr := ""
	if len(set) > 0 {
		expr = "SET " + strings.Join(set, ", ")
	}
	if len(remove) > 0 {
		expr += " REMOVE " + strings.Join(remove, ", ")
	}
	in := &dynamodb.UpdateItemInput{
		TableName: aws.String(s.table), Key: key(projectPK(project), projectSK),
		UpdateExpression: aws.String(expr), ConditionExpression: aws.String("attribute_exists(pk)"),
		ExpressionAttributeNames: names, ReturnValues: types.ReturnValueAllNew,
	}
	if len(vals) > 0 {
		in.ExpressionAttributeValues = vals
	}
	res, err := s.db.UpdateItem(ctx, in)
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return nil, meta.NotFound(meta.KindProject, project)
	}
	if err != nil {
		return nil, mapErr("update limits", err)
	}
	return limitsOf(res.Attributes), nil
}

// Counts reads the project item's counts.
func (s *Store) Counts(ctx context.Context, project ids.ID) (meta.ProjectCounts, error) {
	item, err := s.projectItem(ctx, "get counts", project)
	if err != nil {
		return meta.ProjectCounts{}, err
	}
	q, _ := numAttr(item, queueCountAttr)
	sub, _ := numAttr(item, subCountAttr)
	topics, _ := numAttr(item, topicCountAttr)
	return meta.ProjectCounts{Queues: max(q, 0), Subscriptions: max(sub, 0), Topics: max(topics, 0)}, nil
}

// counterAttrs are the counters' attribute names, in Counters field order. A counter is
// added at the end: hour items written before it lack the attribute, which reads as 0.
var counterAttrs = []string{"requests", "messagesSent", "messagesDelivered", "messagesAcked", "bytesIn", "bytesOut", "pushAttempts", "storedByteHours", "messagesPublished"}

func counterValues(c meta.Counters) []int64 {
	return []int64{c.Requests, c.MessagesSent, c.MessagesDelivered, c.MessagesAcked, c.BytesIn, c.BytesOut, c.PushAttempts, c.StoredByteHours, c.MessagesPublished}
}

func countersOf(item map[string]types.AttributeValue) meta.Counters {
	v := make([]int64, len(counterAttrs))
	for i, a := range counterAttrs {
		v[i], _ = numAttr(item, a)
	}
	return meta.Counters{Requests: v[0], MessagesSent: v[1], MessagesDelivered: v[2], MessagesAcked: v[3],
		BytesIn: v[4], BytesOut: v[5], PushAttempts: v[6], StoredByteHours: v[7], MessagesPublished: v[8]}
}

func usageSK(hour time.Time) string { return usagePre + meta.HourOf(hour).Format(hourLayout) }

// AddUsage adds each hour of the flush with one conditional update: the hour item records the
// replica's last flush sequence, and an update whose sequence is not higher is a retry of a
// flush already added (its failed condition is success). A flush that fails part way is
// retried whole by the caller with the same sequence; the hours it had added refuse it.
func (s *Store) AddUsage(ctx context.Context, f meta.UsageFlush) error {
	// The hours are independent updates: a few at a time keep a flush of many projects short.
	sem := make(chan struct{}, usageParallel)
	errs := make([]error, len(f.Hours))
	var wg sync.WaitGroup
	for i, h := range f.Hours {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[i] = s.addHour(ctx, f.Replica, f.Seq, h)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// usageParallel bounds the concurrent updates of one flush.
const usageParallel = 8

func (s *Store) addHour(ctx context.Context, replica string, seq uint64, h meta.UsageHour) error {
	vals := map[string]types.AttributeValue{":seq": num(int64(seq))}
	names := map[string]string{"#f": "f_" + replica}
	var adds []string
	for i, v := range counterValues(h.Counters) {
		if v != 0 {
			ph := "c" + strconv.Itoa(i)
			adds = append(adds, "#"+ph+" :"+ph)
			names["#"+ph], vals[":"+ph] = counterAttrs[i], num(v)
		}
	}
	expr := "SET #f = :seq"
	if len(adds) > 0 {
		expr += " ADD " + strings.Join(adds, ", ")
	}
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.table), Key: key(projectPK(h.Project), usageSK(h.Hour)),
		UpdateExpression:          aws.String(expr),
		ConditionExpression:       aws.String("attribute_not_exists(#f) OR #f < :seq"),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: vals,
	})
	var ccf *types.ConditionalCheckFailedException
	if err != nil && !errors.As(err, &ccf) {
		return mapErr("add usage", err)
	}
	return nil
}

// AddStoredSample adds one slot's storedByteHours on the condition that no later-or-equal
// slot of the hour was added.
func (s *Store) AddStoredSample(ctx context.Context, project ids.ID, hour time.Time, slot int, byteHours int64) error {
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.table), Key: key(projectPK(project), usageSK(hour)),
		UpdateExpression:          aws.String("SET sbhSlot = :slot ADD storedByteHours :v"),
		ConditionExpression:       aws.String("attribute_not_exists(sbhSlot) OR sbhSlot < :slot"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":slot": num(int64(slot)), ":v": num(byteHours)},
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return nil
	}
	return mapErr("add stored sample", err)
}

// Usage queries the project's hour items in [from, to).
func (s *Store) Usage(ctx context.Context, project ids.ID, from, to time.Time) ([]meta.UsageHour, error) {
	out := []meta.UsageHour{}
	last := to.Add(-time.Nanosecond)
	if last.Before(meta.HourOf(from)) {
		return out, nil
	}
	in := &dynamodb.QueryInput{
		TableName: aws.String(s.table), ConsistentRead: aws.Bool(true),
		KeyConditionExpression: aws.String("pk = :pk AND sk BETWEEN :a AND :b"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": str(projectPK(project)), ":a": str(usageSK(from)), ":b": str(usageSK(last)),
		},
	}
	for {
		res, err := s.db.Query(ctx, in)
		if err != nil {
			return nil, mapErr("read usage", err)
		}
		for _, item := range res.Items {
			var k struct {
				SK string `dynamodbav:"sk"`
			}
			_ = attributevalue.UnmarshalMap(item, &k)
			h, err := time.Parse(hourLayout, strings.TrimPrefix(k.SK, usagePre))
			if err != nil {
				return nil, corrupt("usage %s: %v", k.SK, err)
			}
			if c := countersOf(item); !c.IsZero() {
				out = append(out, meta.UsageHour{Project: project, Hour: h.UTC(), Counters: c})
			}
		}
		if res.LastEvaluatedKey == nil {
			return out, nil
		}
		in.ExclusiveStartKey = res.LastEvaluatedKey
	}
}
