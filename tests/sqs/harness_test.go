// Package sqs_test drives the SQS door with the real AWS SDK for Go v2 (JSON 1.0 protocol) and,
// through the nested module tests/sqslegacy, with its last query-protocol release, against
// both ways the service runs: the production stack (services/queues/stack on redis-server and DynamoDB
// Local) and `queues serve` (services/queues/embedded). Cross-door tests send through one door and settle
// through the other.
package sqs_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/redis/go-redis/v9"

	"github.com/queueshq/queues/pkg/meta/dynamometa"
	"github.com/queueshq/queues/pkg/signingkeys"
	"github.com/queueshq/queues/pkg/testservers"
	"github.com/queueshq/queues/services/queues/embedded"
	"github.com/queueshq/queues/services/queues/stack"
)

const operator = "sqs-test-operator"

// backend is one running service.
type backend struct {
	name string
	url  string
}

var backends []backend

// secondReplica is another API replica of the stack backend.
var secondReplica string

func TestMain(m *testing.M) {
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sqs tests: setup:", err)
		code = 1
	}
	testservers.StopAll()
	os.Exit(code)
}

func run(m *testing.M) (int, error) {
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))

	be, err := testservers.StartBackends(ctx, "sqs", dynamometa.Migrate)
	if err != nil {
		return 1, err
	}
	defer be.Stop()
	addr, ddb, table := be.RedisAddr, be.Dynamo, be.Table
	ring, err := signingkeys.Generate("sqs")
	if err != nil {
		return 1, err
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	r, err := stack.New(ctx, stack.Options{Redis: rdb, Dynamo: ddb, Table: table, Keys: ring, OperatorToken: operator, Logger: quiet, SweepEvery: -1})
	if err != nil {
		return 1, err
	}
	defer r.Close()
	stackSrv := httptest.NewServer(r.Handler())
	defer stackSrv.Close()
	// A second replica on the same Redis and table, for what must hold across replicas.
	r2, err := stack.New(ctx, stack.Options{Redis: rdb, Dynamo: ddb, Table: table, Keys: ring, OperatorToken: operator, Logger: quiet, SweepEvery: -1})
	if err != nil {
		return 1, err
	}
	defer r2.Close()
	stackSrv2 := httptest.NewServer(r2.Handler())
	defer stackSrv2.Close()
	secondReplica = stackSrv2.URL

	dir, err := os.MkdirTemp("", "queues-sqs-")
	if err != nil {
		return 1, err
	}
	defer os.RemoveAll(dir)
	n, err := embedded.Open(ctx, embedded.Options{DataDir: dir, OperatorToken: operator, Logger: quiet, SweepEvery: -1})
	if err != nil {
		return 1, err
	}
	defer n.Close()
	serveSrv := httptest.NewServer(n.Handler())
	defer serveSrv.Close()

	backends = []backend{{"stack", stackSrv.URL}, {"serve", serveSrv.URL}}
	return m.Run(), nil
}

// eachBackend runs f once per backend, each with a new project and token.
func eachBackend(t *testing.T, f func(t *testing.T, e *env)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			f(t, newEnv(t, b, []string{"*"}))
		})
	}
}

// env is a project with one token, reached through both doors.
type env struct {
	b       backend
	project string // slug
	token   tokenAnswer
	sqs     *sqs.Client
}

type tokenAnswer struct {
	ID                 string `json:"id"`
	Slug               string `json:"slug"`
	Token              string `json:"token"`
	SQSSecretAccessKey string `json:"sqsSecretAccessKey"`
}

func newEnv(t *testing.T, b backend, scopes []string) *env {
	t.Helper()
	var p struct {
		ID, Slug string
	}
	v1(t, b.url, operator, "POST", "/v1/projects", map[string]any{"name": t.Name()}, 201, &p)
	e := &env{b: b, project: p.Slug}
	e.token = e.newToken(t, scopes)
	e.sqs = e.client(e.token.Slug, e.token.SQSSecretAccessKey)
	return e
}

func (e *env) newToken(t *testing.T, scopes []string) tokenAnswer {
	t.Helper()
	var tok tokenAnswer
	v1(t, e.b.url, operator, "POST", "/v1/projects/"+e.project+"/tokens", map[string]any{"name": "sdk", "scopes": scopes}, 201, &tok)
	if tok.SQSSecretAccessKey == "" {
		t.Fatal("token creation answered no sqsSecretAccessKey")
	}
	return tok
}

// client is the AWS SDK's SQS client for a key pair, on this backend.
func (e *env) client(key, secret string) *sqs.Client {
	return sqs.New(sqs.Options{
		BaseEndpoint: aws.String(e.b.url),
		Region:       "eu-west-3",
		Credentials:  credentials.NewStaticCredentialsProvider(key, secret, ""),
		HTTPClient:   http.DefaultClient,
	})
}

// do is a /v1 call with the project's bearer token.
func (e *env) do(t *testing.T, method, path string, body any, want int, out any) {
	t.Helper()
	v1(t, e.b.url, e.token.Token, method, path, body, want, out)
}

func v1(t *testing.T, base, bearer, method, path string, body any, want int, out any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequestWithContext(t.Context(), method, base+path, rd)
	req.Header.Set("Authorization", "Bearer "+bearer)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s: status %d, want %d: %s", method, path, resp.StatusCode, want, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, data)
		}
	}
}
