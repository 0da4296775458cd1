package attacks

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// sqsKeys creates a project and an all-scopes token in it and answers the project's slug
// and the token's SQS key pair.
func sqsKeys(t *testing.T) (projectSlug, bearer, key, secret string) {
	t.Helper()
	p := call(t, "POST", "/v1/projects", operator, map[string]any{"name": "atk-" + t.Name()})
	p.is(t, 201, "", "")
	id, _ := p.body["id"].(string)
	projectSlug, _ = p.body["slug"].(string)
	tk := call(t, "POST", "/v1/projects/"+id+"/tokens", operator, map[string]any{"name": "all", "scopes": []string{"*"}})
	tk.is(t, 201, "", "")
	bearer, _ = tk.body["token"].(string)
	key, _ = tk.body["slug"].(string)
	secret, _ = tk.body["sqsSecretAccessKey"].(string)
	remember(bearer)
	remember(secret)
	return projectSlug, bearer, key, secret
}

// TestPresignedSQSURLCannotChangeAction (issue 31): a presigned ListQueues URL, as SDKs
// presign (UNSIGNED-PAYLOAD), posted with an unsigned X-Amz-Target naming PurgeQueue and a
// JSON body, must not purge anything (the URL is presigned for POST, so the method matches): the action must come from what was signed.
func TestPresignedSQSURLCannotChangeAction(t *testing.T) {
	slug, bearer, key, secret := sqsKeys(t)
	queueWithMessage(t, bearer, "victim", nil)
	call(t, "POST", "/v1/queues/victim/messages", bearer, map[string]any{"messages": []any{map[string]any{"body": "keep"}}}).is(t, 200, "", "")

	presign := func(query url.Values) string {
		t.Helper()
		query.Set("X-Amz-Expires", "300")
		req, _ := http.NewRequest("POST", e.base+"/?"+query.Encode(), nil)
		u, _, err := v4.NewSigner().PresignHTTP(context.Background(), aws.Credentials{AccessKeyID: key, SecretAccessKey: secret},
			req, "UNSIGNED-PAYLOAD", "sqs", "us-east-1", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	send := func(u, body string, hdr map[string]string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", u, strings.NewReader(body))
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(raw)
	}
	list := presign(url.Values{"Action": {"ListQueues"}, "Version": {"2012-11-05"}})
	// The URL as presigned works.
	if st, body := send(list, "", nil); st != 200 || !strings.Contains(body, "<ListQueuesResponse") {
		t.Fatalf("the presigned URL itself: %d %s", st, body)
	}
	queueURL := e.base + "/sqs/" + slug + "/victim"
	purge := map[string]string{"X-Amz-Target": "AmazonSQS.PurgeQueue", "Content-Type": "application/x-amz-json-1.0"}
	purgeBody := `{"QueueUrl":"` + queueURL + `"}`
	// The attack as seen: the signed query names ListQueues, the unsigned target PurgeQueue.
	if st, body := send(list, purgeBody, purge); st != 400 || !strings.Contains(body, "InvalidAction") {
		t.Errorf("presigned ListQueues + unsigned X-Amz-Target PurgeQueue: %d %s, want 400 InvalidAction", st, body)
	}
	// A presigned URL naming no action: the target and body are still not what was signed.
	bare := presign(url.Values{})
	if st, body := send(bare, purgeBody, purge); st != 403 || !strings.Contains(body, "SignatureDoesNotMatch") {
		t.Errorf("presigned URL + unsigned X-Amz-Target PurgeQueue: %d %s, want 403 SignatureDoesNotMatch", st, body)
	}
	// The query protocol: a form body naming the queue and another action, or the same one.
	form := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
	if st, body := send(list, "Action=PurgeQueue&QueueUrl="+url.QueryEscape(queueURL), form); st != 400 || !strings.Contains(body, "<Code>InvalidAction</Code>") {
		t.Errorf("presigned ListQueues + a form body naming PurgeQueue: %d %s, want 400 InvalidAction", st, body)
	}
	if st, body := send(bare, "Action=PurgeQueue&QueueUrl="+url.QueryEscape(queueURL), form); st != 403 || !strings.Contains(body, "<Code>SignatureDoesNotMatch</Code>") {
		t.Errorf("presigned URL + an unsigned form body: %d %s, want 403 SignatureDoesNotMatch", st, body)
	}
	if st, body := send(list, "QueueNamePrefix=vic", form); st != 403 || !strings.Contains(body, "<Code>SignatureDoesNotMatch</Code>") {
		t.Errorf("presigned ListQueues + unsigned form parameters: %d %s, want 403 SignatureDoesNotMatch", st, body)
	}
	q := call(t, "GET", "/v1/queues/victim", bearer, nil)
	q.is(t, 200, "", "")
	counts, _ := q.body["counts"].(map[string]any)
	if counts["visible"] != 1.0 || counts["inFlight"] != 1.0 {
		t.Fatalf("the queue was changed: counts %v", counts)
	}
}
