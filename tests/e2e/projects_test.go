package e2e

import (
	"testing"
	"time"
)

func TestProjectsAndTokens(t *testing.T) {
	op := newClient(t, w.a, operator)
	p := op.do("POST", "/v1/projects", map[string]any{"name": "acme"}).must(t, 201)
	id, slug := p.str("id"), p.str("slug")
	if p.str("name") != "acme" || len(slug) != 30 || slug[:4] != "prj_" {
		t.Fatalf("project: %s", p.raw)
	}
	op.do("GET", "/v1/projects/"+id, nil).must(t, 200)
	if got := op.do("GET", "/v1/projects/"+slug, nil).must(t, 200).str("id"); got != id {
		t.Fatalf("by slug: %s", got)
	}
	found := false
	cursor := ""
	for range 100 {
		path := "/v1/projects?limit=1000"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		l := op.do("GET", path, nil).must(t, 200)
		for _, x := range l.list("projects") {
			found = found || x["id"] == id
		}
		if cursor = l.str("nextCursor"); cursor == "" {
			break
		}
	}
	if !found {
		t.Fatal("new project not listed")
	}
	op.do("GET", "/v1/projects/00000000-0000-7000-8000-000000000000", nil).fails(t, 404, "not_found", "")
	op.do("GET", "/v1/projects/prj_nope", nil).fails(t, 400, "invalid_argument", "project")
	op.do("POST", "/v1/projects", map[string]any{}).fails(t, 400, "invalid_argument", "name")
	op.do("POST", "/v1/projects", map[string]any{"name": "x", "owner": "y"}).fails(t, 400, "invalid_argument", "owner")

	tokens := "/v1/projects/" + id + "/tokens"
	exp := op.do("POST", tokens, map[string]any{"name": "ci", "scopes": []string{"queues:read"}, "ttlSeconds": 3600}).must(t, 201)
	if exp.str("expiresAt") == "" || exp.str("token") == "" || exp.str("slug")[:4] != "tok_" {
		t.Fatalf("token: %s", exp.raw)
	}
	forever := op.do("POST", tokens, map[string]any{"name": "ci", "scopes": []string{"*"}}).must(t, 201)
	if forever.body["expiresAt"] != nil {
		t.Fatalf("token without ttl has expiresAt: %s", forever.raw)
	}
	op.do("POST", tokens, map[string]any{"name": "x", "scopes": []string{"queues:write"}}).fails(t, 400, "invalid_argument", "scopes[0]")
	op.do("POST", tokens, map[string]any{"name": "x", "scopes": []string{}}).fails(t, 400, "invalid_argument", "scopes")
	op.do("POST", tokens, map[string]any{"name": "x", "scopes": []string{"*"}, "ttlSeconds": 0}).fails(t, 400, "invalid_argument", "ttlSeconds")
	op.do("POST", tokens, map[string]any{"name": "x"}).fails(t, 400, "invalid_argument", "scopes")

	// Scopes: a read token reads, cannot create; a project token is no operator.
	read := newClient(t, w.a, exp.str("token"))
	read.do("GET", "/v1/queues", nil).must(t, 200)
	read.do("POST", "/v1/queues", map[string]any{"name": "q"}).fails(t, 403, "permission_denied", "")
	read.do("GET", "/v1/projects", nil).fails(t, 403, "permission_denied", "")
	read.as("").do("GET", "/v1/queues", nil).fails(t, 401, "unauthenticated", "")
	read.as("garbage").do("GET", "/v1/queues", nil).fails(t, 401, "unauthenticated", "")
	read.as(operator).do("GET", "/v1/queues", nil).fails(t, 403, "permission_denied", "")
	read.as(operator+"x").do("GET", "/v1/projects", nil).fails(t, 401, "unauthenticated", "")

	// Revocation through replica A takes effect on replica B within 5 s.
	all := forever.str("token")
	onB := newClient(t, w.b, all)
	onB.do("GET", "/v1/queues", nil).must(t, 200) // B caches the token as live
	op.do("DELETE", tokens+"/"+forever.str("slug"), nil).must(t, 204)
	deadline := time.Now().Add(5 * time.Second)
	for onB.do("GET", "/v1/queues", nil).status != 401 {
		if time.Now().After(deadline) {
			t.Fatal("revoked token still accepted on replica B after 5 s")
		}
		time.Sleep(50 * time.Millisecond) // polling another replica's state: no event to await
	}
	newClient(t, w.a, all).do("GET", "/v1/queues", nil).fails(t, 401, "unauthenticated", "")
	op.do("DELETE", tokens+"/"+forever.str("id"), nil).must(t, 204) // idempotent
	op.do("DELETE", tokens+"/00000000-0000-7000-8000-000000000000", nil).fails(t, 404, "not_found", "")
}
