package attacks

import (
	"testing"

	"github.com/queueshq/queues/pkg/signingkeys"
	"github.com/queueshq/queues/services/queues/stack"
)

// X14, X19: key rotation. A replica whose key list is [new, old] signs with the new key and
// still accepts tokens and receipt handles signed with the old one; a replica that has dropped
// the old key refuses them (401, 400); the old replica refuses what the new key signed.
func TestKeyRotation(t *testing.T) {
	p, oldTok := project(t)
	oldHandle := queueWithMessage(t, oldTok, "x14", nil)
	fresh, err := signingkeys.Generate("atk2")
	if err != nil {
		t.Fatal(err)
	}
	both, err := signingkeys.Parse(fresh.String() + "," + e.ring.String())
	if err != nil {
		t.Fatal(err)
	}
	rotated, _, stopRotated, err := e.serve(stack.Options{Keys: both})
	if err != nil {
		t.Fatal(err)
	}
	defer stopRotated()
	retired, _, stopRetired, err := e.serve(stack.Options{Keys: fresh})
	if err != nil {
		t.Fatal(err)
	}
	defer stopRetired()

	callTo(t, rotated, "GET", "/v1/queues", oldTok, nil, nil).is(t, 200, "", "")
	tk := callTo(t, rotated, "POST", "/v1/projects/"+p+"/tokens", operator, map[string]any{"name": "new", "scopes": []string{"*"}}, nil)
	tk.is(t, 201, "", "")
	newTok, _ := tk.body["token"].(string)
	remember(newTok)
	callTo(t, rotated, "GET", "/v1/queues", newTok, nil, nil).is(t, 200, "", "")
	callTo(t, retired, "GET", "/v1/queues", newTok, nil, nil).is(t, 200, "", "")
	callTo(t, retired, "GET", "/v1/queues", oldTok, nil, nil).is(t, 401, "unauthenticated", "")
	call(t, "GET", "/v1/queues", newTok, nil).is(t, 401, "unauthenticated", "") // the old replica never had the new key
	ackHandle(t, retired, oldHandle).is(t, 400, "receipt_handle_invalid", "receiptHandle")
	ackHandle(t, rotated, oldHandle).is(t, 204, "", "")
}
