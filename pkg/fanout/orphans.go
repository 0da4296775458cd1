package fanout

import (
	"context"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
)

// dropOrphans unbinds, in the engine, the bindings the metadata store has not had for
// orphanGrace, and answers the others. The API deletes a binding from the store before it
// unbinds it in the engine, and binds in the engine before it stores the binding, so a
// binding in the engine alone is either being created (young) or left by a crash (old). The
// store is read at most once per orphanEvery per hold.
func (h *holder) dropOrphans(ctx context.Context, bs []engine.Binding) []engine.Binding {
	r := h.r
	now := r.Clock.Now()
	if r.Bindings == nil || (!h.orphansChecked.IsZero() && now.Sub(h.orphansChecked) < orphanEvery) {
		return bs
	}
	stored, err := r.Bindings.TopicBindings(ctx, h.id)
	if err != nil {
		_ = h.fail("orphans", err)
		return bs
	}
	h.orphansChecked = now
	known := make(map[ids.ID]bool, len(stored))
	for _, b := range stored {
		known[b.ID] = true
	}
	kept := bs[:0:0]
	for _, b := range bs {
		r.mu.Lock()
		since, seen := r.missing[b.ID]
		switch {
		case known[b.ID]:
			delete(r.missing, b.ID)
		case !seen:
			r.missing[b.ID] = now
		}
		r.mu.Unlock()
		if !known[b.ID] && seen && now.Sub(since) >= orphanGrace {
			h.unbind(ctx, b, "the metadata store no longer has it")
			continue
		}
		kept = append(kept, b)
	}
	return kept
}

// unbind removes an orphaned binding from the engine (and its high-water mark in its queue).
func (h *holder) unbind(ctx context.Context, b engine.Binding, why string) {
	r := h.r
	if err := r.Engine.Unbind(ctx, h.topic, b.ID, b.Queue); err != nil {
		_ = h.fail("unbind", err)
		return
	}
	r.mu.Lock()
	delete(r.missing, b.ID)
	r.mu.Unlock()
	r.metrics.orphans.Inc()
	r.Log.Info("fanout: unbound an orphaned binding", "topic", h.id.String(), "binding", b.ID.String(),
		"queue", b.Queue.String(), "why", why)
}
