package bench

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// PhaseNeighbour runs project B's ordinary traffic alone, then beside a project A at its
// limits (see neighbour.go).
const PhaseNeighbour = "neighbour"

// NeighbourConfig configures the neighbour phase. The phase creates project A with the
// operator credential and sets A's limits low, so that A reaches every one of them within
// seconds; the run's own token is project B's.
type NeighbourConfig struct {
	OperatorToken string
	// Window is how long B's traffic is measured alone, and again beside A (default 10 s).
	Window time.Duration
	// Settle is how long A runs before B is measured beside it (default 2 s): long enough for
	// A's long polls to park and its sends to reach the byte quota.
	Settle time.Duration
	// A's limits (defaults 4 MiB, 300/s, 50, 10).
	MaxStoredBytes     int64
	RequestsPerSecond  int
	MaxWaitingReceives int
	MaxQueues          int
	// SendBytesPerSecond is A's sendBytesPerSecond (default 1 MiB).
	SendBytesPerSecond int64
	// ExtraPolls is how many long polls A keeps trying beyond maxWaitingReceives (default 2).
	ExtraPolls int
	// PushDelay is how long A's push endpoint takes to answer (default 30 s); PushTimeout is
	// the subscription's timeoutSeconds (default 30).
	PushDelay   time.Duration
	PushTimeout int
	// Workers is B's workers (default 4); each runs a cycle — send 10 messages of Size bytes,
	// receive up to 10 (no wait), acknowledge them — every Interval (default 20 ms).
	Workers  int
	Interval time.Duration
	// AProcess, when set, is the command line of a process that runs A's load (its sends,
	// long polls and queue churn) apart from the one measuring B: `queues bench
	// -neighbour-a-child`, which calls RunNeighbourAChild. Empty: A's load runs on goroutines
	// of this process, sharing its scheduler and garbage collector with B's (the tests).
	AProcess []string
	// ANice is the nice value of AProcess (0: as this process).
	ANice int
}

func (n *NeighbourConfig) defaults() error {
	if n.OperatorToken == "" {
		return errors.New("the neighbour phase needs the operator credential (to create project A and set its limits)")
	}
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	defD := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	defD(&n.Window, 10*time.Second)
	defD(&n.Settle, 2*time.Second)
	defD(&n.PushDelay, 30*time.Second)
	defD(&n.Interval, 20*time.Millisecond)
	if n.MaxStoredBytes <= 0 {
		n.MaxStoredBytes = 4 << 20
	}
	def(&n.RequestsPerSecond, 300)
	def(&n.MaxWaitingReceives, 50)
	if n.SendBytesPerSecond <= 0 {
		n.SendBytesPerSecond = 1 << 20
	}
	def(&n.MaxQueues, 10)
	def(&n.ExtraPolls, 2)
	def(&n.PushTimeout, 30)
	def(&n.Workers, 4)
	if n.PushTimeout > 60 {
		return errors.New("push timeout must be 1 to 60 seconds")
	}
	return nil
}

// NeighbourReport is the neighbour phase's outcome.
type NeighbourReport struct {
	Project string           `json:"project"` // A's id
	Limits  map[string]int64 `json:"limits"`  // A's limits
	Alone   BTraffic         `json:"alone"`
	Beside  BTraffic         `json:"beside"`
	// SendRatio and ReceiveRatio are B's p99 beside A over B's p99 alone.
	SendRatio    float64  `json:"sendRatio"`
	ReceiveRatio float64  `json:"receiveRatio"`
	A            ATraffic `json:"a"`
	Window       float64  `json:"windowSeconds"`
}

// BTraffic is B's traffic in one window.
type BTraffic struct {
	Seconds  float64            `json:"seconds"`
	Requests int64              `json:"requests"`
	Messages int64              `json:"messages"` // acknowledged
	Errors   map[string]int64   `json:"errors"`   // by "status code", or the transport error
	ByRoute  map[string]Latency `json:"byRoute"`
}

// ATraffic is what project A did and was refused.
type ATraffic struct {
	Requests int64 `json:"requests"`
	// Accepted counts A's successful calls by kind: send, park (a long poll answered after
	// waiting), create, delete.
	Accepted map[string]int64 `json:"accepted"`
	// Refusals counts A's refused calls by "status code limit" (e.g. "403 quota_exceeded
	// maxStoredBytes", "429 rate_limited"); transport errors are counted as "error: …".
	Refusals map[string]int64 `json:"refusals"`
	// ExtraPolls is how many long polls A tried beyond its maxWaitingReceives while all its
	// slots were held; ExtraAtOnce how many of those were answered empty while every slot was
	// still held (the quiet answer; docs/security.md#what-one-tenant-can-cost); ExtraLatency their
	// latency.
	ExtraPolls   int64    `json:"extraPolls"`
	ExtraAtOnce  int64    `json:"extraAtOnce"`
	ExtraLatency *Latency `json:"extraLatency,omitempty"`
	// ParkedHeld is how many of A's parked long polls were still waiting when B's window
	// beside A ended (every one of them, unless something answered them early).
	ParkedHeld int64 `json:"parkedHeld"`
	// Pushes is how many pushes A's slow endpoint received; PushesMaxConcurrent the most it
	// held at once.
	Pushes              int64 `json:"pushes"`
	PushesMaxConcurrent int64 `json:"pushesMaxConcurrent"`
	// ProcessCPUSeconds is the CPU A's load used in its own process (AProcess; 0 in-process).
	ProcessCPUSeconds float64 `json:"processCpuSeconds,omitempty"`
}

// tally counts outcomes by key.
type tally struct {
	mu sync.Mutex
	m  map[string]int64
}

func (t *tally) add(k string) {
	t.mu.Lock()
	if t.m == nil {
		t.m = map[string]int64{}
	}
	t.m[k]++
	t.mu.Unlock()
}

func (t *tally) snapshot() map[string]int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]int64, len(t.m))
	for k, v := range t.m {
		out[k] = v
	}
	return out
}

// errKey names an error for the tallies: "status code [limit]" or the transport error.
func errKey(err error) string {
	var e *apiError
	if errors.As(err, &e) {
		k := fmt.Sprintf("%d %s", e.Status, e.Code)
		if e.Limit != "" {
			k += " " + e.Limit
		}
		return k
	}
	s := err.Error()
	if len(s) > 80 {
		s = s[:80]
	}
	return "error: " + s
}

func (r *runner) neighbour(ctx context.Context, i int) (*PhaseReport, error) {
	n := r.cfg.Neighbour
	if err := n.defaults(); err != nil {
		return nil, err
	}
	bq, err := r.newQueue(ctx, PhaseNeighbour, i)
	if err != nil {
		return nil, err
	}
	bc := newClient(r.cfg.URL, r.cfg.Token, n.Workers+2)
	bc.noRetry = true
	defer bc.close()
	rep := &NeighbourReport{Window: n.Window.Seconds()}
	rep.Alone, err = r.bWindow(ctx, bc, bq, n)
	if err != nil {
		return nil, err
	}
	a, err := r.newNeighbourA(ctx, &n)
	if err != nil {
		return nil, fmt.Errorf("project A: %w", err)
	}
	defer a.cleanup()
	rep.Project, rep.Limits = a.project, a.limits
	var load aRunner
	if len(n.AProcess) > 0 {
		if load, err = startAChild(ctx, n.AProcess, a.spec()); err != nil {
			return nil, err
		}
	} else {
		load = startAInProcess(ctx, a.spec())
	}
	select {
	case <-time.After(n.Settle):
	case <-ctx.Done():
	}
	rep.Beside, err = r.bWindow(ctx, bc, bq, n)
	res, aerr := load.stop()
	a.leftover = res.Leftover
	if err != nil {
		return nil, err
	}
	if aerr != nil {
		return nil, fmt.Errorf("project A: %w", aerr)
	}
	rep.A = res.traffic()
	a.pushReport(&rep.A)
	rep.SendRatio = ratio(rep.Beside.ByRoute["send"].P99, rep.Alone.ByRoute["send"].P99)
	rep.ReceiveRatio = ratio(rep.Beside.ByRoute["receive"].P99, rep.Alone.ByRoute["receive"].P99)
	pr := &PhaseReport{Phase: PhaseNeighbour, Queue: bq, Messages: rep.Beside.Messages, Seconds: rep.Beside.Seconds,
		Requests: rep.Beside.Requests, Complete: true, ByRoute: rep.Beside.ByRoute, Neighbour: rep}
	if rep.Beside.Seconds > 0 {
		pr.MsgsPerSec = float64(rep.Beside.Messages) / rep.Beside.Seconds
	}
	return pr, nil
}

func ratio(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return a / b
}

// bWindow runs B's ordinary traffic for one window: each worker sends a batch, receives
// without waiting and acknowledges what it got, once per interval. Nothing is retried: a
// refusal is an error of B's.
func (r *runner) bWindow(ctx context.Context, c *client, queue string, n NeighbourConfig) (BTraffic, error) {
	wctx, cancel := context.WithTimeout(ctx, n.Window)
	defer cancel()
	var (
		mu       sync.Mutex
		routes   = map[string]*hdrhistogram.Histogram{"send": newHist(), "receive": newHist(), "ack": newHist()}
		errs     tally
		requests atomic.Int64
		acked    atomic.Int64
	)
	record := func(route string, f func() error) bool {
		t0 := time.Now()
		err := f()
		d := time.Since(t0)
		requests.Add(1)
		if err != nil {
			if wctx.Err() != nil {
				return false // cut by the window's end: not an answer
			}
			errs.add(route + ": " + errKey(err))
			return false
		}
		mu.Lock()
		_ = routes[route].RecordValue(micros(d))
		mu.Unlock()
		return true
	}
	var msgs strings.Builder
	msgs.WriteString(`{"messages":[`)
	for j := range 10 {
		if j > 0 {
			msgs.WriteByte(',')
		}
		msgs.WriteString(`{"body":"` + strings.Repeat("b", r.cfg.Size) + `"}`)
	}
	msgs.WriteString(`]}`)
	send := []byte(msgs.String())
	recv := []byte(`{"maxMessages":10,"waitSeconds":0}`)
	start := time.Now()
	var wg sync.WaitGroup
	for range n.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(n.Interval)
			defer tick.Stop()
			for wctx.Err() == nil {
				record("send", func() error {
					return c.do(wctx, http.MethodPost, queuePath(queue)+"/messages", send, true, nil)
				})
				var got receiveResp
				if record("receive", func() error {
					return c.do(wctx, http.MethodPost, queuePath(queue)+"/receive", recv, true, &got)
				}) && len(got.Messages) > 0 {
					b := []byte(`{"receiptHandles":[`)
					for k, m := range got.Messages {
						if k > 0 {
							b = append(b, ',')
						}
						b = appendJSONString(b, m.ReceiptHandle)
					}
					b = append(b, `]}`...)
					// Acknowledged even when the window ends meanwhile: nothing is left in flight.
					if record("ack", func() error {
						return c.do(context.WithoutCancel(wctx), http.MethodPost, "/v1/receipts/ack", b, false, nil)
					}) {
						acked.Add(int64(len(got.Messages)))
					}
				}
				select {
				case <-tick.C:
				case <-wctx.Done():
				}
			}
		}()
	}
	wg.Wait()
	bt := BTraffic{Seconds: time.Since(start).Seconds(), Requests: requests.Load(), Messages: acked.Load(),
		Errors: errs.snapshot(), ByRoute: map[string]Latency{}}
	for k, h := range routes {
		if h.TotalCount() > 0 {
			bt.ByRoute[k] = summary(h)
		}
	}
	return bt, ctx.Err()
}

// quietPollLatency summarises A's extra polls.
func quietPollLatency(h *hdrhistogram.Histogram) *Latency {
	if h.TotalCount() == 0 {
		return nil
	}
	l := summary(h)
	return &l
}
