package sdkgo

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/openapicheck"
	"github.com/queueshq/queues/pkg/testservers"
	"github.com/queueshq/queues/sdk/go/client"
	"github.com/queueshq/queues/tests/stacktest"
)

// srv is the real API every test in this package talks to: one replica (services/queues/stack) on a
// redis-server and DynamoDB Local started by TestMain. The examples find it through
// QUEUES_URL and QUEUES_TOKEN (a project token with every scope), which TestMain sets.
var srv *stacktest.Server

func TestMain(m *testing.M) {
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "client tests setup:", err)
		code = 1
	}
	testservers.StopAll()
	os.Exit(code)
}

func run(m *testing.M) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var err error
	if srv, err = stacktest.Start(ctx); err != nil {
		return 1, err
	}
	defer srv.Close()
	op, err := client.New(srv.URL, client.WithToken(stacktest.Operator))
	if err != nil {
		return 1, err
	}
	p, err := op.CreateProject(ctx, "examples")
	if err != nil {
		return 1, err
	}
	tok, err := op.CreateToken(ctx, p.ID, client.CreateTokenInput{Name: "examples", Scopes: []string{client.ScopeAll}})
	if err != nil {
		return 1, err
	}
	os.Setenv(client.EnvURL, srv.URL)
	os.Setenv(client.EnvToken, tok.Token)
	return m.Run(), nil
}

// tenant is a fresh project: an operator client, and a client with an every-scope token.
type tenant struct {
	op, c   *client.Client
	project string
}

// checked returns client options whose HTTP traffic chk validates against openapi.yaml.
func checked(chk *openapicheck.Checker) client.Option {
	return client.WithHTTPClient(&http.Client{Transport: chk})
}

func newTenant(t testing.TB, opts ...client.Option) *tenant {
	t.Helper()
	op, err := client.New(srv.URL, append([]client.Option{client.WithToken(stacktest.Operator)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	p, err := op.CreateProject(t.Context(), "tenant "+t.Name())
	if err != nil {
		t.Fatal(err)
	}
	tok, err := op.CreateToken(t.Context(), p.ID, client.CreateTokenInput{Name: "all", Scopes: []string{client.ScopeAll}})
	if err != nil {
		t.Fatal(err)
	}
	return &tenant{op: op, c: op.WithToken(tok.Token), project: p.ID}
}

// token issues a token with scopes in the tenant's project.
func (tn *tenant) token(t testing.TB, scopes ...string) string {
	t.Helper()
	tok, err := tn.op.CreateToken(t.Context(), tn.project, client.CreateTokenInput{Name: "scoped", Scopes: scopes})
	if err != nil {
		t.Fatal(err)
	}
	return tok.Token
}

func (tn *tenant) queue(t testing.TB, in client.CreateQueueInput) *client.Queue {
	t.Helper()
	q, err := tn.c.CreateQueue(t.Context(), in)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func (tn *tenant) send(t testing.TB, queue string, bodies ...string) []string {
	t.Helper()
	var ids []string
	for len(bodies) > 0 {
		n := min(len(bodies), client.MaxSendBatch)
		msgs := make([]client.SendMessage, n)
		for i := range n {
			msgs[i] = client.SendMessage{Body: bodies[i]}
		}
		r, err := tn.c.SendBatch(t.Context(), queue, msgs)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Err(); err != nil {
			t.Fatal(err)
		}
		for _, m := range r.Messages {
			ids = append(ids, m.MessageID)
		}
		bodies = bodies[n:]
	}
	return ids
}

func (tn *tenant) counts(t testing.TB, queue string) client.QueueCounts {
	t.Helper()
	q, err := tn.c.GetQueue(t.Context(), queue)
	if err != nil {
		t.Fatal(err)
	}
	return q.Counts
}

// mustCode fails unless err is an *Error with the code and HTTP status (and field, if not
// empty), and errors.As finds the code's typed error in it.
func mustCode(t testing.TB, err error, code client.Code, status int, field string) *client.Error {
	t.Helper()
	var e *client.Error
	if !errors.As(err, &e) {
		t.Fatalf("want %s error, got %v", code, err)
	}
	if e.Code != code || e.StatusCode != status {
		t.Fatalf("want %s (%d), got %s (%d): %v", code, status, e.Code, e.StatusCode, err)
	}
	if field != "" && e.Field != field {
		t.Fatalf("want field %q, got %q: %v", field, e.Field, err)
	}
	if e.Message == "" {
		t.Fatalf("error without a message: %#v", e)
	}
	if got := typedKind(err); got != typedKinds[code] {
		t.Fatalf("%s: errors.As finds %q, want %q: %v", code, got, typedKinds[code], err)
	}
	return e
}
