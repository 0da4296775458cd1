package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// aSpec is what project A's load needs: where to send, with which token, and A's limits. It
// is handed to a child process as one line of JSON.
type aSpec struct {
	URL, Token         string
	SendQ, WaitQ       string
	ChurnPrefix        string
	RequestsPerSecond  int
	MaxWaitingReceives int
	ExtraPolls         int
	// Nice is the child process's nice value (0: unchanged).
	Nice int
}

// aResult is what A's load did; ParkedHeld is taken when the load is told to stop, before
// its polls are cut.
type aResult struct {
	Requests    int64            `json:"requests"`
	Accepted    map[string]int64 `json:"accepted"`
	Refusals    map[string]int64 `json:"refusals"`
	ExtraPolls  int64            `json:"extraPolls"`
	ExtraAtOnce int64            `json:"extraAtOnce"`
	ExtraLat    *Latency         `json:"extraLatency,omitempty"`
	ParkedHeld  int64            `json:"parkedHeld"`
	Leftover    []string         `json:"leftover"`
	// CPUSeconds is the CPU (user and system) A's process used, when it had one.
	CPUSeconds float64 `json:"cpuSeconds,omitempty"`
}

// aRunner is A's load while it runs; stop ends it and says what it did.
type aRunner interface {
	stop() (aResult, error)
}

// aLoad is project A's load: 256 KiB sends at its rate limit, long polls on every slot and
// more, and a queue create/delete loop.
type aLoad struct {
	spec aSpec
	c    *client

	requests atomic.Int64
	accepted tally
	refused  tally
	// parked is how many of A's slot-holding long polls are waiting for an answer now.
	parked                atomic.Int64
	extraTried, extraOnce atomic.Int64
	extraMu               sync.Mutex
	extraHist             *hdrhistogram.Histogram
	leftover              []string // churn queues still there when A stopped
}

func newALoad(spec aSpec) *aLoad {
	c := newClient(spec.URL, spec.Token, spec.MaxWaitingReceives+spec.ExtraPolls+8)
	c.noRetry = true // every refusal is counted
	return &aLoad{spec: spec, c: c, extraHist: newHist()}
}

// inProcessA runs A's load on goroutines of this process.
type inProcessA struct {
	l      *aLoad
	cancel context.CancelFunc
	done   <-chan struct{}
}

func startAInProcess(ctx context.Context, spec aSpec) aRunner {
	l := newALoad(spec)
	actx, cancel := context.WithCancel(ctx)
	return &inProcessA{l: l, cancel: cancel, done: l.start(actx)}
}

func (p *inProcessA) stop() (aResult, error) {
	held := p.l.parked.Load()
	p.cancel()
	<-p.done
	p.l.c.close()
	return p.l.result(held), nil
}

// childA runs A's load in a process of its own (argv, e.g. `queues bench -neighbour-a-child`),
// so that its goroutines, garbage and connections do not share the scheduler of the process
// that measures B: on a real service A's client runs on A's machines, not beside B's. The
// spec goes to the child's stdin; closing stdin tells it to stop and print its aResult.
type childA struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *strings.Builder
}

func startAChild(ctx context.Context, argv []string, spec aSpec) (aRunner, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting A's process: %w", err)
	}
	line, _ := json.Marshal(spec)
	if _, err := stdin.Write(append(line, '\n')); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("neighbour: A's process: %w", err)
	}
	return &childA{cmd: cmd, stdin: stdin, out: out}, nil
}

func (p *childA) stop() (aResult, error) {
	_ = p.stdin.Close()
	err := p.cmd.Wait()
	var res aResult
	if jerr := json.Unmarshal([]byte(p.out.String()), &res); jerr != nil {
		return res, fmt.Errorf("neighbour: A's process (%v): its report: %w", err, jerr)
	}
	if st := p.cmd.ProcessState; st != nil {
		res.CPUSeconds = (st.UserTime() + st.SystemTime()).Seconds()
	}
	return res, err
}

// RunNeighbourAChild is the child side of NeighbourConfig.AProcess: it reads A's spec from
// the first line of in, runs A's load until in ends, then writes what it did to out as JSON.
func RunNeighbourAChild(ctx context.Context, in io.Reader, out io.Writer) error {
	br := bufio.NewReader(in)
	line, err := br.ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("reading A's spec: %w", err)
	}
	var spec aSpec
	if err := json.Unmarshal(line, &spec); err != nil {
		return fmt.Errorf("neighbour: A's spec: %w", err)
	}
	if spec.Nice != 0 {
		if err := renice(spec.Nice); err != nil {
			return err
		}
	}
	r := startAInProcess(ctx, spec)
	_, _ = io.Copy(io.Discard, br) // until the parent closes our stdin
	res, _ := r.stop()
	return json.NewEncoder(out).Encode(res)
}

// call makes one of A's requests and counts its outcome under kind.
func (a *aLoad) call(ctx context.Context, kind, method, path string, body []byte, out any) bool {
	a.requests.Add(1)
	err := a.c.do(ctx, method, path, body, true, out)
	if err == nil {
		a.accepted.add(kind)
		return true
	}
	if ctx.Err() == nil {
		a.refused.add(errKey(err))
	}
	return false
}

// aSenders is how many of A's senders share its request rate.
const aSenders = 4

// start runs A's load until ctx ends; the channel closes when every part has stopped.
func (a *aLoad) start(ctx context.Context) <-chan struct{} {
	var wg sync.WaitGroup
	run := func(f func(context.Context)) {
		wg.Add(1)
		go func() { defer wg.Done(); f(ctx) }()
	}
	for range aSenders {
		run(a.sender(aSenders))
	}
	for range a.spec.MaxWaitingReceives {
		run(a.parker)
	}
	for range a.spec.ExtraPolls {
		run(a.extraPoller)
	}
	run(a.churn)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	return done
}

// sender sends one 256 KiB message per request, its share of requestsPerSecond.
func (a *aLoad) sender(of int) func(context.Context) {
	body := []byte(`{"messages":[{"body":"` + strings.Repeat("a", 256*1024) + `"}]}`)
	every := time.Duration(float64(time.Second) * float64(of) / float64(a.spec.RequestsPerSecond))
	return func(ctx context.Context) {
		tick := time.NewTicker(every)
		defer tick.Stop()
		for ctx.Err() == nil {
			a.call(ctx, "send", http.MethodPost, queuePath(a.spec.SendQ)+"/messages", body, nil)
			select {
			case <-tick.C:
			case <-ctx.Done():
			}
		}
	}
}

// parker holds one long poll on the empty queue at all times.
func (a *aLoad) parker(ctx context.Context) {
	body := []byte(`{"maxMessages":1,"waitSeconds":20}`)
	for ctx.Err() == nil {
		a.parked.Add(1)
		t0 := time.Now()
		a.call(ctx, "park", http.MethodPost, queuePath(a.spec.WaitQ)+"/receive", body, nil)
		a.parked.Add(-1)
		if time.Since(t0) < time.Second {
			pause(ctx, 50*time.Millisecond) // refused, or answered at once: not in a loop
		}
	}
}

// extraPoller tries long polls beyond maxWaitingReceives once all of A's slots are held.
func (a *aLoad) extraPoller(ctx context.Context) {
	body := []byte(`{"maxMessages":1,"waitSeconds":20}`)
	held := int64(a.spec.MaxWaitingReceives)
	// Start once every slot-holding poll was sent, and has had time to reach the server.
	for ctx.Err() == nil && a.parked.Load() < held {
		pause(ctx, 20*time.Millisecond)
	}
	pause(ctx, 500*time.Millisecond)
	for ctx.Err() == nil {
		if a.parked.Load() < held {
			pause(ctx, 20*time.Millisecond)
			continue
		}
		var got receiveResp
		a.requests.Add(1)
		a.extraTried.Add(1)
		t0 := time.Now()
		err := a.c.do(ctx, http.MethodPost, queuePath(a.spec.WaitQ)+"/receive", body, true, &got)
		d := time.Since(t0)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			a.refused.add(errKey(err))
			pause(ctx, 10*time.Millisecond) // Retry-After is ignored, but the generator's CPU is not free
		case len(got.Messages) == 0 && a.parked.Load() >= held:
			a.extraOnce.Add(1)
			a.accepted.add("extra poll (empty)")
			a.extraMu.Lock()
			_ = a.extraHist.RecordValue(micros(d))
			a.extraMu.Unlock()
		default:
			a.accepted.add("extra poll (other)")
		}
	}
}

// churn creates queues until maxQueues refuses one, deletes them, and starts again.
func (a *aLoad) churn(ctx context.Context) {
	var mine []string
	for i := 0; ctx.Err() == nil; i++ {
		name := fmt.Sprintf("%s%d", a.spec.ChurnPrefix, i)
		body, _ := json.Marshal(map[string]any{"name": name})
		a.requests.Add(1)
		err := a.c.do(ctx, http.MethodPost, "/v1/queues", body, true, nil)
		if err == nil {
			a.accepted.add("create")
			mine = append(mine, name)
			continue
		}
		if ctx.Err() != nil {
			break
		}
		k := errKey(err)
		a.refused.add(k)
		if !strings.HasPrefix(k, "403 quota_exceeded") {
			pause(ctx, 50*time.Millisecond)
			continue
		}
		for len(mine) > 0 && ctx.Err() == nil {
			if a.call(ctx, "delete", http.MethodDelete, queuePath(mine[0]), nil, nil) {
				mine = mine[1:]
			} else {
				pause(ctx, 50*time.Millisecond)
			}
		}
	}
	a.leftover = mine // deleted by the phase's cleanup
}

// result summarises A's load (held: its parked polls when it was told to stop).
func (a *aLoad) result(held int64) aResult {
	a.extraMu.Lock()
	lat := quietPollLatency(a.extraHist)
	a.extraMu.Unlock()
	return aResult{Requests: a.requests.Load(), Accepted: a.accepted.snapshot(), Refusals: a.refused.snapshot(),
		ExtraPolls: a.extraTried.Load(), ExtraAtOnce: a.extraOnce.Load(), ExtraLat: lat, ParkedHeld: held, Leftover: a.leftover}
}

// traffic is A's report from its load's result.
func (r aResult) traffic() ATraffic {
	return ATraffic{Requests: r.Requests, Accepted: r.Accepted, Refusals: r.Refusals, ExtraPolls: r.ExtraPolls,
		ExtraAtOnce: r.ExtraAtOnce, ExtraLatency: r.ExtraLat, ParkedHeld: r.ParkedHeld, ProcessCPUSeconds: r.CPUSeconds}
}

// pause waits d or until ctx ends; false when ctx ended.
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
