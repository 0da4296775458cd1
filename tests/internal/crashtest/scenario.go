package crashtest

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Run is one load-kill-restart-drain run on one standard queue: NewRun, then Load (which ends
// with the kill), Drain on the restarted process, and Check.
type Run struct {
	queueID string
	h       *history
	c       *client

	heldAtKill map[string]delivery // messages held in flight at the kill
	drained    bool
	drainTime  time.Duration
}

// NewRun gets a token from srv and creates a standard queue with a 2 s visibility timeout on
// the process p.
func NewRun(t *testing.T, hc *http.Client, srv Server, p *Proc) *Run {
	t.Helper()
	token := srv.Token(t, hc, p.URL)
	var q queueAnswer
	if _, err := Call(t.Context(), hc, http.MethodPost, p.URL+"/v1/queues", token,
		map[string]any{"name": "kill", "type": "standard", "visibilityTimeoutSeconds": visibility}, &q); err != nil {
		t.Fatal(err)
	}
	h := newHistory()
	return &Run{queueID: q.ID, h: h, c: &client{hc: hc, token: token, base: p.URL, queueURL: p.URL + "/v1/queues/" + q.ID, h: h}}
}

// LoadFigures is what Load saw before the kill.
type LoadFigures struct {
	Duration       time.Duration // from the load's start to the kill
	KilledAt       time.Time
	Acked          int   // acknowledged sends
	UnknownSends   int   // sends with no 200
	Received       int   // deliveries
	Acks204        int   // acks answered 204
	InFlightAtKill int64 // requests started and not yet answered
	HeldAtKill     int   // messages held in flight at the kill
}

// Load runs the load on proc and kills proc with SIGKILL: producers send batches of unique bodies,
// consumers receive, ack most and hold some. The kill comes once targetAcked sends are
// acknowledged and minHeld deliveries are held, or after loadFor, while every worker is still
// busy.
func (r *Run) Load(t *testing.T, proc *Proc) LoadFigures {
	ctx := t.Context()
	c, h := r.c, r.h
	var killed atomic.Bool
	var ackedTotal, heldTotal atomic.Int64
	progress := make(chan struct{}, 1)
	poke := func() {
		select {
		case progress <- struct{}{}:
		default:
		}
	}
	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			for seq := 0; seq < maxBatches && !killed.Load(); seq++ {
				bodies := make([]string, batch)
				for i := range bodies {
					bodies[i] = fmt.Sprintf("p%d-%d", p, seq*batch+i)
				}
				n, _ := c.send(ctx, bodies)
				ackedTotal.Add(int64(n))
				poke()
			}
		})
	}
	for range consumers {
		wg.Go(func() {
			firsts := 0
			hold := func(m receivedMsg) bool {
				if m.ReceiveCount != 1 {
					return false // a held message that came back is acked
				}
				firsts++
				return firsts%holdEvery == 0
			}
			for i := 0; i < maxReceives && !killed.Load(); i++ {
				toAck, _ := c.receive(ctx, 1, false, hold)
				h.lockedDo(func() { heldTotal.Store(int64(h.held)) })
				c.ackAll(ctx, toAck)
				poke()
			}
		})
	}
	loadDone := make(chan struct{})
	go func() { wg.Wait(); close(loadDone) }()
	loadStart := time.Now()
	timeout := time.After(loadFor)
	for waiting := true; waiting; {
		select {
		case <-progress:
			waiting = ackedTotal.Load() < targetAcked || heldTotal.Load() < minHeld
		case <-timeout:
			waiting = false
		case <-loadDone:
			waiting = false
		}
	}
	inFlightAtKill := c.inFlight.Load()
	killed.Store(true)
	proc.Kill()
	killedAt := time.Now()
	<-loadDone // every request to the dead process fails at once

	h.mu.Lock()
	defer h.mu.Unlock()
	// Held at the kill: the last delivery of a message before the kill was held, and its
	// deadline had not passed.
	last := map[string]delivery{}
	for _, d := range h.deliveries {
		if l, ok := last[d.body]; !ok || d.rc > l.rc {
			last[d.body] = d
		}
	}
	r.heldAtKill = map[string]delivery{}
	for b, d := range last {
		if d.held && d.deadline.After(killedAt) {
			r.heldAtKill[b] = d
		}
	}
	return LoadFigures{
		Duration:       killedAt.Sub(loadStart),
		KilledAt:       killedAt,
		Acked:          len(h.ackOrder),
		UnknownSends:   h.unknownSends,
		Received:       len(h.deliveries),
		Acks204:        h.acks204,
		InFlightAtKill: inFlightAtKill,
		HeldAtKill:     len(r.heldAtKill),
	}
}

// Drain receives and acks on the restarted process p until every acknowledged send was seen
// and every held message came back, the queue being empty, or until the queue has been empty
// and quiet for drainQuiet, or for drainFor at most.
func (r *Run) Drain(t *testing.T, p *Proc) {
	c, h, heldAtKill := r.c, r.h, r.heldAtKill
	c.base, c.queueURL = p.URL, p.URL+"/v1/queues/"+r.queueID

	// done reports whether every acknowledged send was seen and every held message came back.
	done := func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		seen := map[string]bool{}
		back := map[string]bool{}
		for _, d := range h.deliveries {
			seen[d.body] = true
			if hd, ok := heldAtKill[d.body]; ok && d.afterKill && d.rc > hd.rc {
				back[d.body] = true
			}
		}
		for _, b := range h.ackOrder {
			if !seen[b] {
				return false
			}
		}
		return len(back) == len(heldAtKill)
	}
	drainStart := time.Now()
	dctx, cancel := context.WithTimeout(t.Context(), drainFor)
	defer cancel()
	var drained atomic.Bool
	var lastDelivery atomic.Int64
	lastDelivery.Store(drainStart.UnixNano())
	var dwg sync.WaitGroup
	for range drainers {
		dwg.Go(func() {
			for i := 0; i < maxReceives && !drained.Load() && dctx.Err() == nil; i++ {
				toAck, answered := c.receive(dctx, visibility, true, nil)
				c.ackAll(dctx, toAck)
				if len(toAck) > 0 {
					lastDelivery.Store(time.Now().UnixNano())
				}
				if !answered || len(toAck) > 0 {
					continue
				}
				// Nothing came for a whole wait. Finished once the queue is empty and
				// everything expected was seen (an answer lost at the kill may have left
				// messages in flight; they come back at their deadline and the next wait
				// takes them), or once it has been empty and quiet for drainQuiet: what is
				// missing then is not coming.
				qa, err := c.counts(dctx)
				if err != nil || qa.Counts.Visible != 0 || qa.Counts.InFlight != 0 || qa.Counts.Delayed != 0 {
					continue
				}
				if done() || time.Since(time.Unix(0, lastDelivery.Load())) > drainQuiet {
					drained.Store(true)
				}
			}
		})
	}
	dwg.Wait()
	r.drainTime = time.Since(drainStart)
	r.drained = drained.Load()
}

// Figures is what Check counted on the whole history.
type Figures struct {
	Acked        int // acknowledged sends
	UnknownSends int // sends with no 200
	Recovered    int // messages whose send's outcome was unknown, received
	FailedSends  int // messages listed in a 200's failed
	Deliveries   int
	Messages     int // distinct bodies received
	Redeliveries int
	Acks204      int
	Acks410      int
	AckUnknown   int
	HeldAtKill   int // messages held in flight at the kill
	Back         int // of those, came back after the restart
	Lost         int
	Unexpected   int
	AfterAck     int // deliveries after a 204 to an ack
	Overlap      int // deliveries before the previous one's deadline
	Drain        time.Duration
}

// Check runs the checks on the whole history, reporting each violation with t.Errorf.
func (r *Run) Check(t *testing.T) Figures {
	h, heldAtKill, drainTime := r.h, r.heldAtKill, r.drainTime
	h.mu.Lock()
	defer h.mu.Unlock()
	byBody := map[string][]delivery{}
	for _, d := range h.deliveries {
		byBody[d.body] = append(byBody[d.body], d)
	}
	var lost []string
	for _, b := range h.ackOrder {
		if len(byBody[b]) == 0 {
			lost = append(lost, b)
		}
	}
	if len(lost) > 0 {
		t.Errorf("lost: %d of %d acknowledged sends never received (drain %s): %s", len(lost), len(h.ackOrder), drainTime.Round(time.Millisecond), firstN(lost, 50))
	}
	redeliveries, recovered, unexpected, afterAck, overlap, notBack := 0, 0, 0, 0, 0, 0
	for b, ds := range byBody {
		slices.SortFunc(ds, func(x, y delivery) int { return x.rc - y.rc })
		redeliveries += len(ds) - 1
		id, wasAcked := h.acked[b]
		switch {
		case !h.attempted[b]:
			unexpected++
			t.Errorf("unexpected: received %q (%s), which was never sent", b, ds[0].id)
		case !wasAcked:
			recovered++ // its send's outcome was unknown; receiving it is allowed
		}
		for i, d := range ds {
			if wasAcked && d.id != id {
				unexpected++
				t.Errorf("unexpected: %q received as message %s, its send answered %s", b, d.id, id)
			}
			if i > 0 && d.id != ds[0].id {
				unexpected++
				t.Errorf("unexpected: %q received as two messages, %s and %s (stored twice)", b, ds[0].id, d.id)
			}
			if at, ok := h.settled[b]; ok && d.start.After(at) {
				afterAck++
				t.Errorf("redelivered after ack: %q (%s) receiveCount %d received at %s, its ack answered 204 at %s",
					b, d.id, d.rc, d.start.Format(time.RFC3339Nano), at.Format(time.RFC3339Nano))
			}
			if i == 0 {
				continue
			}
			prev := ds[i-1]
			if d.rc == prev.rc {
				overlap++
				t.Errorf("delivered twice with receiveCount %d: %q (%s)", d.rc, b, d.id)
			} else if d.end.Before(prev.deadline) {
				// Nobody released or extended anything: the next delivery may only come after
				// the previous one's deadline.
				overlap++
				t.Errorf("lease overlap: %q (%s) receiveCount %d (after the restart: %v) answered at %s, before the deadline %s of receiveCount %d (after the restart: %v)",
					b, d.id, d.rc, d.afterKill, d.end.Format(time.RFC3339Nano), prev.deadline.Format(time.RFC3339Nano), prev.rc, prev.afterKill)
			}
		}
	}
	for b, hd := range heldAtKill {
		var back *delivery
		for _, d := range byBody[b] {
			if d.afterKill && d.rc > hd.rc {
				back = &d
				break
			}
		}
		switch {
		case back == nil:
			notBack++
			if notBack <= 20 {
				t.Errorf("held in flight at the kill and never came back: %q (%s), receiveCount %d, deadline %s", b, hd.id, hd.rc, hd.deadline.Format(time.RFC3339Nano))
			}
		case back.rc < 2:
			t.Errorf("held message %q came back with receiveCount %d, want ≥ 2", b, back.rc)
		case back.end.Before(hd.deadline):
			t.Errorf("held message %q came back at %s, before its deadline %s", b, back.end.Format(time.RFC3339Nano), hd.deadline.Format(time.RFC3339Nano))
		}
	}
	if len(heldAtKill) == 0 {
		t.Errorf("no message was held in flight at the kill: nothing shows that in-flight messages come back at their deadline")
	}
	if notBack > 0 {
		t.Errorf("%d of %d messages held in flight at the kill never came back", notBack, len(heldAtKill))
	}
	qa, err := r.c.counts(t.Context())
	if err != nil {
		t.Errorf("final GET queue: %v", err)
	} else if qa.Counts.Visible != 0 || qa.Counts.InFlight != 0 || qa.Counts.Delayed != 0 {
		t.Errorf("final counts: visible %d, inFlight %d, delayed %d; want all 0", qa.Counts.Visible, qa.Counts.InFlight, qa.Counts.Delayed)
	}
	if !r.drained {
		t.Errorf("the drain did not finish within %v", drainFor)
	}
	return Figures{
		Acked: len(h.ackOrder), UnknownSends: h.unknownSends, Recovered: recovered, FailedSends: h.failedSends,
		Deliveries: len(h.deliveries), Messages: len(byBody), Redeliveries: redeliveries,
		Acks204: h.acks204, Acks410: h.ackStale, AckUnknown: h.ackUnknown,
		HeldAtKill: len(heldAtKill), Back: len(heldAtKill) - notBack,
		Lost: len(lost), Unexpected: unexpected, AfterAck: afterAck, Overlap: overlap,
		Drain: drainTime,
	}
}

// KillUnderLoad is the whole scenario on srv, its logs in logDir: start the server, create the
// queue, run the load and kill it, start it again on the same storage, drain, check, and log
// the figures. what names the server in messages ("API", "serve").
func KillUnderLoad(t *testing.T, srv Server, logDir, what string) {
	t.Helper()
	testStart := time.Now()
	hc := NewHTTPClient(t)

	p1, ready1 := Start(t, hc, srv, logDir, "api1")
	run := NewRun(t, hc, srv, p1)

	load := run.Load(t, p1)
	t.Logf("load: %v; acknowledged sends %d, unknown sends %d, received %d, acks 204 %d, requests in flight at the kill %d, held in flight at the kill %d",
		load.Duration.Round(time.Millisecond), load.Acked, load.UnknownSends, load.Received, load.Acks204, load.InFlightAtKill, load.HeldAtKill)
	if load.Acked < 100 {
		t.Fatalf("only %d acknowledged sends before the kill: the load did not run (first %s log:\n%s)", load.Acked, what, TailOf(p1.Log))
	}
	// Restart on the same storage, then drain.
	p2, ready2 := Start(t, hc, srv, logDir, "api2")
	t.Logf("restart: ready %v after start (first start %v), %v after the kill", ready2.Round(time.Millisecond), ready1.Round(time.Millisecond), time.Since(load.KilledAt).Round(time.Millisecond))
	run.Drain(t, p2)

	f := run.Check(t)
	if t.Failed() {
		t.Logf("restarted %s log:\n%s", what, TailOf(p2.Log))
	}
	t.Logf("figures: acknowledged sends %d (before the kill %d), unknown sends %d (recovered %d), failed in a 200 %d; "+
		"received %d deliveries of %d messages, redeliveries %d; acks 204 %d, 410 %d, unknown %d; "+
		"held in flight at the kill %d, back %d; lost %d, unexpected %d, redelivered after ack %d, lease overlaps %d; "+
		"restart to ready %v; drain %v; test %v",
		f.Acked, load.Acked, f.UnknownSends, f.Recovered, f.FailedSends,
		f.Deliveries, f.Messages, f.Redeliveries, f.Acks204, f.Acks410, f.AckUnknown,
		f.HeldAtKill, f.Back, f.Lost, f.Unexpected, f.AfterAck, f.Overlap,
		ready2.Round(time.Millisecond), f.Drain.Round(time.Millisecond), time.Since(testStart).Round(time.Millisecond))
}
