package testservers

import (
	"context"
	"os"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func TestMain(m *testing.M) {
	code := m.Run()
	StopAll()
	os.Exit(code)
}

func TestDynamoDBAnswers(t *testing.T) {
	ctx := context.Background()
	ep := DynamoDB(t)
	if ep2 := DynamoDB(t); ep2 != ep {
		t.Fatalf("second call started another server: %s vs %s", ep, ep2)
	}
	c, err := DynamoClient(ctx, ep)
	if err != nil {
		t.Fatal(err)
	}
	table := TableName("testservers")
	_, err = c.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(table),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.ListTables(ctx, &dynamodb.ListTablesInput{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, n := range out.TableNames {
		found = found || n == table
	}
	if !found {
		t.Fatalf("table %s not listed in %v", table, out.TableNames)
	}
}

func TestTableNameUnique(t *testing.T) {
	a, b := TableName("x"), TableName("x")
	if a == b || len(a) != len("x-")+12 {
		t.Fatalf("TableName gave %q and %q", a, b)
	}
}
