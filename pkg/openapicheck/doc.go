// Package openapicheck holds openapi.yaml to the server's real traffic in tests.
//
// LoadSpec parses and validates the repository's openapi.yaml. A Checker gives tests an
// *http.Client whose transport validates every response against the spec: the route and
// its operation must exist, the status must be documented, and the headers and body must
// match the documented schema. A 2xx answer to a request whose body or parameters the spec
// does not allow is reported too, because then the spec is the one that is wrong. Requests
// are otherwise not validated, so negative tests can send bad ones on purpose.
//
//	srv := httptest.NewServer(handler)
//	chk := openapicheck.NewChecker(t, srv.URL)
//	resp, err := chk.Client().Post(srv.URL+"/v1/queues", "application/json", body)
//	...
//	chk.RequireAll(t, "getHealth") // at the end of a suite: every operation was exercised
//
// Violations are reported with tb.Errorf on the testing.TB given to NewChecker, so the test
// goes on and shows every violation it meets.
package openapicheck
