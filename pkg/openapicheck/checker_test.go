package openapicheck

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// queueJSON is a queue as the server answers it.
const queueJSON = `{"id":"0193a5b3-1a2b-7c3d-8e4f-5a6b7c8d9e0f","slug":"que_069tbcrt5dy3v3jfb9nqs3cy1w",
"name":"orders-1","type":"standard","createdAt":"2026-11-29T18:00:00.000Z","updatedAt":"2026-11-29T18:00:00.000Z",
"visibilityTimeoutSeconds":30,"retentionSeconds":345600,"delaySeconds":0,"receiveWaitSeconds":0,"redrive":null,
"contentBasedDedup":false,"delivery":"atLeastOnce","fairness":"fast","maxCancels":10,"maxMessageBytes":262144,"onDeadLetter":"continue","partitions":1,
"counts":{"visible":0,"inFlight":0,"delayed":0,"truncated":false,"oldestMessageAgeSeconds":0}%s}`

// recorder is a testing.TB that records failures instead of failing, so a test can assert
// that the checker reports a violation. Everything else goes to the real test.
type recorder struct {
	testing.TB
	mu   sync.Mutex
	msgs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, fmt.Sprintf(format, args...))
}

func (r *recorder) Error(args ...any) { r.Errorf("%s", fmt.Sprint(args...)) }

func (r *recorder) failures() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.msgs...)
}

// server answers like a correct Queues server, except where the bad flags say otherwise.
type server struct {
	extraField   bool // GET queue answers an undocumented field
	teapot       bool // GET queue answers an undocumented status
	acceptBadReq bool // create queue answers 201 to a body the spec does not allow
	openSurprise bool // an unknown route answers 200
	plain404     bool // an unknown route answers 404 without the error body
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	writeJSON := func(status int, body string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/v1/queues/orders-1":
		if r.Header.Get("Authorization") == "" {
			writeJSON(401, `{"error":{"code":"unauthenticated","message":"a bearer token is required"}}`)
			return
		}
		switch {
		case s.teapot:
			writeJSON(http.StatusTeapot, `{"error":{"code":"internal","message":"teapot"}}`)
		case s.extraField:
			writeJSON(200, fmt.Sprintf(queueJSON, `,"color":"blue"`))
		default:
			writeJSON(200, fmt.Sprintf(queueJSON, ""))
		}
	case r.URL.Path == "/v1/queues/orders-1":
		writeJSON(405, `{"error":{"code":"method_not_allowed","message":"method not allowed"}}`)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/queues":
		body, _ := io.ReadAll(r.Body)
		if !s.acceptBadReq && strings.Contains(string(body), "colour") {
			writeJSON(400, `{"error":{"code":"invalid_argument","message":"unknown field","details":{"field":"colour"}}}`)
			return
		}
		writeJSON(201, fmt.Sprintf(queueJSON, ""))
	case r.Method == http.MethodPost && r.URL.Path == "/v1/receipts/ack":
		body, _ := io.ReadAll(r.Body)
		if strings.Contains(string(body), "stale") {
			writeJSON(410, `{"error":{"code":"receipt_handle_stale","message":"stale"}}`)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	case r.URL.Path == "/healthz":
		writeJSON(200, `{"status":"ok"}`)
	case s.openSurprise:
		writeJSON(200, `{}`)
	case s.plain404:
		w.WriteHeader(404)
		io.WriteString(w, "404 page not found")
	default:
		writeJSON(404, `{"error":{"code":"not_found","message":"no such route"}}`)
	}
}

// exchange sends one request through a checker reporting to rec.
func exchange(t *testing.T, chk *Checker, method, url, body string, auth bool) *http.Response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if auth {
		req.Header.Set("Authorization", "Bearer eyJ.eyJ.sig")
	}
	resp, err := chk.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	// The body must still be readable after the checker read it.
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusNoContent && len(b) == 0 {
		t.Errorf("%s %s: the checker left an empty body", method, url)
	}
	return resp
}

// TestCheckerPassesConformingServer: a correct server gives no report, the queue path
// parameter routes a name like orders-1, and the receipt routes validate without a token.
func TestCheckerPassesConformingServer(t *testing.T) {
	srv := httptest.NewServer(&server{})
	defer srv.Close()
	chk := NewChecker(t, srv.URL) // reports straight to t: any violation fails this test

	if resp := exchange(t, chk, "GET", srv.URL+"/v1/queues/orders-1", "", true); resp.StatusCode != 200 {
		t.Fatalf("GET queue: %d", resp.StatusCode)
	}
	exchange(t, chk, "GET", srv.URL+"/v1/queues/orders-1", "", false) // 401, documented
	exchange(t, chk, "POST", srv.URL+"/v1/queues", `{"name":"orders-1"}`, true)
	exchange(t, chk, "POST", srv.URL+"/v1/queues", `{"name":"orders-1","colour":"red"}`, true) // 400, fine
	exchange(t, chk, "POST", srv.URL+"/v1/receipts/ack", `{"receiptHandle":"rh1.x"}`, false)
	exchange(t, chk, "POST", srv.URL+"/v1/receipts/ack", `{"receiptHandle":"stale"}`, false)
	exchange(t, chk, "GET", srv.URL+"/healthz", "", false)
	exchange(t, chk, "GET", srv.URL+"/v1/nowhere", "", true)                // 404 not_found: right for an unknown path
	exchange(t, chk, "PUT", srv.URL+"/v1/queues/orders-1", `{"a":1}`, true) // 405 method_not_allowed: right

	seen := chk.Seen()
	for _, id := range []string{"getQueue", "createQueue", "ackReceipts", "getHealth"} {
		if !seen[id] {
			t.Errorf("Seen() lacks %s: %v", id, seen)
		}
	}
	if len(seen) != 4 {
		t.Errorf("Seen() = %v, want exactly 4 operations", seen)
	}
	chk.RequireAll(t, chk.Missing()...) // nothing left once the missing ones are excused
}

// TestCheckerReportsViolations: each kind of violation is reported on the TB.
func TestCheckerReportsViolations(t *testing.T) {
	cases := []struct {
		name   string
		srv    server
		method string
		path   string
		body   string
		want   string
	}{
		{"undocumented field", server{extraField: true}, "GET", "/v1/queues/orders-1", "", `"color"`},
		{"undocumented status", server{teapot: true}, "GET", "/v1/queues/orders-1", "", "status is not supported"},
		{"success for a request the spec rejects", server{acceptBadReq: true}, "POST", "/v1/queues", `{"name":"orders-1","colour":"red"}`, "does not allow"},
		{"route missing from the spec", server{openSurprise: true}, "GET", "/v1/nowhere", "", "not in openapi.yaml"},
		{"404 without the error body", server{plain404: true}, "GET", "/v1/nowhere", "", "for a route not in openapi.yaml"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(&tc.srv)
			defer srv.Close()
			rec := &recorder{TB: t}
			chk := NewChecker(rec, srv.URL)
			exchange(t, chk, tc.method, srv.URL+tc.path, tc.body, true)
			got := rec.failures()
			t.Log(strings.Join(got, "\n----\n"))
			if len(got) == 0 {
				t.Fatalf("the checker reported nothing; want a report containing %q", tc.want)
			}
			if !strings.Contains(strings.Join(got, "\n"), tc.want) {
				t.Errorf("reports %q do not contain %q", got, tc.want)
			}
		})
	}
}

// TestCheckerReportsSuccessWithoutToken: a 2xx on an authenticated route answered to a
// request without a bearer token means the server skipped authentication.
func TestCheckerReportsSuccessWithoutToken(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, fmt.Sprintf(queueJSON, ""))
	}))
	defer srv.Close()
	rec := &recorder{TB: t}
	chk := NewChecker(rec, srv.URL)
	exchange(t, chk, "GET", srv.URL+"/v1/queues/orders-1", "", false)
	if got := strings.Join(rec.failures(), "\n"); !strings.Contains(got, "no bearer token") {
		t.Errorf("reports = %q, want one about the missing bearer token", got)
	}
}

// TestRequireAllReportsMissing: RequireAll names the operations never exercised and rejects
// unknown names in its except list.
func TestRequireAllReportsMissing(t *testing.T) {
	srv := httptest.NewServer(&server{})
	defer srv.Close()
	chk := NewChecker(t, srv.URL)
	exchange(t, chk, "GET", srv.URL+"/healthz", "", false)

	rec := &recorder{TB: t}
	chk.RequireAll(rec, "getReadiness", "noSuchOperation")
	got := strings.Join(rec.failures(), "\n")
	for _, want := range []string{"noSuchOperation", "sendMessages", "receiveMessages"} {
		if !strings.Contains(got, want) {
			t.Errorf("RequireAll reports %q, want them to mention %s", got, want)
		}
	}
	for _, notWant := range []string{"getHealth,", "getReadiness,"} {
		if strings.Contains(got, notWant) {
			t.Errorf("RequireAll reports %q, which wrongly names %s", got, notWant)
		}
	}
}

// TestRouting: the router finds each operation whatever form the path parameters take.
func TestRouting(t *testing.T) {
	const base = "http://127.0.0.1:9"
	chk := NewChecker(t, base)
	for path, want := range map[string]string{
		"GET /v1/queues/orders-1":                                     "getQueue",
		"GET /v1/queues/que_069tbcrt5dy3v3jfb9nqs3cy1w":               "getQueue",
		"GET /v1/queues/0193A5B3-1A2B-7C3D-8E4F-5A6B7C8D9E0F":         "getQueue",
		"POST /v1/queues/orders_2/messages":                           "sendMessages",
		"GET /v1/queues/orders-1/messages":                            "browseMessages",
		"POST /v1/queues/orders-1/receive":                            "receiveMessages",
		"DELETE /v1/queues/orders-1/groups/customer%2F7":              "deleteGroup",
		"DELETE /v1/projects/prj_069tbckw3sykn7rj7d65tvkzg0/tokens/x": "revokeToken",
		"POST /v1/receipts/dead-letter":                               "deadLetterReceipts",
		"GET /readyz":                                                 "getReadiness",
	} {
		method, target, _ := strings.Cut(path, " ")
		req := httptest.NewRequest(method, base+target, nil)
		route, _, err := chk.router.FindRoute(req)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		if got := route.Operation.OperationID; got != want {
			t.Errorf("%s routes to %s, want %s", path, got, want)
		}
	}
}

// TestCheckerReportsBodyWhereNoneDocumented: net/http never sends a 204's body, so the
// exchange is made up and checked directly.
func TestCheckerReportsBodyWhereNoneDocumented(t *testing.T) {
	const base = "http://127.0.0.1:9"
	chk := NewChecker(t, base)
	req := httptest.NewRequest("DELETE", base+"/v1/queues/orders-1", nil)
	req.Header.Set("Authorization", "Bearer x.y.z")
	resp := &http.Response{StatusCode: http.StatusNoContent, Header: http.Header{"Content-Type": {"application/json"}}}
	problems := chk.check(req, nil, resp, []byte(`{"deleted":true}`))
	if len(problems) != 1 || !strings.Contains(problems[0], "documents no body") {
		t.Errorf("problems = %q, want one about the undocumented body", problems)
	}
	if problems := chk.check(req, nil, resp, nil); len(problems) != 0 {
		t.Errorf("an empty 204: problems = %q, want none", problems)
	}
}
