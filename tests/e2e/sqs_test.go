package e2e

import (
	"strings"
	"testing"
)

// TestSQSCredentials: a token's SQS key pair at creation and from the operator route.
func TestSQSCredentials(t *testing.T) {
	op := newClient(t, w.a, operator)
	p := op.do("POST", "/v1/projects", map[string]any{"name": "sqs"}).must(t, 201)
	tok := op.do("POST", "/v1/projects/"+p.str("id")+"/tokens", map[string]any{"name": "sqs", "scopes": []string{"*"}}).must(t, 201)
	secret := tok.str("sqsSecretAccessKey")
	if len(secret) != 40 {
		t.Fatalf("sqsSecretAccessKey %q", secret)
	}
	for _, ref := range []string{tok.str("id"), tok.str("slug")} {
		creds := op.do("GET", "/v1/projects/"+p.str("slug")+"/tokens/"+ref+"/sqs-credentials", nil).must(t, 200)
		if creds.str("accessKeyId") != tok.str("slug") || creds.str("secretAccessKey") != secret {
			t.Fatalf("sqs-credentials %s, token %s", creds.raw, tok.raw)
		}
	}
	other := op.do("POST", "/v1/projects/"+p.str("id")+"/tokens", map[string]any{"name": "other", "scopes": []string{"*"}}).must(t, 201)
	if other.str("sqsSecretAccessKey") == secret {
		t.Fatal("two tokens share an SQS secret")
	}
	op.do("GET", "/v1/projects/"+p.str("id")+"/tokens/tok_nope/sqs-credentials", nil).fails(t, 400, "invalid_argument", "token")
	op.do("GET", "/v1/projects/"+p.str("id")+"/tokens/00000000-0000-7000-8000-000000000000/sqs-credentials", nil).fails(t, 404, "not_found", "")
	newClient(t, w.a, tok.str("token")).do("GET", "/v1/projects/"+p.str("id")+"/tokens/"+tok.str("id")+"/sqs-credentials", nil).fails(t, 403, "permission_denied", "")
}

// TestFIFOSuffix: a fifo queue's name may end in .fifo, a standard queue's may not, and no
// name holds another dot.
func TestFIFOSuffix(t *testing.T) {
	c := newTenant(t).a
	q := c.do("POST", "/v1/queues", map[string]any{"name": "jobs.fifo", "type": "fifo"}).must(t, 201)
	if q.str("name") != "jobs.fifo" {
		t.Fatalf("created %s", q.raw)
	}
	c.do("GET", "/v1/queues/jobs.fifo", nil).must(t, 200)
	c.do("POST", "/v1/queues/jobs.fifo/messages", map[string]any{"messages": []map[string]any{{"body": "x", "groupId": "g"}}}).must(t, 200)
	l := c.do("GET", "/v1/queues?prefix=jobs.", nil).must(t, 200)
	if n := len(l.list("queues")); n != 1 {
		t.Fatalf("prefix jobs. listed %d queues", n)
	}
	c.do("POST", "/v1/queues", map[string]any{"name": "plain.fifo"}).fails(t, 400, "invalid_argument", "name")
	c.do("POST", "/v1/queues", map[string]any{"name": "a.b", "type": "fifo"}).fails(t, 400, "invalid_argument", "name")
	c.do("POST", "/v1/queues", map[string]any{"name": strings.Repeat("x", 76) + ".fifo", "type": "fifo"}).fails(t, 400, "invalid_argument", "name")
	c.do("POST", "/v1/queues", map[string]any{"name": strings.Repeat("x", 75) + ".fifo", "type": "fifo"}).must(t, 201)
}
