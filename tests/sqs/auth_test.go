package sqs_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// raw sends a JSON 1.0 request signed by the SDK's signer at time at, and answers the status,
// the x-amzn-query-error header and the body.
func (e *env) raw(t *testing.T, key, secret, action, body string, at time.Time) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), "POST", e.b.url+"/", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", "AmazonSQS."+action)
	sum := sha256.Sum256([]byte(body))
	err := v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: key, SecretAccessKey: secret}, req, hex.EncodeToString(sum[:]), "sqs", "ap-south-1", at)
	if err != nil {
		t.Fatal(err)
	}
	return do(t, req)
}

func do(t *testing.T, req *http.Request) (int, string, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("x-amzn-query-error"), string(b)
}

func wantRaw(t *testing.T, status int, qerr, body string, wantStatus int, wantCode string) {
	t.Helper()
	if status != wantStatus || !strings.HasPrefix(qerr, wantCode+";") || !strings.Contains(body, wantCode) {
		t.Fatalf("got %d %q %s, want %d %s", status, qerr, body, wantStatus, wantCode)
	}
}

// TestSignatures: SigV4's failures answer SQS's errors; scopes and revocation apply.
func TestSignatures(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		now := time.Now()
		key, secret := e.token.Slug, e.token.SQSSecretAccessKey
		const list = `{}`
		st, _, body := e.raw(t, key, secret, "ListQueues", list, now)
		if st != 200 {
			t.Fatalf("a good signature: %d %s", st, body)
		}
		wrong := secret[:len(secret)-1] + "x"
		if wrong == secret { // a secret ending in x already (1 in 64)
			wrong = secret[:len(secret)-1] + "y"
		}
		st, q, body := e.raw(t, key, wrong, "ListQueues", list, now)
		wantRaw(t, st, q, body, 403, "SignatureDoesNotMatch")
		if !strings.Contains(body, `"__type":"com.amazon.coral.service#SignatureDoesNotMatch"`) {
			t.Fatalf("body %s", body)
		}
		st, q, body = e.raw(t, "AKIAIOSFODNN7EXAMPLE", secret, "ListQueues", list, now)
		wantRaw(t, st, q, body, 403, "InvalidClientTokenId")
		st, q, body = e.raw(t, key, secret, "ListQueues", list, now.Add(-6*time.Minute))
		wantRaw(t, st, q, body, 403, "SignatureDoesNotMatch")
		st, _, body = e.raw(t, key, secret, "ListQueues", list, now.Add(-4*time.Minute))
		if st != 200 {
			t.Fatalf("4 minutes of skew: %d %s", st, body)
		}
		st, q, body = e.raw(t, key, secret, "Publish", `{"QueueUrl":"x"}`, now)
		wantRaw(t, st, q, body, 400, "InvalidAction")

		// A body changed after signing fails.
		req, _ := http.NewRequestWithContext(t.Context(), "POST", e.b.url+"/sqs", strings.NewReader(list))
		req.Header.Set("Content-Type", "application/x-amz-json-1.0")
		req.Header.Set("X-Amz-Target", "AmazonSQS.ListQueues")
		sum := sha256.Sum256([]byte(list))
		_ = v4.NewSigner().SignHTTP(t.Context(), aws.Credentials{AccessKeyID: key, SecretAccessKey: secret}, req, hex.EncodeToString(sum[:]), "sqs", "us-east-1", now)
		req.Body, req.ContentLength = io.NopCloser(strings.NewReader(`{"QueueNamePrefix":"a"}`)), 23
		st, q, body = do(t, req)
		wantRaw(t, st, q, body, 403, "SignatureDoesNotMatch")

		// Scopes: a read-only token lists but cannot send or create.
		ro := e.newToken(t, []string{"queues:read"})
		roc := e.client(ro.Slug, ro.SQSSecretAccessKey)
		must(roc.ListQueues(t.Context(), &sqs.ListQueuesInput{})).get(t)
		_, err := roc.CreateQueue(t.Context(), &sqs.CreateQueueInput{QueueName: aws.String("nope")})
		wantCode(t, err, "AccessDenied")

		// Revocation: the key pair stops working with the token.
		v1(t, e.b.url, operator, "DELETE", "/v1/projects/"+e.project+"/tokens/"+ro.ID, nil, 204, nil)
		deadline := time.Now().Add(10 * time.Second)
		for {
			_, err = roc.ListQueues(t.Context(), &sqs.ListQueuesInput{})
			if err != nil || time.Now().After(deadline) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		wantCode(t, err, "InvalidClientTokenId")
	})
}

// TestPresignedQuery: a presigned GET in the query protocol, answered in XML.
func TestPresignedQuery(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		must(e.sqs.CreateQueue(t.Context(), &sqs.CreateQueueInput{QueueName: aws.String("pre")})).get(t)
		u := e.b.url + "/sqs/" + e.project + "/pre?" + url.Values{"Action": {"GetQueueAttributes"}, "AttributeName.1": {"QueueArn"}, "Version": {"2012-11-05"}, "X-Amz-Expires": {"60"}}.Encode()
		req, _ := http.NewRequestWithContext(t.Context(), "GET", u, nil)
		sum := sha256.Sum256(nil)
		signed, _, err := v4.NewSigner().PresignHTTP(t.Context(), aws.Credentials{AccessKeyID: e.token.Slug, SecretAccessKey: e.token.SQSSecretAccessKey}, req, hex.EncodeToString(sum[:]), "sqs", "us-west-2", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		get := func(u string) (int, string) {
			req, _ := http.NewRequestWithContext(t.Context(), "GET", u, nil)
			st, _, body := do(t, req)
			return st, body
		}
		st, body := get(signed)
		if st != 200 || !strings.Contains(body, `<GetQueueAttributesResponse xmlns="http://queue.amazonaws.com/doc/2012-11-05/">`) ||
			!strings.Contains(body, "<Name>QueueArn</Name><Value>arn:aws:sqs:us-west-2:"+e.project+":pre</Value>") {
			t.Fatalf("presigned GET: %d %s", st, body)
		}
		st, body = get(strings.Replace(signed, "AttributeName.1=QueueArn", "AttributeName.1=All", 1))
		if st != 403 || !strings.Contains(body, "<Code>SignatureDoesNotMatch</Code>") || !strings.Contains(body, "<ErrorResponse") {
			t.Fatalf("tampered presigned GET: %d %s", st, body)
		}
		// A signed form posted to the queue URL, without QueueUrl (as older SDKs send it).
		form := "Action=SendMessage&Version=2012-11-05&MessageBody=" + url.QueryEscape("a <b> & c") +
			"&MessageAttribute.1.Name=k&MessageAttribute.1.Value.DataType=String&MessageAttribute.1.Value.StringValue=v"
		req, _ = http.NewRequestWithContext(t.Context(), "POST", e.b.url+"/sqs/"+e.project+"/pre", strings.NewReader(form))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
		fsum := sha256.Sum256([]byte(form))
		_ = v4.NewSigner().SignHTTP(t.Context(), aws.Credentials{AccessKeyID: e.token.Slug, SecretAccessKey: e.token.SQSSecretAccessKey}, req, hex.EncodeToString(fsum[:]), "sqs", "us-west-2", time.Now())
		st, _, body = do(t, req)
		if st != 200 || !strings.Contains(body, "<SendMessageResponse") || !strings.Contains(body, "<MD5OfMessageBody>"+md5hex("a <b> & c")+"</MD5OfMessageBody>") ||
			!strings.Contains(body, "<MD5OfMessageAttributes>"+md5OfStringAttr("k", "v")+"</MD5OfMessageAttributes>") {
			t.Fatalf("query SendMessage to the queue URL: %d %s", st, body)
		}
		req, _ = http.NewRequestWithContext(t.Context(), "POST", e.b.url+"/", bytes.NewReader([]byte("Action=ListQueues&Version=2012-11-05")))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		st, _, body = do(t, req)
		if st != 403 || !strings.Contains(body, "<Code>MissingAuthenticationToken</Code>") {
			t.Fatalf("unsigned query request: %d %s", st, body)
		}
	})
}
