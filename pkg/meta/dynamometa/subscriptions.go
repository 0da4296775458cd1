package dynamometa

// Subscriptions live in one partition, so the pusher fleet lists them with one query:
//
//	pk=SUBS   sk=<queue id>   a queue's push subscription (at most one per queue: the put is
//	                          conditional on the item not existing; the queue's id index must
//	                          exist in the same project)
//
// Deleting a queue does not touch this item: the API deletes the subscription after the queue,
// and the pusher fleet deletes any subscription whose queue is gone.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
)

const subsPK = "SUBS"

var _ meta.SubscriptionStore = (*Store)(nil)

type subItem struct {
	PK             string `dynamodbav:"pk"`
	SK             string `dynamodbav:"sk"`
	ID             string `dynamodbav:"id"`
	QueueID        string `dynamodbav:"queueId"`
	ProjectID      string `dynamodbav:"projectId"`
	Endpoint       string `dynamodbav:"endpoint"`
	BatchSize      int    `dynamodbav:"batchSize"`
	BatchWindowMs  int    `dynamodbav:"batchWindowMs"`
	MaxInFlight    int    `dynamodbav:"maxInFlight"`
	TimeoutSeconds int    `dynamodbav:"timeoutSeconds"`
	Paused         bool   `dynamodbav:"paused"`
	// Endpoint health (issue 37); absent on items written before it: 0, never disabled.
	DisableAfterSeconds int        `dynamodbav:"disableAfterSeconds,omitempty"`
	Disabled            bool       `dynamodbav:"disabled,omitempty"`
	DisabledReason      string     `dynamodbav:"disabledReason,omitempty"`
	DisabledAt          *time.Time `dynamodbav:"disabledAt,omitempty"`
	MaxMessagesPerSec   int        `dynamodbav:"maxMessagesPerSecond,omitempty"`
	FlowKey             string     `dynamodbav:"flowKeyAttribute,omitempty"`
	FlowParallelism     int        `dynamodbav:"flowParallelism,omitempty"`
	FlowRate            int        `dynamodbav:"flowMessagesPerSecond,omitempty"`
	Secret              string     `dynamodbav:"secret"`
	PreviousSecret      string     `dynamodbav:"previousSecret,omitempty"`
	PreviousExpiresAt   *time.Time `dynamodbav:"previousExpiresAt,omitempty"`
	Signing             string     `dynamodbav:"signing,omitempty"`
	SigningPublicKey    string     `dynamodbav:"signingPublicKey,omitempty"`
	SigningPrivateKey   string     `dynamodbav:"signingPrivateKey,omitempty"`
	PreviousSigningKey  string     `dynamodbav:"previousSigningPrivateKey,omitempty"`
	AuthType            string     `dynamodbav:"authType,omitempty"`
	AuthAudience        string     `dynamodbav:"authAudience,omitempty"`
	CreatedAt           time.Time  `dynamodbav:"createdAt"`
	UpdatedAt           time.Time  `dynamodbav:"updatedAt"`
	Version             int64      `dynamodbav:"version"`
}

func toSubItem(s meta.Subscription) subItem {
	it := subItem{
		PK: subsPK, SK: s.QueueID.String(),
		ID: s.ID.String(), QueueID: s.QueueID.String(), ProjectID: s.ProjectID.String(),
		Endpoint: s.Endpoint, BatchSize: s.BatchSize, BatchWindowMs: s.BatchWindowMs,
		MaxInFlight: s.MaxInFlight, TimeoutSeconds: s.TimeoutSeconds, Paused: s.Paused,
		MaxMessagesPerSec: s.MaxMessagesPerSecond, FlowKey: s.FlowControl.KeyAttribute,
		FlowParallelism: s.FlowControl.Parallelism, FlowRate: s.FlowControl.MessagesPerSecond,
		Secret: s.Secret, PreviousSecret: s.PreviousSecret,
		Signing: s.Signing, SigningPublicKey: s.SigningPublicKey, SigningPrivateKey: s.SigningPrivateKey,
		PreviousSigningKey: s.PreviousSigningPrivateKey,
		AuthType:           s.AuthType, AuthAudience: s.AuthAudience,
		CreatedAt: utc(s.CreatedAt), UpdatedAt: utc(s.UpdatedAt), Version: s.Version,
	}
	if !s.PreviousExpiresAt.IsZero() {
		t := utc(s.PreviousExpiresAt)
		it.PreviousExpiresAt = &t
	}
	it.DisableAfterSeconds, it.Disabled, it.DisabledReason = s.DisableAfterSeconds, s.Disabled, s.DisabledReason
	if !s.DisabledAt.IsZero() {
		t := utc(s.DisabledAt)
		it.DisabledAt = &t
	}
	return it
}

func (it subItem) subscription() (meta.Subscription, error) {
	id, err1 := ids.ParseUUID(it.ID)
	qid, err2 := ids.ParseUUID(it.QueueID)
	pid, err3 := ids.ParseUUID(it.ProjectID)
	if err := errors.Join(err1, err2, err3); err != nil {
		return meta.Subscription{}, corrupt("subscription %s/%s: %v", it.PK, it.SK, err)
	}
	s := meta.Subscription{
		ID: id, QueueID: qid, ProjectID: pid, Endpoint: it.Endpoint,
		BatchSize: it.BatchSize, BatchWindowMs: it.BatchWindowMs, MaxInFlight: it.MaxInFlight,
		TimeoutSeconds: it.TimeoutSeconds, Paused: it.Paused,
		MaxMessagesPerSecond: it.MaxMessagesPerSec,
		FlowControl:          meta.FlowControl{KeyAttribute: it.FlowKey, Parallelism: it.FlowParallelism, MessagesPerSecond: it.FlowRate},
		Secret:               it.Secret, PreviousSecret: it.PreviousSecret,
		Signing: it.Signing, SigningPublicKey: it.SigningPublicKey, SigningPrivateKey: it.SigningPrivateKey,
		PreviousSigningPrivateKey: it.PreviousSigningKey,
		AuthType:                  it.AuthType, AuthAudience: it.AuthAudience,
		CreatedAt: utc(it.CreatedAt), UpdatedAt: utc(it.UpdatedAt), Version: it.Version,
	}
	if it.PreviousExpiresAt != nil {
		s.PreviousExpiresAt = utc(*it.PreviousExpiresAt)
	}
	s.DisableAfterSeconds, s.Disabled, s.DisabledReason = it.DisableAfterSeconds, it.Disabled, it.DisabledReason
	if it.DisabledAt != nil {
		s.DisabledAt = utc(*it.DisabledAt)
	}
	return s, nil
}

func subNotFound(q ids.ID) error {
	return meta.NotFound(meta.KindSubscription, q)
}

// CreateSubscription stores a queue's subscription with Version 1: the queue must exist in the
// subscription's project (NotFound) and have no subscription yet (SubscriptionExists).
func (s *Store) CreateSubscription(ctx context.Context, sub meta.Subscription) error {
	return s.CreateSubscriptionWithin(ctx, sub, 0)
}

// CreateSubscriptionWithin is CreateSubscription with the project's maxSubscriptions quota
// (<= 0: none), counted on the project item in the same transaction (tenancy.go).
func (s *Store) CreateSubscriptionWithin(ctx context.Context, sub meta.Subscription, maxSubs int64) error {
	if sub.ID.IsZero() || sub.QueueID.IsZero() {
		return meta.ZeroID("subscription or queue")
	}
	sub.Version = 1
	item, err := marshal(toSubItem(sub))
	if err != nil {
		return err
	}
	err = s.transact(ctx, "create subscription", []types.TransactWriteItem{
		{ConditionCheck: &types.ConditionCheck{
			TableName: aws.String(s.table), Key: key(queueIDPK(sub.QueueID), queueIDSK),
			ConditionExpression:       aws.String("attribute_exists(pk) AND projectId = :p"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":p": str(sub.ProjectID.String())},
		}},
		{Put: &types.Put{TableName: aws.String(s.table), Item: item, ConditionExpression: aws.String("attribute_not_exists(pk)")}},
		s.countUp(sub.ProjectID, subCountAttr, maxSubs),
	})
	var c *canceled
	switch {
	case !errors.As(err, &c):
		return err
	case c.failed(0):
		return meta.NotFound(meta.KindQueue, sub.QueueID)
	case c.failed(2) && !c.failed(1):
		return meta.QuotaReached(meta.LimitMaxSubscriptions, maxSubs)
	default:
		return meta.SubscriptionExists(sub.QueueID)
	}
}

// GetSubscription reads a queue's subscription with a strongly consistent read.
func (s *Store) GetSubscription(ctx context.Context, queueID ids.ID) (meta.Subscription, error) {
	var it subItem
	ok, err := s.get(ctx, "get subscription", subsPK, queueID.String(), &it)
	if err != nil {
		return meta.Subscription{}, err
	}
	if !ok {
		return meta.Subscription{}, subNotFound(queueID)
	}
	return it.subscription()
}

// UpdateSubscription replaces a subscription if its stored Version is sub.Version.
func (s *Store) UpdateSubscription(ctx context.Context, sub meta.Subscription) (meta.Subscription, error) {
	cur, err := s.GetSubscription(ctx, sub.QueueID)
	if err != nil {
		return meta.Subscription{}, err
	}
	if cur.ID != sub.ID {
		return meta.Subscription{}, subNotFound(sub.QueueID)
	}
	if cur.Version != sub.Version {
		return meta.Subscription{}, meta.ErrSubscriptionConflict
	}
	next := sub
	next.ProjectID, next.CreatedAt = cur.ProjectID, cur.CreatedAt
	next.Version = cur.Version + 1
	item, err := marshal(toSubItem(next))
	if err != nil {
		return meta.Subscription{}, err
	}
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(s.table), Item: item,
		ConditionExpression: aws.String("id = :id AND version = :v"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":id": str(sub.ID.String()), ":v": num(cur.Version),
		},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		var old subItem
		if ccf.Item != nil && attributevalue.UnmarshalMap(ccf.Item, &old) == nil && old.ID == sub.ID.String() {
			return meta.Subscription{}, meta.ErrSubscriptionConflict
		}
		return meta.Subscription{}, subNotFound(sub.QueueID)
	}
	if err != nil {
		return meta.Subscription{}, mapErr("update subscription", err)
	}
	return cloneStored(next), nil
}

func cloneStored(s meta.Subscription) meta.Subscription {
	s.CreatedAt, s.UpdatedAt = utc(s.CreatedAt), utc(s.UpdatedAt)
	if !s.PreviousExpiresAt.IsZero() {
		s.PreviousExpiresAt = utc(s.PreviousExpiresAt)
	}
	return s
}

// DeleteSubscription deletes a queue's subscription (NotFound when there is none).
// The project's subscription count goes down in the same transaction.
func (s *Store) DeleteSubscription(ctx context.Context, queueID ids.ID) error {
	for attempt := 0; ; attempt++ {
		cur, err := s.GetSubscription(ctx, queueID)
		if err != nil {
			return err
		}
		err = s.transact(ctx, "delete subscription", []types.TransactWriteItem{
			{Delete: &types.Delete{
				TableName: aws.String(s.table), Key: key(subsPK, queueID.String()),
				ConditionExpression:       aws.String("id = :id"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":id": str(cur.ID.String())},
			}},
			s.countDown(cur.ProjectID, subCountAttr),
		})
		var c *canceled
		if !errors.As(err, &c) {
			return err
		}
		// Deleted (or replaced) since the read: read again.
		if attempt >= casRetries {
			return meta.Unavailable(fmt.Sprintf("subscription of queue %s keeps changing", queueID), nil)
		}
	}
}

// ListSubscriptions lists every subscription in queue id order.
func (s *Store) ListSubscriptions(ctx context.Context, page meta.Page) ([]meta.Subscription, string, error) {
	return listByID(ctx, s, "subscription", subsPK, page, subItem.subscription)
}
