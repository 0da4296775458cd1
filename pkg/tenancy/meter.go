package tenancy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"sync"
	"time"

	"github.com/queueshq/queues/pkg/clock"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
)

// UsageStore is where a Meter flushes.
type UsageStore interface {
	AddUsage(ctx context.Context, f meta.UsageFlush) error
}

// FlushEvery is how often a Meter flushes by default: well inside the 10 s within which a
// replica's counts must reach the store.
const FlushEvery = 5 * time.Second

// flushTimeout bounds one flush.
const flushTimeout = 10 * time.Second

// Meter counts each project's use per UTC hour in memory and flushes it to the store.
//
// A flush is idempotent: it takes what was counted since the previous one as a batch with the
// next sequence number of this replica (whose name is random per process), and sends that
// batch, unchanged, until the store accepts it — counts made meanwhile wait for the next
// batch. The store applies a (replica, sequence) pair at most once, so a flush whose answer was
// lost and that is sent again counts once. A crashed replica loses at most what it counted
// since its last accepted flush.
type Meter struct {
	clk     clock.Clock
	replica string

	mu      sync.Mutex
	cur     map[hourKey]*meta.Counters
	seq     uint64
	pending *meta.UsageFlush // sent but not accepted yet

	flushMu sync.Mutex // one flush at a time
}

type hourKey struct {
	project ids.ID
	hour    int64
}

// NewMeter returns a meter named replica ("" picks a random name: one per process).
func NewMeter(clk clock.Clock, replica string) *Meter {
	if replica == "" {
		var b [8]byte
		_, _ = rand.Read(b[:])
		replica = hex.EncodeToString(b[:])
	}
	return &Meter{clk: clk, replica: replica, cur: map[hourKey]*meta.Counters{}}
}

// Replica is the meter's replica name.
func (m *Meter) Replica() string { return m.replica }

// Add counts c for project in the current hour. A nil Meter counts nothing.
func (m *Meter) Add(project ids.ID, c meta.Counters) {
	if m == nil || project.IsZero() {
		return
	}
	k := hourKey{project, meta.HourOf(m.clk.Now()).Unix()}
	m.mu.Lock()
	p := m.cur[k]
	if p == nil {
		p = &meta.Counters{}
		m.cur[k] = p
	}
	p.Add(c)
	m.mu.Unlock()
}

// Flush sends the pending batch, or makes one of what was counted since, to the store. On
// an error the batch stays pending and the next Flush sends it again.
func (m *Meter) Flush(ctx context.Context, store UsageStore) error {
	m.flushMu.Lock()
	defer m.flushMu.Unlock()
	m.mu.Lock()
	if m.pending == nil && len(m.cur) > 0 {
		m.seq++
		f := &meta.UsageFlush{Replica: m.replica, Seq: m.seq}
		for k, c := range m.cur {
			f.Hours = append(f.Hours, meta.UsageHour{Project: k.project, Hour: time.Unix(k.hour, 0).UTC(), Counters: *c})
		}
		m.cur = map[hourKey]*meta.Counters{}
		m.pending = f
	}
	f := m.pending
	m.mu.Unlock()
	if f == nil {
		return nil
	}
	if err := store.AddUsage(ctx, *f); err != nil {
		return err
	}
	m.mu.Lock()
	m.pending = nil
	m.mu.Unlock()
	return nil
}

// Run flushes every interval (FlushEvery when <= 0) until ctx ends, then flushes once more
// (bounded by 5 s) so a graceful stop loses nothing.
func (m *Meter) Run(ctx context.Context, store UsageStore, every time.Duration, log *slog.Logger) {
	if log == nil {
		log = slog.Default()
	}
	if every <= 0 {
		every = FlushEvery
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			for range 2 { // the pending batch, then what was counted after it
				if err := m.Flush(fctx, store); err != nil {
					log.Warn("usage: final flush failed", "err", err)
					return
				}
			}
			return
		case <-t.C:
			// A slow store delays the next flush (ticks are dropped meanwhile) rather than
			// cutting this one short: a cut flush is sent again whole anyway.
			fctx, cancel := context.WithTimeout(ctx, flushTimeout)
			if err := m.Flush(fctx, store); err != nil && ctx.Err() == nil {
				log.Warn("usage: flush failed; it is retried", "err", err)
			}
			cancel()
		}
	}
}
