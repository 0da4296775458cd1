package tenancy

import (
	"context"
	"log/slog"
	"time"

	"github.com/queueshq/queues/pkg/clock"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
)

// StoredBytesReader reads a project's stored payload bytes (the engine's count).
type StoredBytesReader interface {
	StoredBytes(ctx context.Context, project ids.ID) (int64, error)
}

// SampleStore is what a Sampler reads projects from and adds samples to.
type SampleStore interface {
	ListProjects(ctx context.Context, page meta.Page) ([]meta.Project, string, error)
	AddStoredSample(ctx context.Context, project ids.ID, hour time.Time, slot int, byteHours int64) error
}

// SampleEvery is the storedByteHours sampling period: one slot of the hour each.
const SampleEvery = time.Minute

// SampleStored integrates stored bytes over the hour: for the current minute (the slot) it
// adds each project's stored bytes × 1/60 hour. Every replica may run it every minute; the
// store adds a slot once, so the total does not grow with the number of replicas.
func SampleStored(ctx context.Context, clk clock.Clock, store SampleStore, reader StoredBytesReader) error {
	now := clk.Now().UTC()
	hour, slot := meta.HourOf(now), now.Minute()
	page := meta.Page{Limit: meta.MaxLimit}
	for {
		ps, next, err := store.ListProjects(ctx, page)
		if err != nil {
			return err
		}
		for _, p := range ps {
			b, err := reader.StoredBytes(ctx, p.ID)
			if err != nil {
				return err
			}
			perSlot := int64(SampleEvery / time.Second)
			if v := (b*perSlot + 1800) / 3600; v > 0 {
				if err := store.AddStoredSample(ctx, p.ID, hour, slot, v); err != nil {
					return err
				}
			}
		}
		if next == "" {
			return nil
		}
		page.Cursor = next
	}
}

// RunSampler calls SampleStored every SampleEvery until ctx ends.
func RunSampler(ctx context.Context, clk clock.Clock, store SampleStore, reader StoredBytesReader, log *slog.Logger) {
	t := time.NewTicker(SampleEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := SampleStored(ctx, clk, store, reader); err != nil && ctx.Err() == nil {
				log.Warn("usage: sampling stored bytes failed", "err", err)
			}
		}
	}
}
