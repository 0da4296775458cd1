// Package dynamometa is the metadata store on one DynamoDB table (see package migrations for
// the schema and its layout).
//
// Items (all keys are strings; ids are lowercase UUIDs):
//
//	pk=P#<project>   sk=P             the project
//	pk=PROJECTS      sk=<project>     a copy for listing projects (in id, i.e. creation, order)
//	pk=P#<project>   sk=T#<token>     a token (read with ConsistentRead: revocation is checked on it)
//	pk=TID#<token>   sk=T             the token's project (SQS access keys name the token alone)
//	pk=P#<project>   sk=Q#<name>      a queue's settings and Version; the conditional put makes
//	                                  names unique per project, begins_with lists by prefix
//	pk=QID#<queue>   sk=Q             the id index of a queue (project, name, type) and refs: how
//	                                  many queues name it as their dead-letter queue
//
// Every change that touches more than one item is one TransactWriteItems with conditions, so
// the id index, the name item and the reference counts never disagree: creating a queue whose
// redrive names D adds 1 to D's refs on the condition that D exists in the same project;
// deleting D requires refs = 0; updating a redrive moves the reference in the transaction that
// replaces the settings on the condition that the Version is still the one read.
package dynamometa

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
)

const (
	projectsPK = "PROJECTS"
	projectSK  = "P"
	queueIDSK  = "Q"
	tokenPre   = "T#"
	queuePre   = "Q#"
	// transactRetries bounds the retries of a transaction cancelled by a conflicting one.
	transactRetries = 8
	// casRetries bounds re-reads when a queue changes between the read and the write of
	// DeleteQueue or UpdateQueue.
	casRetries = 5
)

// Store implements meta.Store on one DynamoDB table.
type Store struct {
	db    *dynamodb.Client
	table string
}

var _ meta.Store = (*Store)(nil)

// New returns a Store on table (created by Migrate).
func New(client *dynamodb.Client, table string) *Store {
	return &Store{db: client, table: table}
}

func projectPK(id ids.ID) string { return "P#" + id.String() }
func queueIDPK(id ids.ID) string { return "QID#" + id.String() }

func key(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: pk},
		"sk": &types.AttributeValueMemberS{Value: sk},
	}
}

func str(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }
func num(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}
func utc(t time.Time) time.Time { return t.UTC() }

func timePtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// ---- item shapes ----

type projectItem struct {
	PK        string    `dynamodbav:"pk"`
	SK        string    `dynamodbav:"sk"`
	ID        string    `dynamodbav:"id"`
	Name      string    `dynamodbav:"name"`
	CreatedAt time.Time `dynamodbav:"createdAt"`
}

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
		ContentBasedDedup: q.ContentBasedDedup, Version: q.Version,
		Tags: q.Tags, SQSAttributes: q.SQSAttributes,
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
		ContentBasedDedup: it.ContentBasedDedup, Version: it.Version,
		Tags: nonEmpty(it.Tags), SQSAttributes: nonEmpty(it.SQSAttributes),
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

func (it projectItem) project() (meta.Project, error) {
	id, err := ids.ParseUUID(it.ID)
	if err != nil {
		return meta.Project{}, corrupt("project %s/%s: %v", it.PK, it.SK, err)
	}
	return meta.Project{ID: id, Name: it.Name, CreatedAt: utc(it.CreatedAt)}, nil
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

// ---- errors ----

func corrupt(format string, args ...any) error {
	return apierr.New(apierr.Internal, "metadata: malformed item: "+format, args...)
}

// mapErr turns an SDK error into an *apierr.Error: requests DynamoDB refused as malformed are
// Internal (a bug here); everything else — network errors, timeouts, throttling, a missing
// table, bad credentials, server errors — is Unavailable.
func mapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	var ae *apierr.Error
	if errors.As(err, &ae) {
		return ae
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		switch api.ErrorCode() {
		case "ValidationException", "SerializationException":
			return apierr.New(apierr.Internal, "metadata %s: %s", op, api.ErrorMessage())
		case "ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded":
			return apierr.New(apierr.Unavailable, "metadata store is throttling (%s); retry", op).WithRetryAfter(time.Second)
		}
	}
	return apierr.New(apierr.Unavailable, "metadata store unavailable (%s); retry", op)
}

// canceled is a transaction cancelled by failed conditions; reason i belongs to item i.
type canceled struct {
	reasons []types.CancellationReason
}

func (c *canceled) Error() string { return "transaction cancelled" }

// failed reports whether the condition of item i failed.
func (c *canceled) failed(i int) bool {
	return i >= 0 && i < len(c.reasons) && aws.ToString(c.reasons[i].Code) == "ConditionalCheckFailed"
}

// item returns the stored item of a failed condition (ReturnValuesOnConditionCheckFailure).
func (c *canceled) item(i int) map[string]types.AttributeValue {
	if i < 0 || i >= len(c.reasons) {
		return nil
	}
	return c.reasons[i].Item
}

// transact runs a write transaction. A transaction cancelled because of failed conditions
// returns *canceled; one cancelled by a concurrent transaction or throttling is retried a few
// times with jittered backoff, then reported Unavailable.
func (s *Store) transact(ctx context.Context, op string, items []types.TransactWriteItem) error {
	backoff := 10 * time.Millisecond
	for attempt := 0; ; attempt++ {
		_, err := s.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
		if err == nil {
			return nil
		}
		var tc *types.TransactionCanceledException
		if !errors.As(err, &tc) {
			return mapErr(op, err)
		}
		transient := false
		for _, r := range tc.CancellationReasons {
			switch aws.ToString(r.Code) {
			case "ConditionalCheckFailed":
				return &canceled{reasons: tc.CancellationReasons}
			case "TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded":
				transient = true
			}
		}
		if !transient {
			return apierr.New(apierr.Internal, "metadata %s: %s", op, aws.ToString(tc.Message))
		}
		if attempt >= transactRetries {
			return apierr.New(apierr.Unavailable, "metadata %s: too much contention; retry", op).WithRetryAfter(time.Second)
		}
		d := backoff/2 + rand.N(backoff)
		backoff = min(2*backoff, 500*time.Millisecond)
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return mapErr(op, ctx.Err())
		case <-t.C:
		}
	}
}

func (s *Store) get(ctx context.Context, op string, pk, sk string, out any) (bool, error) {
	res, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.table), Key: key(pk, sk), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return false, mapErr(op, err)
	}
	if res.Item == nil {
		return false, nil
	}
	if err := attributevalue.UnmarshalMap(res.Item, out); err != nil {
		return false, corrupt("%s/%s: %v", pk, sk, err)
	}
	return true, nil
}

func marshal(v any) (map[string]types.AttributeValue, error) {
	m, err := attributevalue.MarshalMap(v)
	if err != nil {
		return nil, apierr.New(apierr.Internal, "metadata: encode item: %v", err)
	}
	return m, nil
}

// ---- paging ----

type cursor struct {
	PK string `json:"pk"`
	SK string `json:"sk"`
}

func encodeCursor(k map[string]types.AttributeValue) string {
	var c cursor
	_ = attributevalue.UnmarshalMap(k, &c)
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeCursor checks that a cursor came from this listing (same partition, a sort key the
// listing could have returned) and returns the key to start after.
func decodeCursor(s, pk string, validSK func(string) bool) (map[string]types.AttributeValue, error) {
	if s == "" {
		return nil, nil
	}
	bad := apierr.Invalid("cursor", "the cursor is not one this listing returned")
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, bad
	}
	d := json.NewDecoder(strings.NewReader(string(b)))
	d.DisallowUnknownFields()
	var c cursor
	if err := d.Decode(&c); err != nil || d.More() || c.PK != pk || !validSK(c.SK) {
		return nil, bad
	}
	return key(c.PK, c.SK), nil
}

// query reads up to limit items of a key range after start. It asks for one more item than the
// page holds so that the last page has no cursor.
func (s *Store) query(ctx context.Context, op string, in *dynamodb.QueryInput, start map[string]types.AttributeValue, limit int) ([]map[string]types.AttributeValue, string, error) {
	in.TableName = aws.String(s.table)
	in.ConsistentRead = aws.Bool(true)
	in.ExclusiveStartKey = start
	var items []map[string]types.AttributeValue
	for {
		in.Limit = aws.Int32(int32(limit + 1 - len(items)))
		res, err := s.db.Query(ctx, in)
		if err != nil {
			return nil, "", mapErr(op, err)
		}
		items = append(items, res.Items...)
		if len(items) > limit {
			items = items[:limit]
			last := items[limit-1]
			return items, encodeCursor(map[string]types.AttributeValue{"pk": last["pk"], "sk": last["sk"]}), nil
		}
		if res.LastEvaluatedKey == nil {
			return items, "", nil
		}
		in.ExclusiveStartKey = res.LastEvaluatedKey
	}
}

// ---- projects ----

// CreateProject stores a new project. A project id already stored is an Internal error (ids
// are random; a collision is a bug).
func (s *Store) CreateProject(ctx context.Context, p meta.Project) error {
	if p.ID.IsZero() {
		return apierr.Invalid("id", "project id is zero")
	}
	it := projectItem{PK: projectPK(p.ID), SK: projectSK, ID: p.ID.String(), Name: p.Name, CreatedAt: utc(p.CreatedAt)}
	main, err := marshal(it)
	if err != nil {
		return err
	}
	it.PK, it.SK = projectsPK, p.ID.String()
	listed, err := marshal(it)
	if err != nil {
		return err
	}
	notExists := aws.String("attribute_not_exists(pk)")
	err = s.transact(ctx, "create project", []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String(s.table), Item: main, ConditionExpression: notExists}},
		{Put: &types.Put{TableName: aws.String(s.table), Item: listed, ConditionExpression: notExists}},
	})
	var c *canceled
	if errors.As(err, &c) {
		return apierr.New(apierr.Internal, "project %s already exists", p.ID)
	}
	return err
}

// GetProject reads a project.
func (s *Store) GetProject(ctx context.Context, id ids.ID) (meta.Project, error) {
	var it projectItem
	ok, err := s.get(ctx, "get project", projectPK(id), projectSK, &it)
	if err != nil {
		return meta.Project{}, err
	}
	if !ok {
		return meta.Project{}, apierr.New(apierr.NotFound, "project %s not found", id)
	}
	return it.project()
}

// ListProjects lists projects in id (creation) order.
func (s *Store) ListProjects(ctx context.Context, page meta.Page) ([]meta.Project, string, error) {
	return listByID(ctx, s, "project", projectsPK, page, projectItem.project)
}

// listByID pages through a partition whose sort keys are lowercase UUIDs (the project and
// subscription listings), decoding each item as I and converting it to T.
func listByID[I, T any](ctx context.Context, s *Store, what, pk string, page meta.Page, conv func(I) (T, error)) ([]T, string, error) {
	start, err := decodeCursor(page.Cursor, pk, func(sk string) bool {
		_, err := ids.ParseUUID(sk)
		return err == nil && strings.ToLower(sk) == sk
	})
	if err != nil {
		return nil, "", err
	}
	items, next, err := s.query(ctx, "list "+what+"s", &dynamodb.QueryInput{
		KeyConditionExpression:    aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(pk)},
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

// ---- tokens ----

func (s *Store) projectExists(id ids.ID) types.TransactWriteItem {
	return types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
		TableName: aws.String(s.table), Key: key(projectPK(id), projectSK),
		ConditionExpression: aws.String("attribute_exists(pk)"),
	}}
}

// CreateToken stores a token of an existing project (else NotFound).
func (s *Store) CreateToken(ctx context.Context, t meta.Token) error {
	if t.ID.IsZero() {
		return apierr.Invalid("id", "token id is zero")
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
		return apierr.New(apierr.NotFound, "project %s not found", t.ProjectID)
	default:
		return apierr.New(apierr.Internal, "token %s already exists", t.ID)
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
		return meta.Token{}, apierr.New(apierr.NotFound, "token %s not found", tokenID)
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
			return ids.ID{}, apierr.New(apierr.NotFound, "token %s not found", tokenID)
		}
		start = res.LastEvaluatedKey
	}
}

// RevokeToken sets RevokedAt unless it is already set.
func (s *Store) RevokeToken(ctx context.Context, projectID, tokenID ids.ID, at time.Time) error {
	atAV, err := attributevalue.Marshal(utc(at))
	if err != nil {
		return apierr.New(apierr.Internal, "metadata: encode time: %v", err)
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
		return apierr.New(apierr.NotFound, "token %s not found", tokenID)
	}
	return mapErr("revoke token", err)
}

// ---- queues ----

func dlqNotFound(id ids.ID) error {
	return apierr.Field(apierr.NotFound, "redrive.deadLetterQueue", "dead-letter queue %s not found", id)
}

func queueNotFound(id ids.ID) error {
	return apierr.New(apierr.NotFound, "queue %s not found", id)
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
// must be free (QueueExists), a redrive's dead-letter queue must exist in the project (NotFound,
// field "redrive.deadLetterQueue").
func (s *Store) CreateQueue(ctx context.Context, q meta.Queue) error {
	return s.CreateQueueWithin(ctx, q, 0)
}

// CreateQueueWithin is CreateQueue with the project's maxQueues quota (<= 0: none): the
// project item's queue count goes up in the same transaction, on the condition that it is
// under the limit (tenancy.go).
func (s *Store) CreateQueueWithin(ctx context.Context, q meta.Queue, maxQueues int64) error {
	if q.ID.IsZero() {
		return apierr.Invalid("id", "queue id is zero")
	}
	if q.Name == "" {
		return apierr.Invalid("name", "queue name is empty")
	}
	if q.Redrive != nil && q.Redrive.DeadLetterQueue == q.ID {
		return apierr.Invalid("redrive.deadLetterQueue", "a queue cannot be its own dead-letter queue")
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
		return apierr.Quota(meta.LimitMaxQueues, maxQueues, "delete a queue or ask for a higher limit")
	case c.failed(0):
		return apierr.New(apierr.NotFound, "project %s not found", q.ProjectID)
	case c.failed(1):
		return apierr.Field(apierr.QueueExists, "name", "a queue named %q already exists", q.Name)
	case c.failed(3):
		return dlqNotFound(q.Redrive.DeadLetterQueue)
	default:
		return apierr.New(apierr.Internal, "queue id %s already exists", q.ID)
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
		return meta.Queue{}, apierr.New(apierr.NotFound, "queue %q not found", name)
	}
	var it queueItem
	ok, err := s.get(ctx, "get queue", projectPK(projectID), queuePre+name, &it)
	if err != nil {
		return meta.Queue{}, err
	}
	if !ok {
		return meta.Queue{}, apierr.New(apierr.NotFound, "queue %q not found", name)
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
		if err == nil || apierr.CodeOf(err) == apierr.NotFound {
			return meta.Queue{}, queueNotFound(queueID)
		}
		return meta.Queue{}, err
	}
	return q, nil
}

// ListQueues lists a project's queues whose names start with prefix, in name (byte) order.
func (s *Store) ListQueues(ctx context.Context, projectID ids.ID, prefix string, page meta.Page) ([]meta.Queue, string, error) {
	pk := projectPK(projectID)
	start, err := decodeCursor(page.Cursor, pk, func(sk string) bool {
		return strings.HasPrefix(sk, queuePre+prefix) && len(sk) > len(queuePre)
	})
	if err != nil {
		return nil, "", err
	}
	items, next, err := s.query(ctx, "list queues", &dynamodb.QueryInput{
		KeyConditionExpression:    aws.String("pk = :pk AND begins_with(sk, :pre)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(pk), ":pre": str(queuePre + prefix)},
	}, start, page.Size())
	if err != nil {
		return nil, "", err
	}
	qs := make([]meta.Queue, 0, len(items))
	for _, m := range items {
		var it queueItem
		if err := attributevalue.UnmarshalMap(m, &it); err != nil {
			return nil, "", corrupt("queue listing: %v", err)
		}
		q, err := it.queue()
		if err != nil {
			return nil, "", err
		}
		qs = append(qs, q)
	}
	return qs, next, nil
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
	if q.Redrive != nil && q.Redrive.DeadLetterQueue == q.ID {
		return meta.Queue{}, apierr.Invalid("redrive.deadLetterQueue", "a queue cannot be its own dead-letter queue")
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
			return meta.Queue{}, dlqNotFound(next.Redrive.DeadLetterQueue)
		case c.failed(dropAt):
			return meta.Queue{}, apierr.New(apierr.Internal, "dead-letter reference of queue %s is missing", q.ID)
		default:
			return meta.Queue{}, apierr.New(apierr.Internal, "update queue %s: unexpected condition failure", q.ID)
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
			return meta.Queue{}, apierr.New(apierr.QueueInUse, "queue %s is the dead-letter queue of another queue", queueID)
		case c.failed(0):
			// Changed or deleted since the read: read again.
			if attempt >= casRetries {
				return meta.Queue{}, apierr.New(apierr.Unavailable, "queue %s keeps changing; retry", queueID)
			}
		default:
			return meta.Queue{}, apierr.New(apierr.Internal, "dead-letter reference of queue %s is missing", queueID)
		}
	}
}

// Ping reads one item to check that the table answers.
func (s *Store) Ping(ctx context.Context) error {
	_, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.table), Key: key("PING", "PING")})
	return mapErr("ping", err)
}

// String names the store for logs.
func (s *Store) String() string { return fmt.Sprintf("dynamodb table %s", s.table) }
