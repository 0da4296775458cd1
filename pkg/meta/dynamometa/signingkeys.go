package dynamometa

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/queueshq/queues/pkg/meta"
)

// The JWT signing keys live in one item (a handful of small keys), replaced under a version
// condition so two replicas rotating at once store one new key.
const sigKeysPK, sigKeysSK = "SIGKEYS", "ring"

type sigKeysItem struct {
	PK      string            `dynamodbav:"pk"`
	SK      string            `dynamodbav:"sk"`
	Keys    []meta.SigningKey `dynamodbav:"keys"`
	Version int64             `dynamodbav:"version"`
}

var _ meta.SigningKeyStore = (*Store)(nil)

func (s *Store) sigKeys(ctx context.Context) (sigKeysItem, error) {
	it := sigKeysItem{PK: sigKeysPK, SK: sigKeysSK}
	_, err := s.get(ctx, "get signing keys", sigKeysPK, sigKeysSK, &it)
	for i := range it.Keys {
		it.Keys[i].CreatedAt, it.Keys[i].RetireAt = utc(it.Keys[i].CreatedAt), utc(it.Keys[i].RetireAt)
	}
	return it, err
}

// SigningKeys lists the stored JWT signing keys, oldest first.
func (s *Store) SigningKeys(ctx context.Context) ([]meta.SigningKey, error) {
	it, err := s.sigKeys(ctx)
	return it.Keys, err
}

// putSigKeys replaces the ring if its version is still it.Version; false when it changed.
func (s *Store) putSigKeys(ctx context.Context, it sigKeysItem) (bool, error) {
	prev := it.Version
	it.Version++
	item, err := marshal(it)
	if err != nil {
		return false, err
	}
	cond := "attribute_not_exists(pk) OR version = :v"
	err = s.transact(ctx, "put signing keys", []types.TransactWriteItem{{Put: &types.Put{
		TableName: aws.String(s.table), Item: item, ConditionExpression: aws.String(cond),
		ExpressionAttributeValues: map[string]types.AttributeValue{":v": &types.AttributeValueMemberN{Value: strconv.FormatInt(prev, 10)}},
	}}})
	var c *canceled
	if errors.As(err, &c) {
		return false, nil
	}
	return err == nil, err
}

// AddSigningKey stores k unless a key created at or after notBefore exists.
func (s *Store) AddSigningKey(ctx context.Context, k meta.SigningKey, notBefore time.Time) (bool, error) {
	for attempt := 0; attempt <= casRetries; attempt++ {
		it, err := s.sigKeys(ctx)
		if err != nil {
			return false, err
		}
		if slices.ContainsFunc(it.Keys, func(o meta.SigningKey) bool { return !o.CreatedAt.Before(notBefore) }) {
			return false, nil
		}
		k.CreatedAt, k.RetireAt = utc(k.CreatedAt), utc(k.RetireAt)
		it.Keys = append(it.Keys, k)
		if ok, err := s.putSigKeys(ctx, it); ok || err != nil {
			return ok, err
		}
	}
	return false, nil // others keep rotating: theirs will do
}

// DeleteSigningKey removes a key (absent: no error).
func (s *Store) DeleteSigningKey(ctx context.Context, kid string) error {
	for attempt := 0; attempt <= casRetries; attempt++ {
		it, err := s.sigKeys(ctx)
		if err != nil {
			return err
		}
		n := len(it.Keys)
		it.Keys = slices.DeleteFunc(it.Keys, func(o meta.SigningKey) bool { return o.KID == kid })
		if n == len(it.Keys) {
			return nil
		}
		if ok, err := s.putSigKeys(ctx, it); ok || err != nil {
			return err
		}
	}
	return nil
}
