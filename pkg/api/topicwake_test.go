package api

import (
	"slices"
	"testing"

	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/tenancy"
)

// A PATCH of the retention lists the topic in the fan-out's work list, so an idle topic is
// trimmed by its new retention at once rather than at the wake time its old one set.
func TestTopicRetentionPatchWakesTheTopic(t *testing.T) {
	w := newTopicWorld(t, true, tenancy.Defaults)
	var tp topicJSON
	w.must(201, "POST", "/v1/topics", `{"name":"orders"}`, &tp)
	id, err := ids.ParseUUID(tp.ID)
	if err != nil {
		t.Fatal(err)
	}
	listed := func() bool {
		t.Helper()
		active, err := w.eng.ActiveTopics(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return slices.Contains(active, id)
	}
	if listed() {
		t.Fatal("a new topic nobody published to is in the work list")
	}
	w.must(200, "PATCH", "/v1/topics/orders", `{}`, nil)
	if listed() {
		t.Fatal("a PATCH changing nothing listed the topic")
	}
	w.must(200, "PATCH", "/v1/topics/orders", `{"retentionSeconds":60}`, nil)
	if !listed() {
		t.Fatal("a PATCH of the retention did not list the topic")
	}
}
