package sdkgo

import (
	"errors"
	"fmt"
	"testing"

	"github.com/queueshq/queues/pkg/openapicheck"
	"github.com/queueshq/queues/sdk/go/client"
)

// Real error answers of the service come back as their family's typed error (the concrete
// type a call returns), which is also the *Error of before.
func TestTypedErrorsFromTheService(t *testing.T) {
	ctx := t.Context()
	tn := newTenant(t, client.WithRetry(client.RetryPolicy{MaxAttempts: 1}))
	c := tn.c
	tn.queue(t, client.CreateQueueInput{Name: "typed"})

	_, err := c.GetQueue(ctx, "no-such-queue")
	var nf *client.NotFoundError
	if !errors.As(err, &nf) || fmt.Sprintf("%T", err) != "*client.NotFoundError" || nf.StatusCode != 404 || nf.Message == "" {
		t.Fatalf("404: %T %v", err, err)
	}

	_, err = c.CreateQueue(ctx, client.CreateQueueInput{Name: "typed"})
	var conflict *client.ConflictError
	if !errors.As(err, &conflict) || conflict.Code != client.CodeQueueExists || !errors.Is(err, client.ErrQueueExists) {
		t.Fatalf("409: %T %v", err, err)
	}

	if _, err := c.PurgeQueue(ctx, "typed"); err != nil {
		t.Fatal(err)
	}
	_, err = c.PurgeQueue(ctx, "typed")
	var limited *client.RateLimitedError
	if !errors.As(err, &limited) || limited.StatusCode != 429 || limited.RetryAfter <= 0 || !client.IsTemporary(err) {
		t.Fatalf("429: %T %v", err, err)
	}

	tn.send(t, "typed", "x")
	msgs, err := c.Receive(ctx, "typed", client.ReceiveInput{WaitSeconds: client.Int(5)})
	if err != nil || len(msgs) != 1 {
		t.Fatal(msgs, err)
	}
	if err := c.Ack(ctx, msgs[0].ReceiptHandle); err != nil {
		t.Fatal(err)
	}
	err = c.Ack(ctx, msgs[0].ReceiptHandle)
	var stale *client.StaleReceiptError
	if !errors.As(err, &stale) || !client.IsStale(err) {
		t.Fatalf("410: %T %v", err, err)
	}

	reader, err := client.New(srv.URL, client.WithToken(tn.token(t, client.ScopeQueuesRead)))
	if err != nil {
		t.Fatal(err)
	}
	_, err = reader.Send(ctx, "typed", client.SendMessage{Body: "y"})
	var forbidden *client.ForbiddenError
	var auth *client.AuthError
	if !errors.As(err, &forbidden) || !errors.As(err, &auth) || auth.Code != client.CodePermissionDenied {
		t.Fatalf("403: %T %v", err, err)
	}
}

// typedKinds is the typed error each code comes back as; mustCode checks every error answer
// the tests meet against it.
var typedKinds = map[client.Code]string{
	client.CodeInvalidArgument: "ValidationError", client.CodePayloadTooLarge: "ValidationError",
	client.CodeUnsupportedMediaType: "ValidationError", client.CodeMethodNotAllowed: "ValidationError",
	client.CodeVisibilityLimitExceeded: "ValidationError", client.CodeReceiptHandleInvalid: "InvalidReceiptError",
	client.CodeUnauthenticated: "AuthError", client.CodePermissionDenied: "ForbiddenError",
	client.CodeQuotaExceeded: "QuotaExceededError", client.CodeNotFound: "NotFoundError",
	client.CodeQueueExists: "ConflictError", client.CodeQueueInUse: "ConflictError",
	client.CodeSubscriptionExists: "ConflictError", client.CodeMessageInFlight: "ConflictError",
	client.CodeMoveTaskRunning: "ConflictError", client.CodeTopicExists: "ConflictError",
	client.CodeBindingExists: "ConflictError", client.CodeGroupNotParked: "ConflictError", client.CodeReceiptHandleStale: "StaleReceiptError",
	client.CodeRateLimited: "RateLimitedError", client.CodePurgeTooSoon: "RateLimitedError",
	client.CodeUnavailable: "UnavailableError", client.CodeInternal: "InternalError",
}

// typedKind names the most specific typed error errors.As finds in err ("" for none).
func typedKind(err error) string {
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
	for _, k := range []struct {
		name   string
		target any
	}{
		{"ForbiddenError", &forbidden}, {"AuthError", &auth}, {"InvalidReceiptError", &receipt},
		{"ValidationError", &invalid}, {"NotFoundError", &notFound}, {"ConflictError", &conflict},
		{"StaleReceiptError", &stale}, {"QuotaExceededError", &quota}, {"RateLimitedError", &limited},
		{"UnavailableError", &down}, {"InternalError", &internal},
	} {
		if errors.As(err, k.target) {
			return k.name
		}
	}
	return ""
}

// Every code of openapi.yaml's ErrorCode has its typed error (a new code fails here until
// it is given a family, in the SDK and in typedKinds).
func TestEveryCodeHasATypedError(t *testing.T) {
	codes := openapicheck.LoadSpec(t).Components.Schemas["ErrorCode"]
	if codes == nil || codes.Value == nil || len(codes.Value.Enum) == 0 {
		t.Fatal("openapi.yaml has no ErrorCode enum")
	}
	for _, v := range codes.Value.Enum {
		code := client.Code(fmt.Sprint(v))
		want, ok := typedKinds[code]
		if !ok {
			t.Errorf("%s: no typed error", code)
			continue
		}
		if got := typedKind(&client.Error{Code: code}); got != want {
			t.Errorf("%s: errors.As finds %q, want %q", code, got, want)
		}
	}
}
