package testservers

import (
	"context"
	"os"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// Backends are what a suite that runs whole replicas starts once in its TestMain: a
// redis-server, DynamoDB Local (or the one QUEUES_TEST_DYNAMODB_ENDPOINT names) and a fresh
// metadata table with its schema.
type Backends struct {
	RedisAddr string
	Dynamo    *dynamodb.Client
	Table     string
	stops     []func()
}

// StartBackends starts the backends; migrate lays the table's schema (dynamometa.Migrate,
// passed in so this package stays below the stores it serves). Stop stops them.
func StartBackends(ctx context.Context, tablePrefix string, migrate func(context.Context, *dynamodb.Client, string) error) (*Backends, error) {
	b := &Backends{}
	addr, stopRedis, err := StartRedis(ctx)
	if err != nil {
		return nil, err
	}
	b.RedisAddr, b.stops = addr, append(b.stops, stopRedis)
	endpoint := os.Getenv(EnvDynamoDBEndpoint)
	if endpoint == "" {
		ep, stop, err := StartDynamoDB(ctx)
		if err != nil {
			b.Stop()
			return nil, err
		}
		endpoint, b.stops = ep, append(b.stops, stop)
	}
	if b.Dynamo, err = DynamoClient(ctx, endpoint); err != nil {
		b.Stop()
		return nil, err
	}
	b.Table = TableName(tablePrefix)
	if err := migrate(ctx, b.Dynamo, b.Table); err != nil {
		b.Stop()
		return nil, err
	}
	return b, nil
}

// Stop stops what StartBackends started, newest first.
func (b *Backends) Stop() {
	for i := len(b.stops) - 1; i >= 0; i-- {
		b.stops[i]()
	}
	b.stops = nil
}
