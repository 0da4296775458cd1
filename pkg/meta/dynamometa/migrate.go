package dynamometa

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/queueshq/queues/migrations"
)

// TableFile is the migration file holding the table definition.
const TableFile = "0001_table.json"

// TableDefinition returns the CreateTable request of migrations/0001_table.json for table.
func TableDefinition(table string) (*dynamodb.CreateTableInput, error) {
	b, err := fs.ReadFile(migrations.FS, TableFile)
	if err != nil {
		return nil, err
	}
	d := json.NewDecoder(strings.NewReader(string(b)))
	d.DisallowUnknownFields()
	var in dynamodb.CreateTableInput
	if err := d.Decode(&in); err != nil {
		return nil, fmt.Errorf("migrations/%s: %w", TableFile, err)
	}
	if len(in.KeySchema) == 0 || len(in.AttributeDefinitions) == 0 {
		return nil, fmt.Errorf("migrations/%s: no key schema", TableFile)
	}
	in.TableName = aws.String(table)
	return &in, nil
}

// Migrate creates the metadata table if it does not exist and waits until it is ACTIVE. It is
// idempotent: on an existing table it only checks that the key schema is the expected one (and
// waits for ACTIVE). Several processes may run it at once.
func Migrate(ctx context.Context, client *dynamodb.Client, table string) error {
	want, err := TableDefinition(table)
	if err != nil {
		return err
	}
	desc, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	var nf *types.ResourceNotFoundException
	switch {
	case errors.As(err, &nf):
		_, err = client.CreateTable(ctx, want)
		var inUse *types.ResourceInUseException
		if err != nil && !errors.As(err, &inUse) { // in use: someone else created it meanwhile
			return fmt.Errorf("create table %s: %w", table, err)
		}
	case err != nil:
		return fmt.Errorf("describe table %s: %w", table, err)
	default:
		if !sameKeys(desc.Table.KeySchema, want.KeySchema) {
			return fmt.Errorf("table %s exists with another key schema (%s; want %s)", table, keysString(desc.Table.KeySchema), keysString(want.KeySchema))
		}
		if desc.Table.TableStatus == types.TableStatusActive {
			return nil
		}
	}
	w := dynamodb.NewTableExistsWaiter(client, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = 200*time.Millisecond, 5*time.Second
	})
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)}, 10*time.Minute); err != nil {
		return fmt.Errorf("wait for table %s: %w", table, err)
	}
	return nil
}

func keysString(ks []types.KeySchemaElement) string {
	var parts []string
	for _, k := range ks {
		parts = append(parts, aws.ToString(k.AttributeName)+" "+string(k.KeyType))
	}
	return strings.Join(parts, ", ")
}

func sameKeys(a, b []types.KeySchemaElement) bool {
	return slices.EqualFunc(a, b, func(x, y types.KeySchemaElement) bool {
		return aws.ToString(x.AttributeName) == aws.ToString(y.AttributeName) && x.KeyType == y.KeyType
	})
}
