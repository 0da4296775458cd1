package console_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/queueshq/queues/pkg/console"
	"github.com/queueshq/queues/pkg/meta/dynamometa"
	"github.com/queueshq/queues/pkg/signingkeys"
	"github.com/queueshq/queues/pkg/testservers"
	"github.com/queueshq/queues/services/queues/stack"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testservers.StopAll()
	os.Exit(code)
}

// TestServedByAPITier checks that `queues api`'s composition serves the console, with its
// headers, beside the API.
func TestServedByAPITier(t *testing.T) {
	ctx := context.Background()
	ddb, err := testservers.DynamoClient(ctx, testservers.DynamoDB(t))
	if err != nil {
		t.Fatal(err)
	}
	table := testservers.TableName("console")
	if err := dynamometa.Migrate(ctx, ddb, table); err != nil {
		t.Fatal(err)
	}
	ring, err := signingkeys.Generate("c1")
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: testservers.Redis(t)})
	defer rdb.Close()
	r, err := stack.New(ctx, stack.Options{Redis: rdb, Dynamo: ddb, Table: table, Keys: ring, OperatorToken: "op",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), SweepEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(r.Handler())
	defer func() { srv.Close(); _ = r.Close() }()
	for path, want := range map[string]string{"/console": `id="view-signin"`, "/console/app.js": "import * as api"} {
		res, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			t.Fatalf("%s: %d %.80s", path, res.StatusCode, body)
		}
		if res.Header.Get("Content-Security-Policy") != console.ContentSecurityPolicy {
			t.Errorf("%s: CSP %q", path, res.Header.Get("Content-Security-Policy"))
		}
	}
	// The API beside it is unchanged: /v1 still wants a token.
	res, err := http.Get(srv.URL + "/v1/queues")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized {
		t.Errorf("/v1/queues without a token: %d", res.StatusCode)
	}
}
