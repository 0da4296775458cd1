package openapicheck

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// maxQuoted is how much of a body a violation report quotes.
const maxQuoted = 2048

// Checker validates HTTP traffic to one server against openapi.yaml and records which
// operations it saw. It is safe for concurrent use.
type Checker struct {
	tb     testing.TB
	doc    *openapi3.T
	router routers.Router
	next   http.RoundTripper
	errSch *openapi3.SchemaRef

	mu   sync.Mutex
	seen map[string]bool
}

// NewChecker returns a checker for the server at baseURL (such as an httptest.Server's URL;
// requests must use the same scheme, host and port). Violations are reported on tb.
func NewChecker(tb testing.TB, baseURL string) *Checker {
	tb.Helper()
	doc := LoadSpec(tb)
	doc.Servers = openapi3.Servers{{URL: strings.TrimSuffix(baseURL, "/")}}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		tb.Fatalf("openapicheck: router for %s: %v", baseURL, err)
	}
	errSch := doc.Components.Schemas["Error"]
	if errSch == nil {
		tb.Fatal("openapicheck: openapi.yaml has no components.schemas.Error")
	}
	return &Checker{
		tb:     tb,
		doc:    doc,
		router: router,
		next:   http.DefaultTransport,
		errSch: errSch,
		seen:   map[string]bool{},
	}
}

// Spec is the document the checker validates against.
func (c *Checker) Spec() *openapi3.T { return c.doc }

// Client returns an HTTP client whose requests go through the checker.
func (c *Checker) Client() *http.Client {
	return &http.Client{Transport: c}
}

// Wrap returns a transport that checks the traffic of next (nil: http.DefaultTransport), for
// clients that need their own transport.
func (c *Checker) Wrap(next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return &wrapped{c: c, next: next}
}

type wrapped struct {
	c    *Checker
	next http.RoundTripper
}

func (w *wrapped) RoundTrip(req *http.Request) (*http.Response, error) {
	return w.c.roundTrip(req, w.next)
}

// RoundTrip sends req with http.DefaultTransport and checks the exchange.
func (c *Checker) RoundTrip(req *http.Request) (*http.Response, error) {
	return c.roundTrip(req, c.next)
}

// Seen returns the operationIds exercised so far.
func (c *Checker) Seen() map[string]bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]bool, len(c.seen))
	for k, v := range c.seen {
		out[k] = v
	}
	return out
}

// Missing returns the operationIds of the spec never exercised, less except, sorted.
func (c *Checker) Missing(except ...string) []string {
	seen := c.Seen()
	var out []string
	for _, id := range OperationIDs(c.doc) {
		if !seen[id] && !slices.Contains(except, id) {
			out = append(out, id)
		}
	}
	return out
}

// RequireAll fails tb unless every operation of the spec was exercised, except the named
// ones. Naming an operationId the spec does not have fails too, so the list cannot rot.
func (c *Checker) RequireAll(tb testing.TB, except ...string) {
	tb.Helper()
	all := OperationIDs(c.doc)
	for _, id := range except {
		if !slices.Contains(all, id) {
			tb.Errorf("openapicheck: RequireAll: %q is not an operationId of %s", id, SpecFile)
		}
	}
	if missing := c.Missing(except...); len(missing) > 0 {
		tb.Errorf("openapicheck: operations of %s never exercised: %s", SpecFile, strings.Join(missing, ", "))
	}
}

func (c *Checker) roundTrip(req *http.Request, next http.RoundTripper) (*http.Response, error) {
	// Keep the request body so it can be validated once the answer is known.
	var reqBody []byte
	out := req
	if req.Body != nil && req.Body != http.NoBody {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		reqBody = b
		out = req.Clone(req.Context())
		out.Body = io.NopCloser(bytes.NewReader(b))
		out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
		out.ContentLength = int64(len(b))
	}
	resp, err := next.RoundTrip(out)
	if err != nil {
		return nil, err
	}
	if req.Method == http.MethodHead {
		return resp, nil
	}
	if resp.StatusCode == http.StatusSwitchingProtocols {
		// The body is the upgraded connection (the receive stream's WebSocket): the status
		// and the request are checked; the frames are the protocol's, not the document's.
		for _, problem := range c.check(req, reqBody, resp, nil) {
			c.tb.Errorf("openapicheck: %s %s -> %d: %s", req.Method, req.URL.RequestURI(), resp.StatusCode, problem)
		}
		return resp, nil
	}
	respBody, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(respBody))
	resp.ContentLength = int64(len(respBody))
	for _, problem := range c.check(req, reqBody, resp, respBody) {
		c.tb.Errorf("openapicheck: %s %s -> %d: %s\nresponse body: %s",
			req.Method, req.URL.RequestURI(), resp.StatusCode, problem, quote(respBody))
	}
	return resp, nil
}

// check returns what is wrong with one exchange.
func (c *Checker) check(req *http.Request, reqBody []byte, resp *http.Response, respBody []byte) []string {
	route, params, err := c.router.FindRoute(req)
	if err != nil {
		return c.checkUnrouted(err, resp, respBody)
	}
	c.mu.Lock()
	c.seen[route.Operation.OperationID] = true
	c.mu.Unlock()

	ctx := req.Context()
	opts := &openapi3filter.Options{
		IncludeResponseStatus: true,
		MultiError:            true,
		SkipSettingDefaults:   true,
		AuthenticationFunc:    requireBearer,
	}
	opts.WithCustomSchemaErrorFunc(schemaMessage)
	reqInput := &openapi3filter.RequestValidationInput{
		Request:    withBody(req, reqBody),
		PathParams: params,
		Route:      route,
		Options:    opts,
	}
	var problems []string
	respInput := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: reqInput,
		Status:                 resp.StatusCode,
		Header:                 resp.Header,
		Body:                   io.NopCloser(bytes.NewReader(respBody)),
		Options:                opts,
	}
	if resp.StatusCode == http.StatusSwitchingProtocols {
		if route.Operation.Responses.Status(resp.StatusCode) == nil {
			problems = append(problems, fmt.Sprintf("%s documents no 101 for operation %s", SpecFile, route.Operation.OperationID))
		}
	} else if err := openapi3filter.ValidateResponse(ctx, respInput); err != nil {
		problems = append(problems, fmt.Sprintf("response violates %s (operation %s): %v",
			SpecFile, route.Operation.OperationID, err))
	} else if doc := route.Operation.Responses.Status(resp.StatusCode); doc != nil && doc.Value != nil &&
		len(doc.Value.Content) == 0 && len(respBody) > 0 {
		// ValidateResponse accepts any body where the spec documents none (such as a 204).
		problems = append(problems, fmt.Sprintf("%s documents no body for %d (operation %s), yet the server sent %d bytes",
			SpecFile, resp.StatusCode, route.Operation.OperationID, len(respBody)))
	}
	// A success for a request the spec does not allow means the spec is wrong (or the server
	// accepts what it should reject). Failures are left alone: negative tests send bad
	// requests on purpose.
	if resp.StatusCode >= 200 && resp.StatusCode < 300 || resp.StatusCode == http.StatusSwitchingProtocols {
		reqInput.Request = withBody(req, reqBody)
		if err := openapi3filter.ValidateRequest(ctx, reqInput); err != nil {
			problems = append(problems, fmt.Sprintf("the server answered %d to a request that %s does not allow (operation %s): %v",
				resp.StatusCode, SpecFile, route.Operation.OperationID, err))
		}
	}
	return problems
}

// checkUnrouted judges an exchange whose method and path are not in the spec. A 404 for an
// unknown path and a 405 for an unknown method on a known path are right, as long as they
// carry the documented error body; any other answer means the spec lacks a route.
func (c *Checker) checkUnrouted(err error, resp *http.Response, respBody []byte) []string {
	var want int
	var code string
	switch {
	case errors.Is(err, routers.ErrPathNotFound):
		want, code = http.StatusNotFound, "not_found"
	case errors.Is(err, routers.ErrMethodNotAllowed):
		want, code = http.StatusMethodNotAllowed, "method_not_allowed"
	default:
		return []string{fmt.Sprintf("cannot route the request in %s: %v", SpecFile, err)}
	}
	if resp.StatusCode != want {
		return []string{fmt.Sprintf("the route is not in %s (%v), yet the server answered %d", SpecFile, err, resp.StatusCode)}
	}
	if problem := c.checkErrorBody(resp, respBody, code); problem != "" {
		return []string{fmt.Sprintf("%d for a route not in %s: %s", resp.StatusCode, SpecFile, problem)}
	}
	return nil
}

// checkErrorBody checks that an answer is the spec's Error with the given code.
func (c *Checker) checkErrorBody(resp *http.Response, body []byte, code string) string {
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(strings.ToLower(ct), "application/json") {
		return fmt.Sprintf("content type %q, want application/json", ct)
	}
	value, err := decodeJSON(body)
	if err != nil {
		return fmt.Sprintf("the body is not JSON: %v", err)
	}
	opts := []openapi3.SchemaValidationOption{
		openapi3.VisitAsResponse(), openapi3.MultiErrors(), openapi3.SetSchemaErrorMessageCustomizer(schemaMessage),
	}
	if c.doc.IsOpenAPI31OrLater() {
		opts = append(opts, openapi3.EnableJSONSchema2020())
	}
	if err := c.errSch.Value.VisitJSON(value, opts...); err != nil {
		return fmt.Sprintf("the body is not an Error: %v", err)
	}
	if got := errorCode(value); got != code {
		return fmt.Sprintf("error code %q, want %q", got, code)
	}
	return ""
}

// requireBearer passes a bearer security scheme when the request carries a bearer token, so
// a success answered to a request without one is reported.
func requireBearer(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	s := in.SecurityScheme
	if s == nil || s.Type != "http" || !strings.EqualFold(s.Scheme, "bearer") {
		return nil
	}
	auth := in.RequestValidationInput.Request.Header.Get("Authorization")
	if len(auth) < len("Bearer x") || !strings.EqualFold(auth[:len("Bearer ")], "Bearer ") {
		return in.NewError(errors.New("no bearer token in the request"))
	}
	return nil
}

// schemaMessage shortens schema errors to their reason: the default message dumps the whole
// schema and value, and the report quotes the body anyway.
func schemaMessage(err *openapi3.SchemaError) string {
	if err.Reason == "" {
		return "" // the default message
	}
	if p := err.JSONPointer(); len(p) > 0 && !strings.Contains(err.Reason, "at '") {
		return "at /" + strings.Join(p, "/") + ": " + err.Reason
	}
	return err.Reason
}

// withBody returns a copy of req that reads body, for the validators (which consume it).
func withBody(req *http.Request, body []byte) *http.Request {
	r := req.Clone(req.Context())
	if body == nil {
		r.Body = http.NoBody
		r.GetBody = nil
		r.ContentLength = 0
		return r
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	r.ContentLength = int64(len(body))
	return r
}

func quote(b []byte) string {
	if len(b) == 0 {
		return "(empty)"
	}
	if len(b) > maxQuoted {
		return string(b[:maxQuoted]) + "…"
	}
	return string(b)
}
