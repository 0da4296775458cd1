package openapicheck

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/queueshq/queues/pkg/apierr"
)

// TestSpecValid loads openapi.yaml with kin-openapi and validates it (examples included).
func TestSpecValid(t *testing.T) {
	path, err := SpecPath()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := ReadSpec(context.Background(), path) // always validates, unlike LoadSpec
	if err != nil {
		t.Fatal(err)
	}
	if !doc.IsOpenAPI31OrLater() {
		t.Errorf("openapi.yaml is OpenAPI %s, want 3.1", doc.OpenAPI)
	}
	if len(doc.Servers) != 1 || doc.Servers[0].URL != "http://127.0.0.1:8080" {
		t.Errorf("servers = %v, want the one entry http://127.0.0.1:8080", doc.Servers)
	}
}

// TestErrorCodesMatchAPIErr checks that the spec's error codes are exactly apierr's.
func TestErrorCodesMatchAPIErr(t *testing.T) {
	doc := LoadSpec(t)
	var inSpec []string
	for _, v := range doc.Components.Schemas["ErrorCode"].Value.Enum {
		inSpec = append(inSpec, v.(string))
	}
	var inGo []string
	for _, c := range apierr.Codes() {
		inGo = append(inGo, string(c))
	}
	slices.Sort(inSpec)
	slices.Sort(inGo)
	if !slices.Equal(inSpec, inGo) {
		t.Errorf("ErrorCode enum in openapi.yaml = %v\napierr.Codes() = %v", inSpec, inGo)
	}
}

// TestErrorResponsesMatchStatuses checks that every error response of every operation
// allows only codes that apierr answers with that status.
func TestErrorResponsesMatchStatuses(t *testing.T) {
	doc := LoadSpec(t)
	for _, o := range operations(doc) {
		path, method, op := o.path, o.method, o.op
		for status, ref := range op.Responses.Map() {
			n, err := strconv.Atoi(status)
			if err != nil {
				t.Errorf("%s %s: response %q is not a status code", method, path, status)
				continue
			}
			if n < 400 {
				continue
			}
			mt := ref.Value.Content.Get("application/json")
			if mt == nil || mt.Schema == nil {
				t.Errorf("%s %s %d: no application/json error schema", method, path, n)
				continue
			}
			codes := errorCodes(mt.Schema.Value)
			if len(codes) == 0 {
				t.Errorf("%s %s %d: the error schema does not narrow the code", method, path, n)
			}
			for _, c := range codes {
				if got := apierr.Code(c).Status(); got != n {
					t.Errorf("%s %s %d: code %s is answered with %d", method, path, n, c, got)
				}
			}
			if n == http.StatusTooManyRequests || (n == http.StatusServiceUnavailable && strings.HasPrefix(path, "/v1/")) {
				if h := ref.Value.Headers["Retry-After"]; h == nil || !h.Value.Required {
					t.Errorf("%s %s %d: no required Retry-After header", method, path, n)
				}
			}
		}
	}
}

// errorCodes returns the codes an error schema (allOf Error + ErrorIs…) allows.
func errorCodes(s *openapi3.Schema) []string {
	var out []string
	for _, part := range s.AllOf {
		if part.Ref == "#/components/schemas/Error" {
			continue // the generic error, any code
		}
		e := part.Value.Properties["error"]
		if e == nil || e.Value.Properties["code"] == nil {
			continue
		}
		code := e.Value.Properties["code"].Value
		if code.Const != nil {
			out = append(out, code.Const.(string))
		}
		for _, v := range code.Enum {
			out = append(out, v.(string))
		}
	}
	return out
}

// TestOperationsDocumented checks the house rules every operation follows.
func TestOperationsDocumented(t *testing.T) {
	doc := LoadSpec(t)
	for _, o := range operations(doc) {
		path, method, op := o.path, o.method, o.op
		name := method + " " + path
		if op.OperationID == "" || op.Summary == "" || op.Description == "" {
			t.Errorf("%s: needs an operationId, a summary and a description", name)
		}
		if op.Security == nil {
			t.Errorf("%s: no security (write security: [] for none)", name)
			continue
		}
		authenticated := len(*op.Security) > 0
		wantAuth := strings.HasPrefix(path, "/v1/") && !strings.HasPrefix(path, "/v1/receipts/")
		if authenticated != wantAuth {
			t.Errorf("%s: authenticated = %v; every /v1 route but /v1/receipts/* needs a token", name, authenticated)
		}
		if authenticated {
			if _, ok := op.Extensions["x-required-scope"]; !ok {
				t.Errorf("%s: no x-required-scope", name)
			}
			for _, s := range []int{400, 401, 403, 500, 503} {
				if op.Responses.Status(s) == nil {
					t.Errorf("%s: no %d response", name, s)
				}
			}
		}
		if strings.HasPrefix(path, "/v1/") {
			for _, s := range []int{400, 500, 503} {
				if op.Responses.Status(s) == nil {
					t.Errorf("%s: no %d response", name, s)
				}
			}
			if op.RequestBody != nil {
				for _, s := range []int{413, 415} {
					if op.Responses.Status(s) == nil {
						t.Errorf("%s: takes a body but has no %d response", name, s)
					}
				}
			}
		}
		// The project's request rate applies to every call with a project token and to the
		// receipt calls on its queues; operator routes have no project.
		operatorRoute := op.Extensions["x-required-scope"] == "operator"
		wantRate := strings.HasPrefix(path, "/v1/") && !operatorRoute
		if wantRate != (op.Responses.Status(429) != nil) {
			t.Errorf("%s: 429 rate_limited belongs to every project-token and receipt route", name)
		}
		if op.RequestBody != nil {
			for ct, mt := range op.RequestBody.Value.Content {
				if mt.Example == nil && len(mt.Examples) == 0 {
					t.Errorf("%s: request body %s has no example", name, ct)
				}
				if s := mt.Schema.Value; s.AdditionalProperties.Has == nil && len(s.OneOf) == 0 {
					t.Errorf("%s: request body %s allows unknown fields", name, ct)
				}
			}
		}
		for status, ref := range op.Responses.Map() {
			if !strings.HasPrefix(status, "2") {
				continue
			}
			for ct, mt := range ref.Value.Content {
				if mt.Example == nil && len(mt.Examples) == 0 {
					t.Errorf("%s %s: response %s has no example", name, status, ct)
				}
			}
		}
	}
}

// operation is one operation of the spec with its path and method.
type operation struct {
	path, method string
	op           *openapi3.Operation
}

// operations lists every operation of doc.
func operations(doc *openapi3.T) []operation {
	var out []operation
	for _, path := range doc.Paths.InMatchingOrder() {
		for method, op := range doc.Paths.Value(path).Operations() {
			out = append(out, operation{path, method, op})
		}
	}
	return out
}
