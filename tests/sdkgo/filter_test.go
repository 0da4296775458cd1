package sdkgo

import (
	"context"
	"errors"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/queueshq/queues/sdk/go/client"
)

// sendKinds sends one message per body with attribute kind = kinds[i].
func sendKinds(t *testing.T, tn *tenant, queue string, bodies, kinds []string) {
	t.Helper()
	var msgs []client.SendMessage
	for i, b := range bodies {
		msgs = append(msgs, client.SendMessage{Body: b, Attributes: map[string]string{"kind": kinds[i]}})
	}
	r, err := tn.c.SendBatch(t.Context(), queue, msgs)
	if err != nil || len(r.Failed) > 0 {
		t.Fatalf("send: %v %+v", err, r)
	}
}

// TestFilter: Receive and Browse with a Filter take and list only the messages it selects;
// a list of values matches any of them; bad filters name the field.
func TestFilter(t *testing.T) {
	tn := newTenant(t)
	tn.queue(t, client.CreateQueueInput{Name: "kinds"})
	sendKinds(t, tn, "kinds", []string{"i1", "r1", "x1", "i2"}, []string{"invoice", "refund", "other", "invoice"})
	ctx := t.Context()
	page, err := tn.c.Browse(ctx, "kinds", client.BrowseInput{Filter: client.Attr("kind", "refund", "other")})
	if err != nil {
		t.Fatal(err)
	}
	var browsed []string
	for _, m := range page.Messages {
		browsed = append(browsed, m.Body)
	}
	if !slices.Equal(browsed, []string{"r1", "x1"}) || page.NextCursor != nil {
		t.Fatalf("browsed %q (cursor %v), want [r1 x1] and none", browsed, page.NextCursor)
	}
	got, err := tn.c.Receive(ctx, "kinds", client.ReceiveInput{MaxMessages: 10, WaitSeconds: client.Int(0), Filter: client.Attr("kind", "invoice")})
	if err != nil {
		t.Fatal(err)
	}
	if b := bodiesOf(got); !slices.Equal(b, []string{"i1", "i2"}) {
		t.Fatalf("received %q, want [i1 i2]", b)
	}
	_, err = tn.c.Receive(ctx, "kinds", client.ReceiveInput{Filter: &client.Filter{Attributes: map[string][]string{"kind": {}}}})
	var e *client.Error
	if !errors.As(err, &e) || e.Code != client.CodeInvalidArgument || e.Field != "filter.attributes.kind" {
		t.Fatalf("an empty value list: %v, want invalid_argument naming filter.attributes.kind", err)
	}
}

func bodiesOf(ms []client.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Body
	}
	sort.Strings(out)
	return out
}

// TestConsumeFilter: Consume with a Filter, over the stream and polling, handles only the
// selected messages; the others stay visible, never received.
func TestConsumeFilter(t *testing.T) {
	for _, polling := range []bool{false, true} {
		tn := newTenant(t)
		tn.queue(t, client.CreateQueueInput{Name: "mixed"})
		sendKinds(t, tn, "mixed", []string{"a", "b", "c", "d"}, []string{"keep", "skip", "keep", "skip"})
		handled := make(chan string, 4)
		stop := consume(t, tn.c, "mixed", func(_ context.Context, m *client.Message) error {
			handled <- m.Body
			return nil
		}, client.ConsumeOptions{Concurrency: 2, WaitSeconds: 1, Polling: polling, Filter: client.Attr("kind", "keep")})
		got := []string{await(t, handled, 15*time.Second, "a kept message"), await(t, handled, 15*time.Second, "a kept message")}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		sort.Strings(got)
		if !slices.Equal(got, []string{"a", "c"}) || len(handled) > 0 {
			t.Fatalf("polling %v: handled %q (and %d more), want [a c]", polling, got, len(handled))
		}
		page, err := tn.c.Browse(t.Context(), "mixed", client.BrowseInput{})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range page.Messages {
			if m.Attributes["kind"] != "skip" || m.ReceiveCount != 0 {
				t.Fatalf("polling %v: left %q kind %q receiveCount %d", polling, m.Body, m.Attributes["kind"], m.ReceiveCount)
			}
		}
		if len(page.Messages) != 2 {
			t.Fatalf("polling %v: %d messages left, want 2", polling, len(page.Messages))
		}
	}
}
