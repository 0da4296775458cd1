package tenancy

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/clock"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/meta/memmeta"
)

// lossy applies a flush and then reports a failure, as a store whose answer was lost does.
type lossy struct {
	*memmeta.Store
	lose int // how many more flushes to "lose"
}

func (l *lossy) AddUsage(ctx context.Context, f meta.UsageFlush) error {
	if err := l.Store.AddUsage(ctx, f); err != nil {
		return err
	}
	if l.lose > 0 {
		l.lose--
		return errors.New("connection reset")
	}
	return nil
}

func setup(t *testing.T) (*memmeta.Store, ids.ID) {
	t.Helper()
	s := memmeta.New()
	p := meta.Project{ID: ids.New(), Name: "p", CreatedAt: time.Now()}
	if err := s.CreateProject(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	return s, p.ID
}

func usage(t *testing.T, s *memmeta.Store, p ids.ID, from time.Time) []meta.UsageHour {
	t.Helper()
	u, err := s.Usage(t.Context(), p, from, from.Add(3*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestMeterRetriedFlushCountsOnce: a flush whose answer is lost is sent again unchanged, and
// the store counts it once; counts made meanwhile go in the next flush; hours stay apart.
func TestMeterRetriedFlushCountsOnce(t *testing.T) {
	s, p := setup(t)
	st := &lossy{Store: s, lose: 2}
	h0 := time.Date(2026, 3, 14, 15, 59, 0, 0, time.UTC)
	clk := clock.NewFake(h0)
	m := NewMeter(clk, "")
	m.Add(p, meta.Counters{MessagesSent: 2, BytesIn: 10})
	m.Add(p, meta.Counters{MessagesSent: 1, BytesIn: 5})
	for range 2 {
		if err := m.Flush(t.Context(), st); err == nil {
			t.Fatal("the lost flush reported success")
		}
		m.Add(p, meta.Counters{Requests: 1}) // counted while the flush is retried
	}
	clk.Advance(2 * time.Minute) // the next hour
	m.Add(p, meta.Counters{Requests: 5})
	for range 2 { // the pending batch, then the rest
		if err := m.Flush(t.Context(), st); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Flush(t.Context(), st); err != nil { // nothing left: no empty flush
		t.Fatal(err)
	}
	u := usage(t, s, p, h0.Truncate(time.Hour))
	if len(u) != 2 {
		t.Fatalf("usage %+v, want two hours", u)
	}
	if u[0].MessagesSent != 3 || u[0].BytesIn != 15 || u[0].Requests != 2 || u[1].Requests != 5 {
		t.Fatalf("usage %+v: want 3 sent, 15 bytes and 2 requests, then 5 requests", u)
	}
}

// TestMeterRun: Run flushes on its period and once more when stopped.
func TestMeterRun(t *testing.T) {
	s, p := setup(t)
	m := NewMeter(clock.Real{}, "r")
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx, s, time.Hour, nil) }()
	m.Add(p, meta.Counters{MessagesAcked: 4})
	cancel()
	<-done
	if u := usage(t, s, p, time.Now().Add(-time.Hour)); len(u) != 1 || u[0].MessagesAcked != 4 {
		t.Fatalf("after stop: %+v", u)
	}
}
