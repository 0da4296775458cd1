package dynamometa

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

type tokenItem struct {
	PK        string     `dynamodbav:"pk"`
	SK        string     `dynamodbav:"sk"`
	ID        string     `dynamodbav:"id"`
	ProjectID string     `dynamodbav:"projectId"`
	Name      string     `dynamodbav:"name"`
	Scopes    []string   `dynamodbav:"scopes"`
	CreatedAt time.Time  `dynamodbav:"createdAt"`
	ExpiresAt *time.Time `dynamodbav:"expiresAt,omitempty"`
	RevokedAt *time.Time `dynamodbav:"revokedAt,omitempty"`
}

func (it tokenItem) token() (meta.Token, error) {
	id, err1 := ids.ParseUUID(it.ID)
	pid, err2 := ids.ParseUUID(it.ProjectID)
	if err := errors.Join(err1, err2); err != nil {
		return meta.Token{}, corrupt("token %s/%s: %v", it.PK, it.SK, err)
	}
	var scopes []string
	if len(it.Scopes) > 0 {
		scopes = it.Scopes
	}
	return meta.Token{
		ID: id, ProjectID: pid, Name: it.Name, Scopes: scopes, CreatedAt: utc(it.CreatedAt),
		ExpiresAt: timePtr(it.ExpiresAt), RevokedAt: timePtr(it.RevokedAt),
	}, nil
}

// CreateToken stores a token of an existing project (else NotFound).
func (s *Store) CreateToken(ctx context.Context, t meta.Token) error {
	if t.ID.IsZero() {
		return meta.ZeroID("token")
	}
	item, err := marshal(tokenItem{
		PK: projectPK(t.ProjectID), SK: tokenPre + t.ID.String(),
		ID: t.ID.String(), ProjectID: t.ProjectID.String(), Name: t.Name, Scopes: append([]string{}, t.Scopes...),
		CreatedAt: utc(t.CreatedAt), ExpiresAt: timePtr(t.ExpiresAt), RevokedAt: timePtr(t.RevokedAt),
	})
	if err != nil {
		return err
	}
	index, err := marshal(tokenIndexItem{PK: tokenIDPK(t.ID), SK: tokenIDSK, ProjectID: t.ProjectID.String()})
	if err != nil {
		return err
	}
	err = s.transact(ctx, "create token", []types.TransactWriteItem{
		s.projectExists(t.ProjectID),
		{Put: &types.Put{TableName: aws.String(s.table), Item: item, ConditionExpression: aws.String("attribute_not_exists(pk)")}},
		{Put: &types.Put{TableName: aws.String(s.table), Item: index}},
	})
	var c *canceled
	switch {
	case !errors.As(err, &c):
		return err
	case c.failed(0):
		return meta.NotFound(meta.KindProject, t.ProjectID)
	default:
		return meta.IDTaken(meta.KindToken, t.ID)
	}
}

// GetToken reads a token with a strongly consistent read.
func (s *Store) GetToken(ctx context.Context, projectID, tokenID ids.ID) (meta.Token, error) {
	var it tokenItem
	ok, err := s.get(ctx, "get token", projectPK(projectID), tokenPre+tokenID.String(), &it)
	if err != nil {
		return meta.Token{}, err
	}
	if !ok {
		return meta.Token{}, meta.NotFound(meta.KindToken, tokenID)
	}
	return it.token()
}

type tokenIndexItem struct {
	PK        string `dynamodbav:"pk"`
	SK        string `dynamodbav:"sk"`
	ProjectID string `dynamodbav:"projectId"`
}

const tokenIDSK = "T"

func tokenIDPK(id ids.ID) string { return "TID#" + id.String() }

// TokenProject reads a token's project from its index item.
func (s *Store) TokenProject(ctx context.Context, tokenID ids.ID) (ids.ID, error) {
	var it tokenIndexItem
	ok, err := s.get(ctx, "get token project", tokenIDPK(tokenID), tokenIDSK, &it)
	if err != nil {
		return ids.ID{}, err
	}
	if !ok {
		return s.backfillTokenIndex(ctx, tokenID)
	}
	pid, err := ids.ParseUUID(it.ProjectID)
	if err != nil {
		return ids.ID{}, corrupt("token index %s: %v", it.PK, err)
	}
	return pid, nil
}

// backfillTokenIndex finds a token created before tokens had index items by scanning for it,
// and writes its index item. Only a request signed with the token's SQS secret gets here, so
// the scan runs once per such token, not for every unknown key.
func (s *Store) backfillTokenIndex(ctx context.Context, tokenID ids.ID) (ids.ID, error) {
	var start map[string]types.AttributeValue
	for {
		res, err := s.db.Scan(ctx, &dynamodb.ScanInput{
			TableName: aws.String(s.table), ExclusiveStartKey: start, ConsistentRead: aws.Bool(true),
			FilterExpression:          aws.String("sk = :sk"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":sk": str(tokenPre + tokenID.String())},
		})
		if err != nil {
			return ids.ID{}, mapErr("find token", err)
		}
		for _, item := range res.Items {
			var it tokenItem
			if attributevalue.UnmarshalMap(item, &it) != nil {
				continue
			}
			t, err := it.token()
			if err != nil {
				return ids.ID{}, err
			}
			index, err := marshal(tokenIndexItem{PK: tokenIDPK(tokenID), SK: tokenIDSK, ProjectID: t.ProjectID.String()})
			if err != nil {
				return ids.ID{}, err
			}
			if _, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: index}); err != nil {
				return ids.ID{}, mapErr("index token", err)
			}
			return t.ProjectID, nil
		}
		if len(res.LastEvaluatedKey) == 0 {
			return ids.ID{}, meta.NotFound(meta.KindToken, tokenID)
		}
		start = res.LastEvaluatedKey
	}
}

// RevokeToken sets RevokedAt unless it is already set.
func (s *Store) RevokeToken(ctx context.Context, projectID, tokenID ids.ID, at time.Time) error {
	atAV, err := attributevalue.Marshal(utc(at))
	if err != nil {
		return meta.Fault("encode time", err)
	}
	_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       key(projectPK(projectID), tokenPre+tokenID.String()),
		UpdateExpression:          aws.String("SET revokedAt = if_not_exists(revokedAt, :at)"),
		ConditionExpression:       aws.String("attribute_exists(pk)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":at": atAV},
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return meta.NotFound(meta.KindToken, tokenID)
	}
	return mapErr("revoke token", err)
}
