package sqs

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/auth"
	"github.com/queueshq/queues/pkg/signingkeys"
)

// FuzzQueryToJSON: any form rebuilds into JSON or fails with an SQS error, never a panic.
func FuzzQueryToJSON(f *testing.F) {
	f.Add("Attribute.1.Name=VisibilityTimeout&Attribute.1.Value=5")
	f.Add("SendMessageBatchRequestEntry.1.Id=a&SendMessageBatchRequestEntry.1.MessageAttribute.1.Name=n&SendMessageBatchRequestEntry.1.MessageAttribute.1.Value.StringValue=1")
	f.Add("A.1=x&A.1.B=y&A.0=z&Tag.2.Value=v")
	// Empty lists and maps as botocore and aws-sdk-go send them, and malformed values.
	f.Add("AttributeName=&MessageAttributeName=&MessageSystemAttributeName=&QueueUrl=q")
	f.Add("TagKey=&Tag=&Attribute=")
	f.Add("SendMessageBatchRequestEntry=&DeleteMessageBatchRequestEntry.1.Id=a&DeleteMessageBatchRequestEntry.1.ReceiptHandle=")
	f.Add("SendMessageBatchRequestEntry.1.Id=a&SendMessageBatchRequestEntry.1.MessageAttribute=&SendMessageBatchRequestEntry.1.DelaySeconds=x")
	f.Add("MaxNumberOfMessages=abc&WaitTimeSeconds=&QueueUrl.1=x&AttributeName=All")
	f.Add("SendMessageBatchRequestEntry.1.MessageAttribute.1.Name=n&SendMessageBatchRequestEntry.1.MessageAttribute.1.Value.BinaryValue=%21%21")
	f.Fuzz(func(t *testing.T, q string) {
		form, err := url.ParseQuery(q)
		if err != nil {
			return
		}
		b, qerr := queryToJSON(form)
		if qerr == nil && len(b) == 0 {
			t.Fatal("no document and no error")
		}
		if qerr != nil {
			return
		}
		// Whatever the document holds, decoding it into any action's input fails, if it
		// fails, with an SQS error in AWS's words, never the decoder's.
		for _, in := range []any{&receiveInput{}, &struct{ Entries []sendEntry }{}, &struct{ Entries []settleEntry }{},
			&struct{ TagKeys []string }{}, &struct{ Attributes, Tags map[string]string }{}} {
			c := &call{proto: protoQuery, action: "SendMessageBatch", input: b}
			if e := c.inputInto(in); e != nil && (e.Status != 400 || decoderText.MatchString(e.Message)) {
				t.Fatalf("%s: %d %s", b, e.Status, e.Message)
			}
		}
	})
}

// decoderText matches Go's own decoder errors, which no answer may carry.
var decoderText = regexp.MustCompile(`json:|Go (struct|value)|strconv|unmarshal|illegal base64`)

// FuzzParseAuthorization: the header and presigned parsers take any input.
func FuzzParseAuthorization(f *testing.F) {
	f.Add("AWS4-HMAC-SHA256 Credential=tok_x/20260101/us-east-1/sqs/aws4_request, SignedHeaders=host;x-amz-date, Signature=abcd")
	f.Add("AWS4-HMAC-SHA256 Credential=/a/b/c/d,SignedHeaders=,Signature=")
	f.Add("X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=k%2F20260101%2Fr%2Fsqs%2Faws4_request&X-Amz-Date=20260101T000000Z&X-Amz-SignedHeaders=host&X-Amz-Signature=00&X-Amz-Expires=60")
	f.Fuzz(func(t *testing.T, s string) {
		if sr, err := parseAuthorization(s); err == nil && (sr.AccessKey == "" || len(sr.SignedHeaders) == 0) {
			t.Fatalf("accepted %q without a key or signed headers", s)
		}
		if q, err := url.ParseQuery(s); err == nil {
			if sr, err := parsePresigned(q); err == nil && (sr.Expires <= 0 || sr.AmzDate.IsZero()) {
				t.Fatalf("accepted a presigned form without expiry or date: %q", s)
			}
		}
	})
}

// FuzzServe: whatever arrives, the door answers an SQS error of the caller (it cannot get
// past the signature) and touches no storage.
func FuzzServe(f *testing.F) {
	f.Add("POST", "/", "AmazonSQS.SendMessage", "application/x-amz-json-1.0", `{"QueueUrl":"x"}`, "AWS4-HMAC-SHA256 Credential=tok_06h35srrtnt858zk9g21j10xwm/20260101/r/sqs/aws4_request, SignedHeaders=host, Signature=00")
	f.Add("POST", "/sqs/prj_x/q", "", "application/x-www-form-urlencoded", "Action=ListQueues&Attribute.1.Name=x", "")
	f.Add("GET", "/?Action=GetQueueUrl&X-Amz-Signature=1&X-Amz-Algorithm=AWS4-HMAC-SHA256", "", "", "", "")
	ring, _ := signingkeys.Generate("k1")
	d := New(Config{Backend: noStorage{}, Auth: auth.New(ring, "", time.Now)})
	f.Fuzz(func(t *testing.T, method, path, target, ct, body, authz string) {
		if method != "GET" {
			method = "POST"
		}
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		r, err := http.NewRequest(method, "http://queues.test"+path, strings.NewReader(body))
		if err != nil {
			return
		}
		r.Header.Set("X-Amz-Target", target)
		r.Header.Set("Content-Type", ct)
		r.Header.Set("Authorization", authz)
		r.Header.Set("X-Amz-Date", time.Now().UTC().Format(amzDateFmt))
		w := httptest.NewRecorder()
		d.ServeHTTP(w, r)
		if w.Code < 400 || w.Code >= 500 || w.Header().Get("x-amzn-query-error") == "" {
			t.Fatalf("answered %d %q: %s", w.Code, w.Header().Get("x-amzn-query-error"), w.Body)
		}
	})
}
