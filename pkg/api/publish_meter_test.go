package api

import (
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/clock"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/meta/memmeta"
	"github.com/queueshq/queues/pkg/tenancy"
)

// TestMeterPublished: a publish counts one messagesPublished and its payload in bytesIn per
// appended message; a fifo duplicate appends nothing and counts nothing.
func TestMeterPublished(t *testing.T) {
	ctx := t.Context()
	hour := time.Date(2026, 3, 14, 15, 0, 0, 0, time.UTC)
	clk := clock.NewFake(hour.Add(time.Minute))
	store := memmeta.New()
	p := meta.Project{ID: ids.New(), Name: "p", CreatedAt: hour}
	if err := store.CreateProject(ctx, p); err != nil {
		t.Fatal(err)
	}
	meter := tenancy.NewMeter(clk, "r")
	s := New(Config{Meter: meter, Clock: clk})
	msgs := []engine.PublishMessage{{Message: engine.Message{Body: "abc"}},
		{Message: engine.Message{Body: "de", Attributes: map[string]string{"k": "v"}}}, {Message: engine.Message{Body: "again"}}}
	res := []engine.PublishResult{{MessageID: ids.New(), Sequence: 1}, {MessageID: ids.New(), Sequence: 2}, {MessageID: ids.New(), Sequence: 1, Duplicate: true}}
	s.MeterPublished(p.ID, msgs, res)
	if err := meter.Flush(ctx, store); err != nil {
		t.Fatal(err)
	}
	u, err := store.Usage(ctx, p.ID, hour, hour.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	want := meta.Counters{MessagesPublished: 2, BytesIn: 3 + 2 + 2}
	if len(u) != 1 || u[0].Counters != want {
		t.Fatalf("usage %+v, want one hour of %+v", u, want)
	}
}
