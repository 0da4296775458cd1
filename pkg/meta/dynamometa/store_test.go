package dynamometa_test

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"go.uber.org/goleak"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/meta/dynamometa"
	"github.com/queueshq/queues/pkg/meta/metatest"
	"github.com/queueshq/queues/pkg/testservers"
)

// TestMain fails the package when a test leaves a goroutine running (a paginator or a
// watcher its caller's context should have stopped), once DynamoDB Local is stopped.
func TestMain(m *testing.M) { goleak.VerifyTestMain(testservers.ThenStopAll(m)) }

func client(t *testing.T) *dynamodb.Client {
	t.Helper()
	c, err := testservers.DynamoClient(t.Context(), testservers.DynamoDB(t))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// newTable migrates a table of its own for one test and drops it afterwards.
func newTable(t *testing.T, c *dynamodb.Client) string {
	t.Helper()
	table := testservers.TableName("meta")
	if err := dynamometa.Migrate(t.Context(), c, table); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	t.Cleanup(func() {
		_, _ = c.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	})
	return table
}

func TestConformance(t *testing.T) {
	c := client(t)
	metatest.Run(t, func(t *testing.T) meta.Store {
		return dynamometa.New(c, newTable(t, c))
	})
}

func TestMigrateIdempotent(t *testing.T) {
	c := client(t)
	table := newTable(t, c)
	s := dynamometa.New(c, table)
	p := meta.Project{ID: ids.New(), Name: "kept"}
	if err := s.CreateProject(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := dynamometa.Migrate(t.Context(), c, table); err != nil {
			t.Fatalf("second Migrate: %v", err)
		}
	}
	if _, err := s.GetProject(t.Context(), p.ID); err != nil {
		t.Fatalf("data lost by a second Migrate: %v", err)
	}
}

func TestMigrationMatchesTable(t *testing.T) {
	c := client(t)
	table := newTable(t, c)
	want, err := dynamometa.TableDefinition(table)
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.DescribeTable(t.Context(), &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	got := out.Table
	if got.TableStatus != types.TableStatusActive {
		t.Errorf("status %s, want ACTIVE", got.TableStatus)
	}
	key := func(ks []types.KeySchemaElement) []string {
		var s []string
		for _, k := range ks {
			s = append(s, aws.ToString(k.AttributeName)+":"+string(k.KeyType))
		}
		return s
	}
	attrs := func(as []types.AttributeDefinition) []string {
		var s []string
		for _, a := range as {
			s = append(s, aws.ToString(a.AttributeName)+":"+string(a.AttributeType))
		}
		slices.Sort(s)
		return s
	}
	if !slices.Equal(key(got.KeySchema), key(want.KeySchema)) {
		t.Errorf("key schema %v, migration says %v", key(got.KeySchema), key(want.KeySchema))
	}
	if !slices.Equal(key(got.KeySchema), []string{"pk:HASH", "sk:RANGE"}) {
		t.Errorf("key schema %v, the store needs pk HASH and sk RANGE", key(got.KeySchema))
	}
	if !slices.Equal(attrs(got.AttributeDefinitions), attrs(want.AttributeDefinitions)) {
		t.Errorf("attributes %v, migration says %v", attrs(got.AttributeDefinitions), attrs(want.AttributeDefinitions))
	}
	if got.BillingModeSummary == nil || got.BillingModeSummary.BillingMode != want.BillingMode || want.BillingMode != types.BillingModePayPerRequest {
		t.Errorf("billing mode %+v, migration says %s (want PAY_PER_REQUEST)", got.BillingModeSummary, want.BillingMode)
	}
	if len(got.GlobalSecondaryIndexes) != len(want.GlobalSecondaryIndexes) || len(got.LocalSecondaryIndexes) != len(want.LocalSecondaryIndexes) {
		t.Errorf("indexes differ from the migration")
	}
}

func TestMigrateRefusesOtherKeySchema(t *testing.T) {
	c := client(t)
	table := testservers.TableName("other")
	_, err := c.CreateTable(t.Context(), &dynamodb.CreateTableInput{
		TableName:            aws.String(table),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = c.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	})
	if err := dynamometa.Migrate(t.Context(), c, table); err == nil {
		t.Fatal("Migrate accepted a table with another key schema")
	}
}

// A store whose table is missing or whose endpoint does not answer reports Unavailable.
func TestUnavailable(t *testing.T) {
	c := client(t)
	s := dynamometa.New(c, testservers.TableName("missing"))
	for what, err := range map[string]error{
		"Ping":        s.Ping(t.Context()),
		"GetProject":  func() error { _, err := s.GetProject(t.Context(), ids.New()); return err }(),
		"CreateQueue": s.CreateQueue(t.Context(), meta.Queue{ID: ids.New(), ProjectID: ids.New(), Name: "q"}),
	} {
		if apierr.CodeOf(err) != apierr.Unavailable {
			t.Errorf("%s on a missing table: %v, want unavailable", what, err)
		}
	}
	port, err := testservers.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	dead, err := testservers.DynamoClient(t.Context(), "http://127.0.0.1:"+itoa(port))
	if err != nil {
		t.Fatal(err)
	}
	s = dynamometa.New(dead, "queues")
	if err := s.Ping(t.Context()); apierr.CodeOf(err) != apierr.Unavailable {
		t.Errorf("Ping of a closed port: %v, want unavailable", err)
	}
	if _, err := s.GetToken(t.Context(), ids.New(), ids.New()); apierr.CodeOf(err) != apierr.Unavailable {
		t.Errorf("GetToken of a closed port: %v, want unavailable", err)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestTenancyConformance(t *testing.T) {
	c := client(t)
	metatest.RunTenancy(t, func(t *testing.T) metatest.TenancyStore {
		return dynamometa.New(c, newTable(t, c))
	})
}

// A token stored before tokens had index items is found by TokenProject, which writes its
// index item.
func TestTokenProjectBackfill(t *testing.T) {
	c := client(t)
	table := newTable(t, c)
	s := dynamometa.New(c, table)
	ctx := t.Context()
	p := meta.Project{ID: ids.New(), Name: "old", CreatedAt: time.Now()}
	if err := s.CreateProject(ctx, p); err != nil {
		t.Fatal(err)
	}
	tok := meta.Token{ID: ids.New(), ProjectID: p.ID, Name: "old", Scopes: []string{"*"}, CreatedAt: time.Now()}
	if err := s.CreateToken(ctx, tok); err != nil {
		t.Fatal(err)
	}
	// Make it an old token: drop its index item.
	if _, err := c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "TID#" + tok.ID.String()}, "sk": &types.AttributeValueMemberS{Value: "T"}}}); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the first finds it by scanning, the second by the index it wrote
		got, err := s.TokenProject(ctx, tok.ID)
		if err != nil || got != p.ID {
			t.Fatalf("TokenProject = %s, %v; want %s", got, err, p.ID)
		}
	}
	if _, err := s.TokenProject(ctx, ids.New()); apierr.CodeOf(err) != apierr.NotFound {
		t.Fatalf("an unknown token: %v", err)
	}
}
