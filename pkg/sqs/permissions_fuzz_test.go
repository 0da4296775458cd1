package sqs

import (
	"encoding/json"
	"testing"

	"github.com/queueshq/queues/pkg/meta"
)

// FuzzPolicyEdit: whatever Policy SetQueueAttributes accepted, a grant keeps it a JSON
// object holding the new label, and revoking that label takes exactly it out again; the
// permission lists' decoder takes any input.
func FuzzPolicyEdit(f *testing.F) {
	f.Add(`{"Version":"2012-10-17","Statement":[{"Sid":"a","Effect":"Allow"}]}`, "b", `["SendMessage"]`)
	f.Add(`{"Statement":{"Sid":"x"}}`, "x", `""`)
	f.Add(`{"Statement":"nope"}`, "a", `null`)
	f.Add(``, "l", `[1]`)
	f.Fuzz(func(t *testing.T, stored, label, list string) {
		var l permList
		_ = json.Unmarshal([]byte(list), &l)
		if checkPolicy(stored) != nil || !permissionLabel.MatchString(label) {
			return // SetQueueAttributes and AddPermission refuse these
		}
		c := &call{}
		q := meta.Queue{Name: "q", SQSAttributes: map[string]string{"Policy": stored}}
		if err := grant(c, &q, label, []string{"p"}, []string{"SQS:*"}); err != nil {
			return // the label was there already
		}
		after := q.SQSAttributes["Policy"]
		if checkPolicy(after) != nil || after == "" {
			t.Fatalf("a grant on %q left %q", stored, after)
		}
		before := len(readPolicy(c, &q).statements())
		if err := revoke(c, &q, label); err != nil {
			t.Fatalf("revoking the label just granted: %v", err)
		}
		if left := len(readPolicy(c, &q).statements()); q.SQSAttributes["Policy"] != "" && left != before-1 {
			t.Fatalf("revoke on %q took %d statements, not 1", after, before-left)
		}
	})
}
