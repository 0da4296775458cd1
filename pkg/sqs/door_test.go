package sqs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/auth"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/signingkeys"
)

// fakeBackend knows one live token of one project with every scope and answers the few
// operations these tests reach; anything else panics (the embedded nil interface).
type fakeBackend struct {
	Backend
	project, token ids.ID
	revoked        ids.ID // known, of the project, but revoked
	mu             sync.Mutex
	calls          []string
}

func newFake() *fakeBackend {
	return &fakeBackend{project: ids.New(), token: ids.New(), revoked: ids.New()}
}

func (f *fakeBackend) record(s string) {
	f.mu.Lock()
	f.calls = append(f.calls, s)
	f.mu.Unlock()
}

func (f *fakeBackend) called(s string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.calls {
		if c == s {
			return true
		}
	}
	return false
}

func (f *fakeBackend) TokenProject(_ context.Context, tok ids.ID) (ids.ID, error) {
	f.record("TokenProject")
	if tok != f.token && tok != f.revoked {
		return ids.ID{}, apierr.New(apierr.NotFound, "no such token")
	}
	return f.project, nil
}

func (f *fakeBackend) TokenPrincipal(_ context.Context, project, tok ids.ID) (auth.Principal, error) {
	if tok == f.revoked {
		return auth.Principal{}, apierr.New(apierr.Unauthenticated, "the token was revoked")
	}
	return auth.Principal{ProjectID: project, TokenID: tok, Scopes: []string{"*"}}, nil
}

func (f *fakeBackend) Admit(context.Context, ids.ID) error { return nil }

func (f *fakeBackend) ListQueues(context.Context, ids.ID, string, meta.Page) ([]meta.Queue, string, error) {
	f.record("ListQueues")
	return nil, "", nil
}

func (f *fakeBackend) LookupQueue(_ context.Context, project ids.ID, ref string) (meta.Queue, error) {
	return meta.Queue{ID: ids.New(), ProjectID: project, Name: ref, Type: "standard"}, nil
}

func (f *fakeBackend) Purge(context.Context, meta.Queue) error {
	f.record("Purge")
	return nil
}

// testDoor is a door on the fake backend, with the token's key pair.
func testDoor(t *testing.T) (d *Door, f *fakeBackend, key, secret string) {
	t.Helper()
	ring, err := signingkeys.Generate("k1")
	if err != nil {
		t.Fatal(err)
	}
	a := auth.New(ring, "", time.Now)
	f = newFake()
	return New(Config{Backend: f, Auth: a}), f, f.token.Slug(ids.TokenPrefix), a.SQSSecret(f.token)
}

// signAs signs r in the header form with the given signed headers, as a client free to
// choose them would (the SDKs always sign host and every X-Amz-* header).
func signAs(r *http.Request, key, secret, body string, signed []string, at time.Time) {
	sum := sha256.Sum256([]byte(body))
	r.Header.Set("X-Amz-Date", at.UTC().Format(amzDateFmt))
	s := sigRequest{AccessKey: key, Date: at.UTC().Format("20060102"), Region: "eu-north-1", Service: serviceName,
		SignedHeaders: signed, AmzDate: at.UTC().Truncate(time.Second)}
	sig := s.signature(r, secret, hex.EncodeToString(sum[:]))
	r.Header.Set("Authorization", fmt.Sprintf("%s Credential=%s/%s/%s/%s/aws4_request, SignedHeaders=%s, Signature=%s",
		sigAlgorithm, key, s.Date, s.Region, s.Service, strings.Join(signed, ";"), sig))
}

func jsonRequest(target, body string) *http.Request {
	r := httptest.NewRequest("POST", "http://queues.test/", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/x-amz-json-1.0")
	r.Header.Set("X-Amz-Target", "AmazonSQS."+target)
	return r
}

// serveCode serves r and answers the status and the error code in either protocol's shape.
func serveCode(d *Door, r *http.Request) (int, string, string) {
	w := httptest.NewRecorder()
	d.ServeHTTP(w, r)
	code, _, _ := strings.Cut(w.Header().Get("x-amzn-query-error"), ";")
	if code == "" {
		if _, rest, ok := strings.Cut(w.Body.String(), "<Code>"); ok {
			code, _, _ = strings.Cut(rest, "</Code>")
		}
	}
	return w.Code, code, w.Body.String()
}

// TestSignatureCoversActionAndHost (issue 31): SigV4 must cover the action and the host. A
// header signature that leaves out host or X-Amz-Target is incomplete; a presigned request
// with UNSIGNED-PAYLOAD may carry no body and no unsigned X-Amz-Target; two actions named
// are refused.
func TestSignatureCoversActionAndHost(t *testing.T) {
	d, f, key, secret := testDoor(t)
	now := time.Now()
	sdkSigned := func(r *http.Request, body string) *http.Request {
		sum := sha256.Sum256([]byte(body))
		if err := v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: key, SecretAccessKey: secret}, r, hex.EncodeToString(sum[:]), "sqs", "eu-north-1", now); err != nil {
			t.Fatal(err)
		}
		return r
	}
	presigned := func(query url.Values, unsigned bool) string {
		r := httptest.NewRequest("POST", "http://queues.test/?"+query.Encode(), nil)
		hash := "UNSIGNED-PAYLOAD"
		if !unsigned {
			sum := sha256.Sum256(nil)
			hash = hex.EncodeToString(sum[:])
		}
		u, _, err := v4.NewSigner().PresignHTTP(context.Background(), aws.Credentials{AccessKeyID: key, SecretAccessKey: secret}, r, hash, "sqs", "eu-north-1", now)
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	post := func(u, body string, hdr ...string) *http.Request {
		r := httptest.NewRequest("POST", u, strings.NewReader(body))
		for i := 0; i+1 < len(hdr); i += 2 {
			r.Header.Set(hdr[i], hdr[i+1])
		}
		return r
	}
	list := url.Values{"Action": {"ListQueues"}, "Version": {"2012-11-05"}}

	noHost := jsonRequest("ListQueues", "{}")
	signAs(noHost, key, secret, "{}", []string{"content-type", "x-amz-date", "x-amz-target"}, now)
	noTarget := jsonRequest("PurgeQueue", `{"QueueUrl":"q"}`)
	signAs(noTarget, key, secret, `{"QueueUrl":"q"}`, []string{"content-type", "host", "x-amz-date"}, now)
	queryNoHost := post("http://queues.test/", "Action=ListQueues&Version=2012-11-05", "Content-Type", "application/x-www-form-urlencoded")
	signAs(queryNoHost, key, secret, "Action=ListQueues&Version=2012-11-05", []string{"content-type", "x-amz-date"}, now)
	both := httptest.NewRequest("POST", "http://queues.test/?Action=PurgeQueue", strings.NewReader("{}"))
	both.Header.Set("X-Amz-Target", "AmazonSQS.ListQueues")
	sdkSigned(both, "{}")

	cases := []struct {
		name   string
		r      *http.Request
		status int
		code   string
	}{
		{"SDK-signed JSON", sdkSigned(jsonRequest("ListQueues", "{}"), "{}"), 200, ""},
		{"header signature without host", noHost, 400, "IncompleteSignature"},
		{"header signature without x-amz-target", noTarget, 400, "IncompleteSignature"},
		{"query protocol, header signature without host (XML)", queryNoHost, 400, "IncompleteSignature"},
		{"query Action and X-Amz-Target differ", both, 400, "InvalidAction"},
		{"presigned, empty body", post(presigned(list, true), ""), 200, ""},
		{"presigned, signed empty payload", post(presigned(list, false), ""), 200, ""},
		{"presigned + unsigned X-Amz-Target and body", post(presigned(url.Values{}, true), `{"QueueUrl":"q"}`,
			"X-Amz-Target", "AmazonSQS.PurgeQueue", "Content-Type", "application/x-amz-json-1.0"), 403, "SignatureDoesNotMatch"},
		{"presigned + unsigned X-Amz-Target, no body", post(presigned(url.Values{}, true), "",
			"X-Amz-Target", "AmazonSQS.PurgeQueue"), 403, "SignatureDoesNotMatch"},
		{"presigned ListQueues + X-Amz-Target PurgeQueue", post(presigned(list, true), `{"QueueUrl":"q"}`,
			"X-Amz-Target", "AmazonSQS.PurgeQueue"), 400, "InvalidAction"},
		{"presigned + unsigned form body", post(presigned(list, true), "QueueNamePrefix=x",
			"Content-Type", "application/x-www-form-urlencoded"), 403, "SignatureDoesNotMatch"},
	}
	for _, tc := range cases {
		st, code, body := serveCode(d, tc.r)
		if st != tc.status || code != tc.code {
			t.Errorf("%s: %d %q %s, want %d %q", tc.name, st, code, body, tc.status, tc.code)
		}
	}
	if f.called("Purge") {
		t.Fatal("a request whose action was not signed purged a queue")
	}
}

// countingBody is a request body that counts the bytes read from it.
type countingBody struct {
	r io.Reader
	n int
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.n += n
	return n, err
}

func (b *countingBody) Close() error { return nil }

// TestLargeBodyNeedsLiveToken (issue 31): the door reads at most 64 KiB of a body before
// authentication; more is read only once the access key names a live token.
func TestLargeBodyNeedsLiveToken(t *testing.T) {
	d, f, key, secret := testDoor(t)
	now := time.Now()
	big := `{"QueueNamePrefix":"x","Padding":"` + strings.Repeat("p", 1<<20) + `"}`
	request := func(key, secret, body string) (*http.Request, *countingBody) {
		r := jsonRequest("ListQueues", body)
		sum := sha256.Sum256([]byte(body))
		if err := v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: key, SecretAccessKey: secret}, r, hex.EncodeToString(sum[:]), "sqs", "eu-north-1", now); err != nil {
			t.Fatal(err)
		}
		cb := &countingBody{r: strings.NewReader(body)}
		r.Body = cb
		return r, cb
	}
	a := d.cfg.Auth
	unknown := ids.New()
	cases := []struct {
		name     string
		key      string
		secret   string
		body     string
		status   int
		code     string
		readMost int
	}{
		{"unknown token, its own derived secret", unknown.Slug(ids.TokenPrefix), a.SQSSecret(unknown), big, 403, "InvalidClientTokenId", 65537},
		{"revoked token", f.revoked.Slug(ids.TokenPrefix), a.SQSSecret(f.revoked), big, 403, "InvalidClientTokenId", 65537},
		{"no token slug", "AKIAIOSFODNN7EXAMPLE", secret, big, 403, "InvalidClientTokenId", 65537},
		{"live token, wrong secret", key, strings.Repeat("x", 40), big, 403, "SignatureDoesNotMatch", len(big)},
		{"live token", key, secret, big, 200, "", len(big)},
		{"small body, unknown token", unknown.Slug(ids.TokenPrefix), a.SQSSecret(unknown), "{}", 403, "InvalidClientTokenId", 2},
	}
	for _, tc := range cases {
		r, cb := request(tc.key, tc.secret, tc.body)
		st, code, body := serveCode(d, r)
		if st != tc.status || code != tc.code {
			t.Errorf("%s: %d %q %.200s, want %d %q", tc.name, st, code, body, tc.status, tc.code)
		}
		if cb.n > tc.readMost {
			t.Errorf("%s: read %d bytes of the body, want at most %d", tc.name, cb.n, tc.readMost)
		}
	}
}
