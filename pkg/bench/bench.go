// Package bench is the load generator behind `queues bench`: producers and consumers against
// any running Queues service over its HTTP API, in phases —
//
//	produce  send Count messages to an empty queue
//	consume  drain a queue holding Count messages: receive, then acknowledge each batch
//	e2e      consumers running while producers send Count messages
//	wakeup   one consumer long-polling an empty queue, one message sent at a time:
//	         how long a waiting receive takes to deliver a new message
//	push     producers send Count messages to a queue with a push subscription whose
//	         endpoint is a receiver the generator runs (signatures verified, every batch
//	         acknowledged by its answer); the service's pusher must be running and allowed
//	         to push to 127.0.0.1 (QUEUES_PUSH_ALLOW_PRIVATE)
//	publish  producers publish Count messages to a topic bound to Bindings queues, each
//	         drained by its own consumers; then publish → delivery one message at a time
//	neighbour project B's ordinary send/receive/ack, alone and then beside a project A the
//	         phase creates (operator credential) and runs at all its limits: see
//	         NeighbourConfig
//
// Each phase reports messages/s, request latency percentiles (all requests and per route),
// and, for e2e and wakeup, send → delivery latency from a timestamp written into each body.
// Every body also carries its sequence number, so the report counts duplicates and losses.
// Every phase is bounded by Count and by Duration. The generator creates its own queues and
// deletes them at the end.
package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	qclient "github.com/queueshq/queues/sdk/go/client"
)

// Phases known to Run, in the order they run by default.
const (
	PhaseProduce = "produce"
	PhaseConsume = "consume"
	PhaseE2E     = "e2e"
	PhaseWakeup  = "wakeup"
	PhasePush    = "push"
)

// headerLen is the length of the header written at the start of each body:
// 10 digits of sequence number, a space, 19 digits of send time (unix ns), a space.
const headerLen = 31

// MinSize is the smallest message body the generator sends (its header).
const MinSize = headerLen + 1

// Config describes a run.
type Config struct {
	URL   string // the service's base URL
	Token string // a project token with queues:admin, messages:send and messages:receive

	QueueType string // "standard" (default) or "fifo"
	Size      int    // body bytes (default 64, at least MinSize)
	Batch     int    // messages per send, and maxMessages per receive (1–10; default 10)
	// InFlight is the number of requests in flight in a phase (default 16): produce runs
	// InFlight producers, consume InFlight consumers, e2e a third of them producers and the
	// rest consumers (each batch takes one send and two consumer requests, receive and ack,
	// so that split keeps the consumers up with the producers instead of building a backlog
	// that would measure queueing time as delivery latency). Producers and Consumers, when
	// set, override it.
	InFlight  int
	Producers int
	Consumers int
	Count     int           // messages per phase (default 50,000)
	Duration  time.Duration // bound on each phase (default 60 s)
	Phases    []string      // default produce, consume, e2e
	// Wait is the consumers' long-poll waitSeconds in consume and e2e (default 1).
	Wait int
	// Groups is how many message groups fifo sends are spread over (default 64).
	Groups int
	// Wakeups is how many messages the wakeup phase sends (default 200).
	Wakeups int
	// Progress, when set, is called about 4 times a second with a one-line status.
	Progress func(line string)
	// Prefix names the queues the run creates (default "bench").
	Prefix string
	// PushListen is where the push phase's receiver listens (default 127.0.0.1:0); the
	// pusher must reach it. The neighbour phase's slow endpoint listens there too.
	PushListen string
	// Neighbour configures the neighbour phase.
	Neighbour NeighbourConfig
	// Stream makes the consumers of consume and e2e receive over receive streams (stream.go).
	Stream bool
	// StreamWindow is each stream's credit in batches (default 4).
	StreamWindow int
	// Bindings is how many queues the publish phase binds to its topic (default 1).
	Bindings int
	// Raw drives produce, consume and e2e with the generator's own raw HTTP/1.1 client
	// (raw.go, client.go) instead of the Go SDK (sdk.go), for diagnosis: the difference
	// between the two is the SDK's cost.
	Raw bool
	// SendBatch makes the SDK's producers send with SendBatch requests (one in flight per
	// producer) instead of one Producer on the send stream.
	SendBatch bool
	// SendWindow is the Producer's Window, its batches in flight (0: the SDK's
	// DefaultProducerWindow, what a user gets).
	SendWindow int
	// Poll makes the SDK's consumers poll (ConsumeOptions.Polling) instead of using the
	// receive stream.
	Poll bool
	// CPUPIDs are the processes (API, Redis, pusher, serve…) whose CPU per message each
	// timed phase reports, beside the generator's own (cpu.go).
	CPUPIDs []NamedPID
}

func (c *Config) defaults() error {
	if c.URL == "" {
		return errors.New("no URL")
	}
	if c.QueueType == "" {
		c.QueueType = "standard"
	}
	if c.QueueType != "standard" && c.QueueType != "fifo" {
		return fmt.Errorf("queue type %q: must be standard or fifo", c.QueueType)
	}
	if c.Size == 0 {
		c.Size = 64
	}
	if c.Size < MinSize || c.Size > maxSize {
		return fmt.Errorf("message size %d: must be %d to %d bytes", c.Size, MinSize, maxSize)
	}
	if c.Batch == 0 {
		c.Batch = min(10, maxRequestBytes/(c.Size+messageOverhead))
	}
	if c.Batch < 1 || c.Batch > 10 {
		return fmt.Errorf("batch %d: must be 1 to 10", c.Batch)
	}
	if c.Batch*(c.Size+messageOverhead) > maxRequestBytes {
		return fmt.Errorf("batch %d of %d-byte messages: a send request holds at most 3 MiB; use a smaller batch", c.Batch, c.Size)
	}
	if c.InFlight == 0 {
		c.InFlight = 16
	}
	if c.InFlight < 1 || c.Producers < 0 || c.Consumers < 0 {
		return errors.New("in-flight, producers and consumers must be positive")
	}
	if c.Stream && !c.Raw {
		return errors.New("stream: the receive-stream consumers are the raw path's (-raw); the SDK's Consume uses the stream by default")
	}
	if c.Poll && c.Raw {
		return errors.New("poll: the raw path always polls; poll is for the SDK's consumers")
	}
	if c.SendWindow < 0 {
		return errors.New("send window must be positive")
	}
	if c.SendWindow == 0 {
		c.SendWindow = qclient.DefaultProducerWindow
	}
	if c.Raw && c.SendBatch {
		return errors.New("sendbatch: the raw path always sends with requests; sendbatch is for the SDK's producers")
	}
	if c.StreamWindow <= 0 {
		c.StreamWindow = 4
	}
	if c.Count == 0 {
		c.Count = 50_000
	}
	if c.Count < 1 || c.Count > 9_999_999_999 {
		return fmt.Errorf("count %d: must be 1 to 9,999,999,999", c.Count)
	}
	if c.Duration == 0 {
		c.Duration = 60 * time.Second
	}
	if c.Duration < 0 {
		return errors.New("duration must be positive")
	}
	if len(c.Phases) == 0 {
		c.Phases = []string{PhaseProduce, PhaseConsume, PhaseE2E}
	}
	for _, p := range c.Phases {
		switch p {
		case PhaseProduce, PhaseConsume, PhaseE2E, PhaseWakeup, PhasePush, PhaseNeighbour, PhasePublish:
		default:
			return fmt.Errorf("phase %q: must be produce, consume, e2e, wakeup, push, neighbour or publish", p)
		}
	}
	if c.Wait == 0 {
		c.Wait = 1
	}
	if c.Wait < 0 || c.Wait > 20 {
		return errors.New("wait must be 0 to 20 seconds")
	}
	if c.Groups <= 0 {
		c.Groups = 64
	}
	if c.Wakeups <= 0 {
		c.Wakeups = 200
	}
	if c.Bindings == 0 {
		c.Bindings = 1
	}
	if c.Bindings < 1 || c.Bindings > MaxBindings {
		return fmt.Errorf("bindings %d: must be 1 to %d", c.Bindings, MaxBindings)
	}
	if c.Prefix == "" {
		c.Prefix = "bench"
	}
	if c.PushListen == "" {
		c.PushListen = "127.0.0.1:0"
	}
	return nil
}

// clientName says what drives produce, consume and e2e (Report.Client).
func (c *Config) clientName() string {
	switch {
	case c.Raw && c.Stream:
		return "raw-stream"
	case c.Raw:
		return "raw"
	}
	name := "sdk"
	if c.SendBatch {
		name += "-sendbatch"
	}
	if c.Poll {
		name += "-poll"
	}
	return name
}

// workers is how many producers and consumers a phase runs.
func (c *Config) workers(phase string) (producers, consumers int) {
	switch phase {
	case PhaseProduce, PhasePush:
		producers = c.InFlight
	case PhaseConsume:
		consumers = c.InFlight
	case PhaseE2E:
		producers = max((c.InFlight+1)/3, 1)
		consumers = max(c.InFlight-producers, 1)
	case PhasePublish:
		// Each publish feeds Bindings queues: consumers get the larger share, at least one
		// per bound queue.
		producers = max((c.InFlight+1)/3, 1)
		consumers = max(c.InFlight-producers, c.Bindings)
	}
	if c.Producers > 0 && producers > 0 {
		producers = c.Producers
	}
	if c.Consumers > 0 && consumers > 0 {
		consumers = c.Consumers
	}
	return producers, consumers
}

// Run runs the phases in order and deletes the queues it created, also when it fails.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	conns := max(cfg.InFlight, cfg.Producers+cfg.Consumers) + 2
	c := newClient(cfg.URL, cfg.Token, conns)
	defer c.close()
	r := &runner{cfg: cfg, c: c, run: strconv.FormatInt(time.Now().Unix(), 36) + "-" + strconv.FormatUint(rand.Uint64()%1e6, 36),
		cpu: newCPUMeter("", cfg.CPUPIDs)}
	if !cfg.Raw {
		sdk, tr, err := newSDKClient(cfg, &r.cur, &r.sdkThrottled)
		if err != nil {
			return nil, err
		}
		defer tr.CloseIdleConnections()
		r.sdk = sdk
	}
	defer r.cleanup()
	rep := &Report{URL: cfg.URL, QueueType: cfg.QueueType, Size: cfg.Size, Batch: cfg.Batch, InFlight: cfg.InFlight, Count: cfg.Count,
		Client: cfg.clientName()}
	for i, phase := range cfg.Phases {
		var pr *PhaseReport
		var err error
		switch phase {
		case PhaseProduce:
			pr, err = r.produce(ctx, i)
		case PhaseConsume:
			pr, err = r.consume(ctx, i)
		case PhaseE2E:
			pr, err = r.e2e(ctx, i)
		case PhaseWakeup:
			pr, err = r.wakeup(ctx, i)
		case PhasePush:
			pr, err = r.push(ctx, i)
		case PhaseNeighbour:
			pr, err = r.neighbour(ctx, i)
		case PhasePublish:
			pr, err = r.publish(ctx, i)
		}
		if err != nil {
			return rep, fmt.Errorf("%s: %w", phase, err)
		}
		rep.Phases = append(rep.Phases, *pr)
	}
	return rep, nil
}

type runner struct {
	cfg Config
	c   *client
	run string

	// sdk is the Go SDK's client (nil with Config.Raw); cur is the stats its requests are
	// timed into, sdkThrottled its 429 answers.
	sdk          *qclient.Client
	cur          atomic.Pointer[stats]
	sdkThrottled counter
	cpu          *cpuMeter

	created []string
	topics  []string // topics the publish phase created
	// filled is the queue the last produce phase filled completely (consume drains it).
	filled string
}

func (r *runner) newQueue(ctx context.Context, phase string, i int) (string, error) {
	name := fmt.Sprintf("%s-%s-%d-%s", r.cfg.Prefix, r.run, i, phase)
	if err := r.c.createQueue(ctx, name, r.cfg.QueueType, r.cfg.Size); err != nil {
		return "", fmt.Errorf("creating queue %s: %w", name, err)
	}
	r.created = append(r.created, name)
	return name, nil
}

func (r *runner) cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, t := range r.topics {
		_ = r.c.deleteTopic(ctx, t)
	}
	for _, q := range r.created {
		_ = r.c.deleteQueue(ctx, q)
	}
}

// stats collects one phase's counts and latencies.
type stats struct {
	sent, received, acked, dups, requests atomic.Int64
	ackFailed                             atomic.Int64    // the SDK consumers' failed acknowledgements
	firstAckErr                           atomic.Value    // the first of them (an error)
	seen                                  []atomic.Uint32 // deliveries by sequence number
	delivered                             atomic.Int64    // distinct messages delivered
	mu                                    sync.Mutex
	all                                   *hdrhistogram.Histogram
	routes                                map[string]*hdrhistogram.Histogram
	e2e                                   *hdrhistogram.Histogram
}

// Histograms hold microseconds, 1 µs to 10 min, 3 significant digits.
func newHist() *hdrhistogram.Histogram { return hdrhistogram.New(1, 600_000_000, 3) }

func newStats(count int) *stats {
	return &stats{seen: make([]atomic.Uint32, count), all: newHist(), e2e: newHist(),
		routes: map[string]*hdrhistogram.Histogram{"send": newHist(), "receive": newHist(), "ack": newHist(), routeWait: newHist()}}
}

func micros(d time.Duration) int64 { return max(d.Microseconds(), 1) }

// routeWait is the wakeup phase's receives, which wait on an empty queue by design: they
// have a route of their own and stay out of the phase's request latency.
const routeWait = "receive-wait"

func (s *stats) request(route string, d time.Duration) {
	s.requests.Add(1)
	us := micros(d)
	s.mu.Lock()
	if route != routeWait {
		_ = s.all.RecordValue(us)
	}
	_ = s.routes[route].RecordValue(us)
	s.mu.Unlock()
}

// deliver notes a delivered body, received at t: false when its header is not the
// generator's or names a message this phase did not send.
func (s *stats) deliver(body string, t time.Time) bool {
	seq, sentAt, ok := parseHeader(body)
	if !ok || seq >= int64(len(s.seen)) {
		return false
	}
	s.received.Add(1)
	if s.seen[seq].Add(1) > 1 {
		s.dups.Add(1)
	} else {
		s.delivered.Add(1)
	}
	if sentAt > 0 {
		d := t.Sub(time.Unix(0, sentAt))
		s.mu.Lock()
		_ = s.e2e.RecordValue(micros(d))
		s.mu.Unlock()
	}
	return true
}

func summary(h *hdrhistogram.Histogram) Latency {
	ms := func(us int64) float64 { return float64(us) / 1000 }
	return Latency{Count: h.TotalCount(), Mean: h.Mean() / 1000, P50: ms(h.ValueAtQuantile(50)),
		P90: ms(h.ValueAtQuantile(90)), P99: ms(h.ValueAtQuantile(99)), Max: ms(h.Max())}
}

func (s *stats) report(phase, queue string, msgs int64, elapsed time.Duration, complete bool, throttled int64) *PhaseReport {
	pr := &PhaseReport{Phase: phase, Queue: queue, Messages: msgs, Seconds: elapsed.Seconds(),
		Sent: s.sent.Load(), Received: s.received.Load(), Acked: s.acked.Load(), Duplicates: s.dups.Load(),
		Complete: complete, Requests: s.requests.Load(), Throttled: throttled, Lost: -1,
		Latency: summary(s.all), ByRoute: map[string]Latency{}}
	if elapsed > 0 {
		pr.MsgsPerSec = float64(msgs) / elapsed.Seconds()
	}
	for k, h := range s.routes {
		if h.TotalCount() > 0 {
			pr.ByRoute[k] = summary(h)
		}
	}
	if s.e2e.TotalCount() > 0 {
		l := summary(s.e2e)
		pr.EndToEnd = &l
	}
	return pr
}

// group runs workers until all return; the first error cancels the others.
type group struct {
	wg     sync.WaitGroup
	mu     sync.Mutex
	err    error
	cancel context.CancelFunc
}

func (g *group) go_(ctx context.Context, f func(context.Context) error) {
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		if err := f(ctx); err != nil && ctx.Err() == nil {
			g.mu.Lock()
			if g.err == nil {
				g.err = err
			}
			g.mu.Unlock()
			g.cancel()
		}
	}()
}

// producers sends messages [0, count) with n workers; it returns when all are sent or ctx ends.
func (r *runner) producers(ctx context.Context, g *group, st *stats, queue string, n, count int) {
	r.cur.Store(st)
	if r.sdk != nil {
		r.sdkProducers(ctx, g, st, queue, n, count)
		return
	}
	r.producersTo(ctx, g, st, queuePath(queue)+"/messages", n, count)
}

// producersTo is producers posting to path (a queue's send or a topic's publish).
func (r *runner) producersTo(ctx context.Context, g *group, st *stats, path string, n, count int) {
	var next atomic.Int64
	batch := int64(r.cfg.Batch)
	for w := range n {
		s := r.newSender(w)
		g.go_(ctx, func(ctx context.Context) error {
			for ctx.Err() == nil {
				first := next.Add(batch) - batch
				if first >= int64(count) {
					return nil
				}
				if err := s.sendTo(ctx, st, path, first, int(min(batch, int64(count)-first))); err != nil {
					return err
				}
			}
			return nil
		})
	}
}

// consumers receive and acknowledge until count distinct messages were delivered, then
// cancel done (which ends the waiting receives of the others).
func (r *runner) consumers(ctx context.Context, g *group, st *stats, queue string, n, count int, done func()) {
	r.cur.Store(st)
	if r.sdk != nil {
		r.sdkConsumers(ctx, g, st, queue, n, count, done)
		return
	}
	r.rawConsumers(ctx, g, st, queue, n, count, done)
}

// rawConsumers are consumers through the generator's raw client (the publish phase's always).
func (r *runner) rawConsumers(ctx context.Context, g *group, st *stats, queue string, n, count int, done func()) {
	if r.cfg.Stream {
		r.streamConsumers(ctx, g, st, queue, n, count, done)
		return
	}
	for range n {
		cs := &consumer{r: r}
		g.go_(ctx, func(ctx context.Context) error {
			for ctx.Err() == nil && st.delivered.Load() < int64(count) {
				if _, err := cs.once(ctx, st, queue, r.cfg.Batch, r.cfg.Wait, "receive"); err != nil {
					return err
				}
			}
			if st.delivered.Load() >= int64(count) {
				done()
			}
			return nil
		})
	}
}

// progress prints a status line every 250 ms until stop is called.
func (r *runner) progress(phase string, st *stats, start time.Time) (stop func()) {
	if r.cfg.Progress == nil {
		return func() {}
	}
	quit, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				el := time.Since(start).Seconds()
				done := st.sent.Load()
				if phase != PhaseProduce {
					done = st.delivered.Load()
				}
				r.cfg.Progress(fmt.Sprintf("%-8s %6.1fs  sent %9d  received %9d  acked %9d  %9.0f msg/s",
					phase, el, st.sent.Load(), st.received.Load(), st.acked.Load(), float64(done)/max(el, 1e-9)))
			}
		}
	}()
	return func() { close(quit); <-finished }
}

// phaseCtx bounds a phase by the configured duration; the group's cancel ends it early.
func (r *runner) phaseCtx(ctx context.Context) (context.Context, *group, context.CancelFunc) {
	pctx, cancel := context.WithTimeout(ctx, r.cfg.Duration)
	return pctx, &group{cancel: cancel}, cancel
}

func (r *runner) produce(ctx context.Context, i int) (*PhaseReport, error) {
	queue, err := r.newQueue(ctx, PhaseProduce, i)
	if err != nil {
		return nil, err
	}
	st := newStats(r.cfg.Count)
	np, _ := r.cfg.workers(PhaseProduce)
	pctx, g, cancel := r.phaseCtx(ctx)
	defer cancel()
	cpu0 := r.cpu.snapshot()
	start := time.Now()
	stop := r.progress(PhaseProduce, st, start)
	r.producers(pctx, g, st, queue, np, r.cfg.Count)
	g.wg.Wait()
	elapsed := time.Since(start)
	stop()
	r.cur.Store(nil)
	if g.err != nil {
		return nil, g.err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	complete := st.sent.Load() == int64(r.cfg.Count)
	if complete {
		r.filled = queue
	}
	pr := st.report(PhaseProduce, queue, st.sent.Load(), elapsed, complete, r.throttled())
	pr.Lost = 0 // nothing is delivered in this phase
	pr.CPU = r.cpu.since(cpu0, pr.Messages)
	return pr, nil
}

func (r *runner) consume(ctx context.Context, i int) (*PhaseReport, error) {
	queue := r.filled
	r.filled = ""
	if queue == "" {
		// Fill a queue of our own, untimed.
		var err error
		if queue, err = r.newQueue(ctx, PhaseConsume, i); err != nil {
			return nil, err
		}
		st := newStats(r.cfg.Count)
		fctx, g, cancel := r.phaseCtx(ctx)
		r.producers(fctx, g, st, queue, r.cfg.InFlight, r.cfg.Count)
		g.wg.Wait()
		cancel()
		if g.err != nil {
			return nil, fmt.Errorf("filling the queue: %w", g.err)
		}
		if st.sent.Load() != int64(r.cfg.Count) {
			return nil, fmt.Errorf("filling the queue: sent %d of %d within %s", st.sent.Load(), r.cfg.Count, r.cfg.Duration)
		}
	}
	st := newStats(r.cfg.Count)
	_, nc := r.cfg.workers(PhaseConsume)
	pctx, g, cancel := r.phaseCtx(ctx)
	defer cancel()
	cpu0 := r.cpu.snapshot()
	start := time.Now()
	stop := r.progress(PhaseConsume, st, start)
	var end atomic.Int64
	r.consumers(pctx, g, st, queue, nc, r.cfg.Count, func() {
		end.CompareAndSwap(0, int64(time.Since(start)))
		cancel()
	})
	g.wg.Wait()
	stop()
	return r.finishCPU(ctx, g, st, PhaseConsume, queue, start, &end, r.cfg.Count, cpu0)
}

// finish reports a phase whose consumers count distinct deliveries.
func (r *runner) finish(ctx context.Context, g *group, st *stats, phase, queue string, start time.Time, end *atomic.Int64, count int) (*PhaseReport, error) {
	elapsed := time.Duration(end.Load())
	if elapsed == 0 {
		elapsed = time.Since(start)
	}
	if g.err != nil {
		return nil, g.err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	complete := st.delivered.Load() == int64(count)
	pr := st.report(phase, queue, st.delivered.Load(), elapsed, complete, r.throttled())
	if complete {
		pr.Lost = 0
	}
	return pr, nil
}

// finishCPU is finish for a phase whose CPU is reported, from cpu0 on; through the SDK it
// also checks that every acknowledgement landed (the SDK's consumers send them in the
// background, so the handlers' count alone cannot say).
func (r *runner) finishCPU(ctx context.Context, g *group, st *stats, phase, queue string, start time.Time, end *atomic.Int64, count int, cpu0 cpuSnapshot) (*PhaseReport, error) {
	r.cur.Store(nil)
	var cpu []ProcessCPU
	if g.err == nil {
		cpu = r.cpu.since(cpu0, st.delivered.Load())
	}
	pr, err := r.finish(ctx, g, st, phase, queue, start, end, count)
	if err != nil {
		return nil, err
	}
	pr.CPU = cpu
	if r.sdk == nil {
		return pr, nil
	}
	if n := st.ackFailed.Load(); n > 0 {
		return nil, fmt.Errorf("%d acknowledgements failed, the first: %v", n, st.firstAckErr.Load())
	}
	if pr.Complete {
		left, err := r.sdkLeft(ctx, queue)
		if err != nil {
			return nil, fmt.Errorf("reading the queue's counts: %w", err)
		}
		pr.Left = &left
		if left > 0 {
			return nil, fmt.Errorf("%d messages left in the queue after every one was delivered and acknowledged", left)
		}
	}
	return pr, nil
}

// throttled counts the 429 answers of the run so far, of both clients.
func (r *runner) throttled() int64 { return r.c.throttled.get() + r.sdkThrottled.get() }

func (r *runner) e2e(ctx context.Context, i int) (*PhaseReport, error) {
	queue, err := r.newQueue(ctx, PhaseE2E, i)
	if err != nil {
		return nil, err
	}
	st := newStats(r.cfg.Count)
	np, nc := r.cfg.workers(PhaseE2E)
	pctx, g, cancel := r.phaseCtx(ctx)
	defer cancel()
	cpu0 := r.cpu.snapshot()
	start := time.Now()
	stop := r.progress(PhaseE2E, st, start)
	var end atomic.Int64
	// The last delivery stops the consumers' waiting receives only: a producer may still be
	// reading the answer to the send that carried it, and cancelling that would leave the
	// send uncounted.
	cctx, stopConsumers := context.WithCancel(pctx)
	defer stopConsumers()
	r.consumers(cctx, g, st, queue, nc, r.cfg.Count, func() {
		end.CompareAndSwap(0, int64(time.Since(start)))
		stopConsumers()
	})
	r.producers(pctx, g, st, queue, np, r.cfg.Count)
	g.wg.Wait()
	stop()
	return r.finishCPU(ctx, g, st, PhaseE2E, queue, start, &end, r.cfg.Count, cpu0)
}

// wakeup measures long-poll wake-ups: a consumer waits on an empty queue, a message is sent
// once it has been waiting a little while, and the delivery latency is recorded.
func (r *runner) wakeup(ctx context.Context, i int) (*PhaseReport, error) {
	queue, err := r.newQueue(ctx, PhaseWakeup, i)
	if err != nil {
		return nil, err
	}
	n := r.cfg.Wakeups
	st := newStats(n)
	pctx, g, cancel := r.phaseCtx(ctx)
	defer cancel()
	start := time.Now()
	stop := r.progress(PhaseWakeup, st, start)
	waiting := make(chan struct{})
	got := make(chan struct{})
	cs := &consumer{r: r}
	g.go_(pctx, func(ctx context.Context) error {
		for st.delivered.Load() < int64(n) && ctx.Err() == nil {
			select {
			case waiting <- struct{}{}:
			case <-ctx.Done():
				return nil
			}
			if _, err := cs.once(ctx, st, queue, 1, 20, routeWait); err != nil {
				return err
			}
			select {
			case got <- struct{}{}:
			case <-ctx.Done():
			}
		}
		return nil
	})
	s := r.newSender(0)
	g.go_(pctx, func(ctx context.Context) error {
		for seq := range n {
			select {
			case <-waiting:
			case <-ctx.Done():
				return nil
			}
			// Let the receive reach the server and start waiting.
			select {
			case <-time.After(20 * time.Millisecond):
			case <-ctx.Done():
				return nil
			}
			if err := s.send(ctx, st, queue, int64(seq), 1); err != nil {
				return err
			}
			select {
			case <-got:
			case <-ctx.Done():
				return nil
			}
		}
		return nil
	})
	g.wg.Wait()
	elapsed := time.Since(start)
	stop()
	var end atomic.Int64
	end.Store(int64(elapsed))
	pr, err := r.finish(ctx, g, st, PhaseWakeup, queue, start, &end, n)
	if pr != nil {
		pr.MsgsPerSec = 0 // paced: the rate says nothing
		if pr.Complete {
			pr.Lost = 0
		}
	}
	return pr, err
}
