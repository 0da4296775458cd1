package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/queueshq/queues/sdk/go/client"
)

// fakeErrors answers GET /<status>/<code> with that status and code (a code "-" answers a
// body that is not the API's, as a proxy would), with Retry-After 7 and a request id.
func fakeErrors(t *testing.T) *client.Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
		status, _ := strconv.Atoi(parts[0])
		w.Header().Set("Retry-After", "7")
		w.Header().Set("X-Request-Id", "req-"+parts[1])
		w.WriteHeader(status)
		if parts[1] == "-" {
			_, _ = w.Write([]byte("<html>proxy</html>"))
			return
		}
		fmt.Fprintf(w, `{"error":{"code":%q,"message":"m","details":{"field":"f","limit":"maxQueues"}}}`, parts[1])
	}))
	t.Cleanup(srv.Close)
	c, err := client.New(srv.URL, client.WithRetry(client.RetryPolicy{MaxAttempts: 1}))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// kind names the typed error errors.As finds in err ("" for none), trying the child types
// before their parents.
func kind(err error) string {
	var (
		forbidden *client.ForbiddenError
		auth      *client.AuthError
		receipt   *client.InvalidReceiptError
		invalid   *client.ValidationError
		notFound  *client.NotFoundError
		conflict  *client.ConflictError
		stale     *client.StaleReceiptError
		quota     *client.QuotaExceededError
		limited   *client.RateLimitedError
		down      *client.UnavailableError
		internal  *client.InternalError
	)
	switch {
	case errors.As(err, &forbidden):
		return "ForbiddenError"
	case errors.As(err, &auth):
		return "AuthError"
	case errors.As(err, &receipt):
		return "InvalidReceiptError"
	case errors.As(err, &invalid):
		return "ValidationError"
	case errors.As(err, &notFound):
		return "NotFoundError"
	case errors.As(err, &conflict):
		return "ConflictError"
	case errors.As(err, &stale):
		return "StaleReceiptError"
	case errors.As(err, &quota):
		return "QuotaExceededError"
	case errors.As(err, &limited):
		return "RateLimitedError"
	case errors.As(err, &down):
		return "UnavailableError"
	case errors.As(err, &internal):
		return "InternalError"
	}
	return ""
}

// Each code's answer is returned as its family's typed error, which still is (and unwraps
// to) the *Error with every decoded field, for errors.As, errors.Is and the Is… helpers.
func TestTypedErrors(t *testing.T) {
	c := fakeErrors(t)
	for _, tc := range []struct {
		status int
		code   client.Code
		want   string
	}{
		{400, client.CodeInvalidArgument, "ValidationError"},
		{413, client.CodePayloadTooLarge, "ValidationError"},
		{415, client.CodeUnsupportedMediaType, "ValidationError"},
		{405, client.CodeMethodNotAllowed, "ValidationError"},
		{400, client.CodeVisibilityLimitExceeded, "ValidationError"},
		{400, client.CodeReceiptHandleInvalid, "InvalidReceiptError"},
		{401, client.CodeUnauthenticated, "AuthError"},
		{403, client.CodePermissionDenied, "ForbiddenError"},
		{403, client.CodeQuotaExceeded, "QuotaExceededError"},
		{404, client.CodeNotFound, "NotFoundError"},
		{409, client.CodeQueueExists, "ConflictError"},
		{409, client.CodeQueueInUse, "ConflictError"},
		{409, client.CodeSubscriptionExists, "ConflictError"},
		{409, client.CodeMessageInFlight, "ConflictError"},
		{409, client.CodeMoveTaskRunning, "ConflictError"},
		{409, client.CodeTopicExists, "ConflictError"},
		{409, client.CodeBindingExists, "ConflictError"},
		{410, client.CodeReceiptHandleStale, "StaleReceiptError"},
		{429, client.CodeRateLimited, "RateLimitedError"},
		{429, client.CodePurgeTooSoon, "RateLimitedError"},
		{503, client.CodeUnavailable, "UnavailableError"},
		{500, client.CodeInternal, "InternalError"},
		// Codes this SDK does not know: classed by status; none for a status of no family.
		{404, "gone_fishing", "NotFoundError"},
		{507, "insufficient_storage", "InternalError"},
		{418, "teapot", ""},
		// Answers without the API's body: the code comes from the status.
		{502, "-", "UnavailableError"},
		{401, "-", "AuthError"},
	} {
		t.Run(fmt.Sprintf("%d_%s", tc.status, tc.code), func(t *testing.T) {
			err := c.Do(context.Background(), http.MethodGet, fmt.Sprintf("/%d/%s", tc.status, tc.code), nil, nil, nil)
			if got := kind(err); got != tc.want {
				t.Fatalf("%T %v: errors.As finds %q, want %q", err, err, got, tc.want)
			}
			if tc.want != "" && fmt.Sprintf("%T", err) != "*client."+tc.want {
				t.Fatalf("returned %T, want *client.%s", err, tc.want)
			}
			var e *client.Error
			if !errors.As(err, &e) || e.StatusCode != tc.status || e.RequestID != "req-"+string(tc.code) || e.RetryAfter != 7*time.Second {
				t.Fatalf("errors.As *Error: %#v", e)
			}
			if !errors.Is(err, &client.Error{Code: e.Code}) || client.CodeOf(err) != e.Code {
				t.Fatalf("errors.Is / CodeOf by code %s: %v", e.Code, err)
			}
		})
	}
}

// A typed error reads as its *Error does, and a parent type finds its child's error.
func TestTypedErrorFields(t *testing.T) {
	c := fakeErrors(t)
	err := c.Do(context.Background(), http.MethodGet, "/403/quota_exceeded", nil, nil, nil)
	var q *client.QuotaExceededError
	if !errors.As(err, &q) || q.Limit() != "maxQueues" || q.Field != "f" || q.Code != client.CodeQuotaExceeded ||
		!client.IsQuotaExceeded(err) || client.QuotaLimit(err) != "maxQueues" || !errors.Is(err, client.ErrQuotaExceeded) {
		t.Fatalf("quota_exceeded: %#v", q)
	}
	if err.Error() != "queues: quota_exceeded (403): m [f]" {
		t.Fatalf("message %q", err.Error())
	}
	var auth *client.AuthError
	if errors.As(err, &auth) {
		t.Fatal("a quota_exceeded 403 is no AuthError")
	}
	err = c.Do(context.Background(), http.MethodGet, "/403/permission_denied", nil, nil, nil)
	if !errors.As(err, &auth) || auth.Code != client.CodePermissionDenied || !client.IsAuth(err) {
		t.Fatalf("a ForbiddenError is an AuthError: %v", err)
	}
	err = c.Do(context.Background(), http.MethodGet, "/404/not_found", nil, nil, nil)
	var nf *client.NotFoundError
	if !errors.As(fmt.Errorf("wrapped: %w", err), &nf) || !client.IsNotFound(err) || !errors.Is(err, client.ErrNotFound) ||
		errors.Is(err, client.ErrStale) {
		t.Fatalf("not_found through a wrap: %v", err)
	}
	// A bare *Error (as a FailedMessage carries) is found as its typed error too.
	var st *client.StaleReceiptError
	bare := &client.Error{Code: client.CodeReceiptHandleStale, StatusCode: 410}
	if !errors.As(error(bare), &st) || st.Code != client.CodeReceiptHandleStale || errors.As(error(bare), &nf) {
		t.Fatalf("bare stale *Error: %#v", st)
	}
}
