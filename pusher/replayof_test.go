package pusher_test

import (
	"encoding/json"
	"testing"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
)

// TestPushReplayOf: a replayed message is pushed with its origin as replayOf, and its reserved
// attribute is not among the attributes.
func TestPushReplayOf(t *testing.T) {
	e := newEnv(t)
	ep := newEndpoint(t, false, status(204))
	q := e.queue("standard", nil)
	e.subscribe(q, ep.URL+"/hook", nil)
	e.pusher(nil)
	e.applied(q, func(meta.Subscription) bool { return true })
	topic := ids.New()
	e.sendMsgs(q, []engine.Message{{Body: "again", Attributes: engine.WithReplayOf(map[string]string{"k": "v"}, engine.ReplayOf{Topic: topic, Sequence: 7})}})
	got := ep.next(t)
	var body struct {
		Messages []struct {
			Attributes map[string]string `json:"attributes"`
			ReplayOf   *struct {
				Topic    string `json:"topic"`
				Sequence uint64 `json:"sequence"`
			} `json:"replayOf"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(got.raw, &body); err != nil || len(body.Messages) != 1 {
		t.Fatalf("push body %s: %v", got.raw, err)
	}
	m := body.Messages[0]
	if m.ReplayOf == nil || m.ReplayOf.Topic != topic.String() || m.ReplayOf.Sequence != 7 || len(m.Attributes) != 1 || m.Attributes["k"] != "v" {
		t.Fatalf("pushed %s", got.raw)
	}
}
