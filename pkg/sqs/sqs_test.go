package sqs

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/queueshq/queues/pkg/auth"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/signingkeys"
)

// AWS's documented SigV4 example (an IAM ListUsers GET): the canonical request and the
// signature must come out as AWS computes them.
func TestSignatureAWSExample(t *testing.T) {
	r := httptest.NewRequest("GET", "https://iam.amazonaws.com/?Action=ListUsers&Version=2010-05-08", nil)
	r.Host = "iam.amazonaws.com"
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	r.Header.Set("X-Amz-Date", "20150830T123600Z")
	at, _ := time.Parse(amzDateFmt, "20150830T123600Z")
	s := sigRequest{Date: "20150830", Region: "us-east-1", Service: "iam", AmzDate: at,
		SignedHeaders: []string{"content-type", "host", "x-amz-date"}}
	empty := sha256.Sum256(nil)
	got := s.signature(r, "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", hex.EncodeToString(empty[:]))
	if want := "5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7"; got != want {
		t.Fatalf("signature %s, want %s\ncanonical request:\n%s", got, want, s.canonicalRequest(r, hex.EncodeToString(empty[:])))
	}
}

// noStorage fails the test on any backend call: a bad signature must cost none.
type noStorage struct {
	Backend
	t *testing.T
}

func (n noStorage) TokenProject(context.Context, ids.ID) (ids.ID, error) {
	n.t.Fatal("a storage call before the signature was proven")
	return ids.ID{}, nil
}

func signed(t *testing.T, key, secret, body string, at time.Time) *http.Request {
	r := httptest.NewRequest("POST", "http://queues.test/", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/x-amz-json-1.0")
	r.Header.Set("X-Amz-Target", "AmazonSQS.ListQueues")
	sum := sha256.Sum256([]byte(body))
	if err := v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: key, SecretAccessKey: secret}, r, hex.EncodeToString(sum[:]), "sqs", "eu-north-1", at); err != nil {
		t.Fatal(err)
	}
	return r
}

type bodyReader struct{ *strings.Reader }

func (bodyReader) Close() error { return nil }

func httpBody(s string) bodyReader { return bodyReader{strings.NewReader(s)} }

func TestBadSignaturesCostNoStorage(t *testing.T) {
	ring, _ := signingkeys.Generate("k1")
	a := auth.New(ring, "", time.Now)
	d := New(Config{Backend: noStorage{t: t}, Auth: a})
	tok := ids.New()
	key, secret := tok.Slug(ids.TokenPrefix), a.SQSSecret(tok)
	now := time.Now()
	cases := []struct {
		name string
		r    *http.Request
		code string
	}{
		{"wrong secret", signed(t, key, strings.Repeat("x", 40), "{}", now), "SignatureDoesNotMatch"},
		{"not a token", signed(t, "AKIDEXAMPLE", secret, "{}", now), "InvalidClientTokenId"},
		{"another token's secret", signed(t, ids.New().Slug(ids.TokenPrefix), secret, "{}", now), "SignatureDoesNotMatch"},
		{"too old", signed(t, key, secret, "{}", now.Add(-6*time.Minute)), "SignatureDoesNotMatch"},
		{"too new", signed(t, key, secret, "{}", now.Add(6*time.Minute)), "SignatureDoesNotMatch"},
	}
	tampered := signed(t, key, secret, "{}", now)
	tampered.Body = httpBody(`{"QueueNamePrefix":"x"}`)
	cases = append(cases, struct {
		name string
		r    *http.Request
		code string
	}{"tampered body", tampered, "SignatureDoesNotMatch"})
	unsigned := httptest.NewRequest("POST", "http://queues.test/", strings.NewReader("{}"))
	unsigned.Header.Set("X-Amz-Target", "AmazonSQS.ListQueues")
	cases = append(cases, struct {
		name string
		r    *http.Request
		code string
	}{"unsigned", unsigned, "MissingAuthenticationToken"})
	for _, tc := range cases {
		w := httptest.NewRecorder()
		d.ServeHTTP(w, tc.r)
		var body map[string]string
		_ = json.Unmarshal(w.Body.Bytes(), &body)
		if !strings.HasSuffix(body["__type"], "#"+tc.code) || !strings.HasPrefix(w.Header().Get("x-amzn-query-error"), tc.code+";Sender") {
			t.Errorf("%s: %d %s %q, want %s", tc.name, w.Code, w.Body, w.Header().Get("x-amzn-query-error"), tc.code)
		}
	}
}

func TestQueryToJSON(t *testing.T) {
	form, _ := url.ParseQuery("QueueUrl=http%3A%2F%2Fh%2Fsqs%2Fp%2Fq" +
		"&SendMessageBatchRequestEntry.2.Id=b&SendMessageBatchRequestEntry.2.MessageBody=two" +
		"&SendMessageBatchRequestEntry.1.Id=a&SendMessageBatchRequestEntry.1.MessageBody=one" +
		"&SendMessageBatchRequestEntry.1.MessageAttribute.1.Name=n&SendMessageBatchRequestEntry.1.MessageAttribute.1.Value.DataType=Number" +
		"&SendMessageBatchRequestEntry.1.MessageAttribute.1.Value.StringValue=5" +
		"&SendMessageBatchRequestEntry.1.MessageAttribute.2.Name=b&SendMessageBatchRequestEntry.1.MessageAttribute.2.Value.DataType=Binary" +
		"&SendMessageBatchRequestEntry.1.MessageAttribute.2.Value.BinaryValue=AAE%3D" +
		"&SendMessageBatchRequestEntry.10.Id=j&SendMessageBatchRequestEntry.10.MessageBody=ten" +
		"&Attribute.1.Name=VisibilityTimeout&Attribute.1.Value=5&Tag.1.Key=k&Tag.1.Value=v&AttributeName.2=B&AttributeName.1=A")
	b, err := queryToJSON(form)
	if err != nil {
		t.Fatal(err)
	}
	var in struct {
		QueueURL       string            `json:"QueueUrl"`
		Entries        []sendEntry       `json:"Entries"`
		Attributes     map[string]string `json:"Attributes"`
		Tags           map[string]string `json:"Tags"`
		AttributeNames []string          `json:"AttributeNames"`
	}
	if err := json.Unmarshal(b, &in); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	if in.QueueURL != "http://h/sqs/p/q" || len(in.Entries) != 3 || in.Entries[0].ID != "a" || in.Entries[1].ID != "b" || in.Entries[2].ID != "j" ||
		in.Attributes["VisibilityTimeout"] != "5" || in.Tags["k"] != "v" || strings.Join(in.AttributeNames, ",") != "A,B" {
		t.Fatalf("decoded %+v from %s", in, b)
	}
	ma := in.Entries[0].MessageAttributes
	if deref(ma["n"].StringValue) != "5" || ma["n"].DataType != "Number" || !bytes.Equal(ma["b"].BinaryValue, []byte{0, 1}) {
		t.Fatalf("message attributes %+v", ma)
	}
	for _, bad := range []string{"A..B=1", "Attribute.1.Value=x"} {
		f, _ := url.ParseQuery(bad)
		if _, err := queryToJSON(f); err == nil {
			t.Errorf("%q was accepted", bad)
		}
	}
}

// The MD5 of message attributes, against a digest written out by hand from AWS's algorithm.
func TestMD5OfAttributes(t *testing.T) {
	s := "v"
	attrs := map[string]attrValue{"b": {DataType: "Binary", BinaryValue: []byte{1, 2}}, "a": {DataType: "String", StringValue: &s}}
	var want bytes.Buffer
	put := func(b []byte) {
		want.Write([]byte{0, 0, 0, byte(len(b))})
		want.Write(b)
	}
	put([]byte("a"))
	put([]byte("String"))
	want.WriteByte(1)
	put([]byte("v"))
	put([]byte("b"))
	put([]byte("Binary"))
	want.WriteByte(2)
	put([]byte{1, 2})
	if got := md5OfAttributes(attrs); got != md5Hex(want.String()) {
		t.Fatalf("md5 %s, want %s", got, md5Hex(want.String()))
	}
	if md5OfAttributes(nil) != "" {
		t.Fatal("no attributes must have no digest")
	}
}

// Attributes of every type survive the string encoding, and /v1 strings read as Strings.
func TestAttributeEncodingRoundTrip(t *testing.T) {
	n, s := "1.5", "x"
	in := map[string]attrValue{
		"num": {DataType: "Number.float", StringValue: &n}, "str": {DataType: "String", StringValue: &s},
		"bin": {DataType: "Binary.raw", BinaryValue: []byte{0, 0xff}},
	}
	stored := encodeAttributes(in, "d", "trace")
	if stored["bin"] != "AP8=" || stored["num"] != "1.5" || stored[dedupAttr] != "d" {
		t.Fatalf("stored %v", stored)
	}
	out := decodeAttributes(stored)
	if md5OfAttributes(out.user) != md5OfAttributes(in) || out.dedupID != "d" || out.trace != "trace" {
		t.Fatalf("decoded %+v", out)
	}
	plain := decodeAttributes(map[string]string{"k": "v"})
	if plain.user["k"].DataType != "String" || deref(plain.user["k"].StringValue) != "v" {
		t.Fatalf("a /v1 attribute decoded as %+v", plain.user["k"])
	}
}

func TestSelectAttributes(t *testing.T) {
	v := "1"
	attrs := map[string]attrValue{"a.x": {DataType: "String", StringValue: &v}, "a.y": {DataType: "String", StringValue: &v}, "b": {DataType: "String", StringValue: &v}, "ab": {DataType: "String", StringValue: &v}}
	for names, want := range map[string]int{"All": 4, ".*": 4, "*": 4, "a.*": 3, "a.x.*": 1, "b": 1, "c": 0, "a.*,b": 4, "a": 0} {
		if got := len(selectAttributes(attrs, strings.Split(names, ","))); got != want {
			t.Errorf("%s selected %d, want %d", names, got, want)
		}
	}
}

// TestMalformedParameters: a query parameter of the wrong shape fails with an AWS-style error
// naming it (and the value, for integers); empty lists are empty.
func TestMalformedParameters(t *testing.T) {
	for q, want := range map[string]string{
		"MaxNumberOfMessages=abc": "Value abc for parameter MaxNumberOfMessages is invalid. Reason: Must be an integer.",
		"QueueUrl.1=x":            "Value for parameter QueueUrl is invalid. Reason: Must be a string.",
		"SendMessageBatchRequestEntry.1.Id=a&SendMessageBatchRequestEntry.1.DelaySeconds=x": "Value x for parameter SendMessageBatchRequestEntry.N.DelaySeconds is invalid. Reason: Must be an integer.",
		"AttributeName=&MessageAttributeName=&SendMessageBatchRequestEntry=":                "",
	} {
		form, _ := url.ParseQuery(q)
		b, qerr := queryToJSON(form)
		if qerr != nil {
			t.Fatalf("%s: %v", q, qerr)
		}
		var in struct {
			receiveInput
			Entries []sendEntry `json:"Entries"`
		}
		c := &call{proto: protoQuery, action: "SendMessageBatch", input: b}
		got := ""
		if e := c.inputInto(&in); e != nil {
			got = e.Message
			if e.Name != errInvalidParameter.name {
				t.Errorf("%s: %s", q, e.Name)
			}
		}
		if got != want {
			t.Errorf("%s: %q, want %q", q, got, want)
		}
	}
}
