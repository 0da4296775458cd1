package dynamometa_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/meta/dynamometa"
	"github.com/queueshq/queues/pkg/testservers"
)

// faultyStore returns a store on a fresh table behind a proxy to DynamoDB Local; fault sees
// each request's operation (X-Amz-Target without the service prefix) and may answer it itself
// by returning true. The SDK does not retry (so that failures answer at once).
func faultyStore(t *testing.T, fault func(op string, w http.ResponseWriter) bool) (*dynamometa.Store, meta.Project) {
	t.Helper()
	c := client(t)
	table := newTable(t, c)
	up, err := url.Parse(testservers.DynamoDB(t))
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(up)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		op := r.Header.Get("X-Amz-Target")
		if i := len("DynamoDB_20120810."); len(op) > i {
			op = op[i:]
		}
		if fault(op, w) {
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	fc := dynamodb.New(c.Options(), func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String(srv.URL)
		o.RetryMaxAttempts = 1
	})
	s := dynamometa.New(fc, table)
	p := meta.Project{ID: ids.New(), Name: "p", CreatedAt: time.Now()}
	if err := dynamometa.New(c, table).CreateProject(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	return s, p
}

func dynamoError(w http.ResponseWriter, typ, body string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.Header().Set("X-Amzn-ErrorType", typ)
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write([]byte(body))
}

const conflictBody = `{"__type":"com.amazonaws.dynamodb.v20120810#TransactionCanceledException","message":"Transaction cancelled, please refer cancellation reasons for specific reasons [None, TransactionConflict, None]","CancellationReasons":[{"Code":"None"},{"Code":"TransactionConflict","Message":"Transaction is ongoing for the item"},{"Code":"None"}]}`

func TestTransactionConflictIsRetried(t *testing.T) {
	var conflicts atomic.Int32
	s, p := faultyStore(t, func(op string, w http.ResponseWriter) bool {
		if op == "TransactWriteItems" && conflicts.Add(1) <= 2 {
			dynamoError(w, "TransactionCanceledException", conflictBody)
			return true
		}
		return false
	})
	q := meta.Queue{ID: ids.New(), ProjectID: p.ID, Name: "q", Type: "standard"}
	if err := s.CreateQueue(t.Context(), q); err != nil {
		t.Fatalf("CreateQueue through two transaction conflicts: %v", err)
	}
	if n := conflicts.Load(); n != 3 {
		t.Fatalf("%d TransactWriteItems calls, want 3 (two conflicts and a success)", n)
	}
	if _, err := s.GetQueueByID(t.Context(), q.ID); err != nil {
		t.Fatalf("queue not stored: %v", err)
	}
}

func TestLastingConflictIsUnavailable(t *testing.T) {
	s, p := faultyStore(t, func(op string, w http.ResponseWriter) bool {
		if op == "TransactWriteItems" {
			dynamoError(w, "TransactionCanceledException", conflictBody)
			return true
		}
		return false
	})
	err := s.CreateQueue(t.Context(), meta.Queue{ID: ids.New(), ProjectID: p.ID, Name: "q", Type: "standard"})
	if apierr.CodeOf(err) != apierr.Unavailable {
		t.Fatalf("CreateQueue under lasting conflicts: %v, want unavailable", err)
	}
}

func TestThrottlingIsUnavailable(t *testing.T) {
	s, p := faultyStore(t, func(op string, w http.ResponseWriter) bool {
		dynamoError(w, "ProvisionedThroughputExceededException",
			`{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException","message":"slow down"}`)
		return true
	})
	_, err := s.GetToken(t.Context(), p.ID, ids.New())
	e := apierr.As(err)
	if e.Code != apierr.Unavailable || e.RetryAfter <= 0 {
		t.Fatalf("GetToken while throttled: %v (retry after %s), want unavailable with a retry-after", err, e.RetryAfter)
	}
	if _, _, err := s.ListQueues(t.Context(), p.ID, "", meta.Page{}); apierr.CodeOf(err) != apierr.Unavailable {
		t.Fatalf("ListQueues while throttled: %v, want unavailable", err)
	}
}

func TestTimeoutIsUnavailable(t *testing.T) {
	release := make(chan struct{})
	s, p := faultyStore(t, func(op string, w http.ResponseWriter) bool {
		if op == "GetItem" {
			<-release
			return true
		}
		return false
	})
	t.Cleanup(func() { close(release) }) // before the server's Close, which waits for handlers
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if _, err := s.GetProject(ctx, p.ID); apierr.CodeOf(err) != apierr.Unavailable {
		t.Fatalf("GetProject past its deadline: %v, want unavailable", err)
	}
}
