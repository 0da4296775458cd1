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
// Topics and bindings are laid out in topics.go, subscriptions in subscriptions.go, move
// tasks in movetasks.go, limits, counts and usage in tenancy.go.
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

// ---- errors ----

func corrupt(format string, args ...any) error {
	return meta.Fault("malformed item", fmt.Errorf(format, args...))
}

// mapErr turns an SDK error into a meta failure: requests DynamoDB refused as malformed are
// Internal (a bug here); everything else — network errors, timeouts, throttling, a missing
// table, bad credentials, server errors — is Unavailable.
func mapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	var ae *apierr.Error
	if errors.As(err, &ae) { // the store's own answer (meta's errors read as one)
		return err
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		switch api.ErrorCode() {
		case "ValidationException", "SerializationException":
			return meta.Fault(op, err)
		case "ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded":
			return &meta.Failure{Err: meta.ErrUnavailable, Op: op + ": throttled", Cause: err, RetryAfter: time.Second}
		}
	}
	return meta.Unavailable(op, err)
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
			return meta.Fault(op, err)
		}
		if attempt >= transactRetries {
			return &meta.Failure{Err: meta.ErrUnavailable, Op: op + ": too much contention", Cause: err, RetryAfter: time.Second}
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
		return nil, meta.Fault("encode item", err)
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
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, meta.ErrBadCursor
	}
	d := json.NewDecoder(strings.NewReader(string(b)))
	d.DisallowUnknownFields()
	var c cursor
	if err := d.Decode(&c); err != nil || d.More() || c.PK != pk || !validSK(c.SK) {
		return nil, meta.ErrBadCursor
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

// ---- tokens ----

// ---- queues ----

// Ping reads one item to check that the table answers.
func (s *Store) Ping(ctx context.Context) error {
	_, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.table), Key: key("PING", "PING")})
	return mapErr("ping", err)
}

// String names the store for logs.
func (s *Store) String() string { return fmt.Sprintf("dynamodb table %s", s.table) }

// listByID pages through a partition whose sort keys are lowercase UUIDs (the project and
// subscription listings), decoding each item as I and converting it to T.
func listByID[I, T any](ctx context.Context, s *Store, what, pk string, page meta.Page, conv func(I) (T, error)) ([]T, string, error) {
	return listPartition(ctx, s, what, pk, func(sk string) bool {
		_, err := ids.ParseUUID(sk)
		return err == nil && strings.ToLower(sk) == sk
	}, page, conv)
}

// listPartition pages through the whole partition pk in sort-key order; validSK says which
// sort keys a cursor may name (a cursor is the client's, so it is checked before use).
func listPartition[I, T any](ctx context.Context, s *Store, what, pk string, validSK func(string) bool, page meta.Page, conv func(I) (T, error)) ([]T, string, error) {
	start, err := decodeCursor(page.Cursor, pk, validSK)
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
