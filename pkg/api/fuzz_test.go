package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/auth"
	"github.com/queueshq/queues/pkg/endpoint"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/receipt"
	"github.com/queueshq/queues/pkg/signingkeys"
)

// FuzzReceiptRequest drives the receipt routes' decoder (single and batch forms of ack,
// visibility and dead-letter) through the real handler. Handles the fuzzer makes never carry a
// valid MAC, so no storage is reached: every answer must be a 4xx with a code, or a 200 batch
// answer with one result per entry, each failed with a code and a field inside the request.
func FuzzReceiptRequest(f *testing.F) {
	ring, err := signingkeys.Generate("f")
	if err != nil {
		f.Fatal(err)
	}
	// Well-formed handles under a key of the same id but another secret: realistic structure
	// for the mutator, never a valid MAC (a valid one would need the storage this test lacks).
	other, _ := signingkeys.Generate("f")
	h := receipt.NewSigner(other).Sign(engine.Delivery{Queue: ids.New(), MessageID: ids.New(), Attempt: 1})
	for _, s := range []string{
		`{"receiptHandle":"` + h + `"}`, `{"receiptHandles":["a","` + h + `","` + h + `"]}`,
		`{"receiptHandle":"x","visibilityTimeoutSeconds":30}`, `{"entries":[{"receiptHandle":"x","visibilityTimeoutSeconds":-1}]}`,
		`{"entries":[{"receiptHandle":"x","reason":"bad"}],"receiptHandle":"y"}`, `{"receiptHandles":[]}`, `{}`, `[]`, ``,
		`{"receiptHandles":[1,null,{},[]]}`, `{"entries":[{"receiptHandle":"\ud800"}]}`,
	} {
		for route := range uint8(3) {
			f.Add(route, []byte(s))
		}
	}
	s := New(Config{Auth: auth.New(ring, "", time.Now), Receipts: receipt.NewSigner(ring), Registry: prometheus.NewRegistry(),
		ForgedHandles: ForgedHandleLimit{PerSecond: 1e9, Burst: 1 << 30}})
	routes := []string{"/v1/receipts/ack", "/v1/receipts/visibility", "/v1/receipts/dead-letter"}
	f.Fuzz(func(t *testing.T, route uint8, body []byte) {
		req := httptest.NewRequest("POST", routes[int(route)%3], bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		var ans struct {
			Error   *errorBody   `json:"error"`
			Results []resultJSON `json:"results"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &ans); err != nil {
			t.Fatalf("%d answer is not JSON: %q", rec.Code, rec.Body)
		}
		switch {
		case rec.Code >= 400 && rec.Code < 500:
			if ans.Error == nil || ans.Error.Code == "" || ans.Error.Code == apierr.Internal {
				t.Fatalf("%d without a client error code: %s", rec.Code, rec.Body)
			}
		case rec.Code == http.StatusOK:
			var raw map[string]json.RawMessage
			_ = json.Unmarshal(body, &raw)
			for i, r := range ans.Results {
				if r.Index != i || r.Error == nil || r.Error.Code == "" {
					t.Fatalf("result %d: %+v in %s", i, r, rec.Body)
				}
				if f, _ := r.Error.Details["field"].(string); f != "" && !strings.Contains(f, "[") {
					t.Fatalf("result %d names field %q outside its entry", i, f)
				}
			}
			if len(ans.Results) == 0 {
				t.Fatalf("200 with no results: %s", rec.Body)
			}
		default:
			t.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	})
}

// FuzzSubscriptionRequest decodes subscription bodies as create and update do. Refusals are
// invalid_argument naming a known field (or none: the body itself); accepted settings are in
// range and the endpoint is one ValidateEndpoint accepts.
func FuzzSubscriptionRequest(f *testing.F) {
	for _, s := range []string{
		`{"endpoint":"https://example.com/hook","batchSize":10,"batchWindowMs":0,"maxInFlight":5,"timeoutSeconds":30,"paused":false}`,
		`{"endpoint":"http://127.0.0.1:8080/"}`, `{"endpoint":"https://0x7f.1/"}`, `{"batchSize":101}`, `{"paused":"yes"}`,
		`{"endpoint":"https://[::ffff:127.0.0.1]/"}`, `{"endpoint":"https://u@example.com/"}`, `{"timeoutSeconds":1e3}`, `{"x":1}`,
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	strict := New(Config{Registry: prometheus.NewRegistry()})
	dev := New(Config{Registry: prometheus.NewRegistry(), PushAllowPrivate: true})
	f.Fuzz(func(t *testing.T, data []byte, private bool) {
		s := strict
		if private {
			s = dev
		}
		o, aerr := parseObject(data, "", false, subscriptionFields...)
		if aerr != nil {
			if aerr.Code != apierr.InvalidArgument {
				t.Fatalf("decode: %v", aerr)
			}
			return
		}
		sub := meta.Subscription{BatchSize: defaultBatchSize, MaxInFlight: defaultMaxInFlight, TimeoutSeconds: defaultPushTimeout}
		if err := s.applySubscription(o, &sub); err != nil {
			ae := apierr.As(err)
			if ae.Code != apierr.InvalidArgument || !slices.Contains(subscriptionFields, ae.Field) {
				t.Fatalf("refusal %v names %q", err, ae.Field)
			}
			return
		}
		if sub.BatchSize < 1 || sub.BatchSize > maxBatchSize || sub.MaxInFlight < 1 || sub.MaxInFlight > maxMaxInFlight ||
			sub.TimeoutSeconds < 1 || sub.TimeoutSeconds > maxPushTimeout || sub.BatchWindowMs < 0 || sub.BatchWindowMs > maxBatchWindowMs {
			t.Fatalf("accepted out-of-range settings %+v", sub)
		}
		if o.has("endpoint") {
			if err := pusherValidate(sub.Endpoint, private); err != nil {
				t.Fatalf("accepted endpoint %q that ValidateEndpoint refuses: %v", sub.Endpoint, err)
			}
		}
	})
}

var pusherValidate = endpoint.Validate
