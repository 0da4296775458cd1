package pusher

// The fleet balancing of one replica: renewing, taking and dropping the per-subscription
// leases so each replica holds its fair share.

import (
	"context"
	"errors"
	"hash/fnv"
	"slices"
	"time"

	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
)

// balance renews the leases held, drops subscriptions that are gone or beyond this replica's
// share, and takes free ones up to the share.
func (p *Pusher) balance(ctx context.Context, subs []meta.Subscription, fresh bool, members int) {
	byQueue := make(map[ids.ID]meta.Subscription, len(subs))
	for _, s := range subs {
		byQueue[s.QueueID] = s
	}
	p.mu.Lock()
	held := make([]*worker, 0, len(p.workers))
	for _, w := range p.workers {
		held = append(held, w)
	}
	p.mu.Unlock()
	for _, w := range held {
		s, ok := byQueue[w.qid]
		if !ok {
			p.drop(w, true)
			continue
		}
		renewed, err := p.cfg.Coordinator.Renew(ctx, w.qid, p.cfg.Member, w.token, p.cfg.LeaseTTL)
		switch {
		case err != nil:
			p.log.Warn("renewing a lease failed", "queue", w.qid.String(), "err", err)
		case !renewed:
			p.log.Warn("lease lost; stopping pushes for the subscription", "queue", w.qid.String())
			p.drop(w, false)
		default:
			w.leaseUntil.Store(int64(time.Since(p.start) + p.cfg.LeaseTTL))
			w.apply(ctx, s, fresh)
		}
	}
	share := (len(subs) + members - 1) / max(members, 1)
	p.mu.Lock()
	n := len(p.workers)
	var extra []*worker
	if n > share {
		ws := make([]*worker, 0, n)
		for _, w := range p.workers {
			ws = append(ws, w)
		}
		// Give back the subscriptions this replica least prefers.
		slices.SortFunc(ws, func(a, b *worker) int { return -cmpU(p.pref(a.qid), p.pref(b.qid)) })
		extra = ws[:n-share]
	}
	p.mu.Unlock()
	for _, w := range extra {
		p.drop(w, true)
	}
	if n >= share {
		p.m.leases.Set(float64(len(p.Held())))
		p.countHealth()
		return
	}
	free := make([]meta.Subscription, 0, len(subs))
	p.mu.Lock()
	for _, s := range subs {
		if _, ok := p.workers[s.QueueID]; !ok {
			free = append(free, s)
		}
	}
	p.mu.Unlock()
	slices.SortFunc(free, func(a, b meta.Subscription) int { return cmpU(p.pref(a.QueueID), p.pref(b.QueueID)) })
	for _, s := range free {
		if n >= share || ctx.Err() != nil {
			break
		}
		tok, ok, err := p.cfg.Coordinator.Acquire(ctx, s.QueueID, p.cfg.Member, p.cfg.LeaseTTL)
		if err != nil {
			p.log.Warn("acquiring a lease failed", "queue", s.QueueID.String(), "err", err)
			continue
		}
		if !ok {
			continue
		}
		if p.startWorker(ctx, s, tok) {
			n++
		}
	}
	p.m.leases.Set(float64(len(p.Held())))
	p.countHealth()
}

func cmpU(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// pref orders subscriptions differently on every replica (rendezvous hashing), so replicas
// reach for different ones first.
func (p *Pusher) pref(q ids.ID) uint64 {
	h := fnv.New64a()
	h.Write([]byte(p.cfg.Member))
	h.Write(q[:])
	return h.Sum64()
}

// startWorker begins pushing for s under lease token tok.
func (p *Pusher) startWorker(ctx context.Context, s meta.Subscription, tok int64) bool {
	q, err := p.engineQueue(ctx, s.QueueID)
	if errors.Is(err, meta.ErrNotFound) {
		// The queue was deleted and its subscription outlived it: finish the delete.
		if err := p.cfg.Store.DeleteSubscription(ctx, s.QueueID); err != nil && !errors.Is(err, meta.ErrNotFound) {
			p.log.Warn("deleting the subscription of a deleted queue failed", "queue", s.QueueID.String(), "err", err)
		}
		_ = p.cfg.Coordinator.Release(ctx, s.QueueID, p.cfg.Member, tok)
		return false
	}
	if err != nil {
		p.log.Warn("reading a subscription's queue failed", "queue", s.QueueID.String(), "err", err)
		_ = p.cfg.Coordinator.Release(ctx, s.QueueID, p.cfg.Member, tok)
		return false
	}
	w := &worker{p: p, qid: s.QueueID, token: tok, flow: newFlow(s.MaxInFlight), limits: newLimiter(), settling: make(chan struct{}, maxSettling), changed: make(chan struct{}), gen: -1, done: make(chan struct{})}
	w.sub, w.q = s, q
	w.leaseUntil.Store(int64(time.Since(p.start) + p.cfg.LeaseTTL))
	w.ctx, w.cancel = context.WithCancel(context.Background())
	p.mu.Lock()
	p.workers[s.QueueID] = w
	p.mu.Unlock()
	p.shares.join(s.QueueID, s.ProjectID)
	go w.run()
	if p.OnApplied != nil {
		p.OnApplied(s)
	}
	return true
}

// drop stops a worker; its pushes in progress finish in the background, then the lease is
// released (when release, and the lease is still ours).
func (p *Pusher) drop(w *worker, release bool) {
	p.mu.Lock()
	mine := p.workers[w.qid] == w
	if mine {
		delete(p.workers, w.qid)
	}
	p.mu.Unlock()
	if mine {
		p.shares.leave(w.qid)
	}
	w.cancel()
	go func() {
		w.wait()
		if release && !p.killed.Load() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = p.cfg.Coordinator.Release(ctx, w.qid, p.cfg.Member, w.token)
		}
	}()
}

// stopAll is the graceful stop: every worker stops receiving; pushes in progress get Grace to
// finish; leases are released and the replica leaves the fleet.
func (p *Pusher) stopAll() {
	p.mu.Lock()
	ws := make([]*worker, 0, len(p.workers))
	for _, w := range p.workers {
		ws = append(ws, w)
	}
	p.workers = map[ids.ID]*worker{}
	p.mu.Unlock()
	for _, w := range ws {
		p.shares.leave(w.qid)
		w.cancel()
	}
	done := make(chan struct{})
	go func() {
		for _, w := range ws {
			w.wait()
		}
		close(done)
	}()
	t := time.NewTimer(p.cfg.Grace)
	select {
	case <-done:
		t.Stop()
	case <-t.C:
		p.ioStop()
		<-done
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, w := range ws {
		_ = p.cfg.Coordinator.Release(ctx, w.qid, p.cfg.Member, w.token)
	}
	_ = p.cfg.Coordinator.Leave(ctx, p.cfg.Member)
	p.m.leases.Set(0)
}
