package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/queueshq/queues/pkg/bench"
)

// benchLong is bench's help, above cobra's list of its flags.
const benchLong = `Load generator for a running Queues service (pull consumers over the HTTP API). Phases, run
in the order given (-phases):

  produce  send -count messages to an empty queue
  consume  drain a queue of -count messages (the one produce filled, else one filled first,
           untimed): receive batches, acknowledge each batch in one request
  e2e      consumers running while producers send -count messages
  wakeup   a receive waiting on an empty queue, one message sent at a time (-wakeups):
           send -> delivery latency of a long poll
  push     producers send -count messages to a queue with a push subscription whose
           endpoint is a receiver this command runs (-push-listen; signatures verified,
           every batch acknowledged by a 204): needs a running pusher (queues pusher, or
           serve's) allowed to push to 127.0.0.1 (QUEUES_PUSH_ALLOW_PRIVATE=true)
  neighbour  the token's project (B) sends, receives and acknowledges at a steady pace,
           alone for -neighbour-window, then beside a project A that this phase creates
           with the operator credential (-operator-token) and runs at every limit it sets
           low: 256 KiB sends at its rate limit past its byte quota, every long poll it may
           park and more, a queue create/delete loop, and a push subscription whose
           endpoint (on -push-listen) takes -neighbour-push-delay to answer. Prints B's
           p99 alone and beside A and A's refusals by code (docs/measurements/tenancy-neighbours.md)
  publish  producers publish -count messages to a topic bound to -bindings queues, each
           drained by its own consumers: publish msg/s, copies delivered/s, publish ->
           delivery at that load; then -wakeups messages published one at a time, each
           awaited in every bound queue: publish -> receivable below capacity

Produce, consume and e2e go through the Go SDK (sdk/go/client) with its defaults, as a Go
user's program would: one Producer on the send stream for the sends (-send-window batches
in flight; -inflight workers each Send a batch's worth of messages and await their futures;
-sendbatch: SendBatch requests instead, one in flight per worker), Client.Consume for the consumers (one Consume per consumer, Concurrency -batch, over
the receive stream; -poll: polling receives). -raw drives them with this command's own raw
HTTP/1.1 client instead, for diagnosis (the difference is the SDK's cost); with -raw,
-stream gives each consumer one receive stream of its own (docs/streaming.md). Wakeup,
publish and neighbour always use the raw client.

-cpu-pids api=PID,redis=PID,... names processes (the API, Redis, the pusher, serve) whose
CPU (user + system, from /proc/PID/stat) produce, consume and e2e report per message, beside
the generator's own ("bench"). scripts/bench.sh passes the processes it starts.

Each phase prints messages/s, request latency p50/p90/p99/max (all requests and per route)
and, for e2e, wakeup and push, send -> delivery latency from a timestamp written into each
body, with duplicate and lost counts.
Every phase is bounded by -count and -duration. The run creates its own queues and deletes
them (and its topics) at the end. The token needs queues:admin, messages:send and messages:receive.

Example (the workload of docs/performance.md's table):

  queues bench -size 64 -batch 10 -inflight 16 -count 50000`

// benchFlags are bench's flags beside bench.Config's.
type benchFlags struct {
	phases, cpuOut, cpuPID *string
	asJSON, quiet          *bool
	aProcess, aChild       *bool
}

// defineBench defines bench, the load generator.
func defineBench(fs *pflag.FlagSet) operatorRun {
	var (
		cfg    bench.Config
		phases = fs.String("phases", "produce,consume,e2e", "comma-separated phases: produce, consume, e2e, wakeup, push, neighbour, publish")
		asJSON = fs.Bool("json", false, "print the report as JSON")
		quiet  = fs.Bool("quiet", false, "no progress line")
		cpuOut = fs.String("cpuprofile", "", "write the generator's own CPU profile (pprof) to this file")
		cpuPID = fs.String("cpu-pids", "", "name=pid,...: processes whose CPU per message produce, consume and e2e report (Linux /proc)")
	)
	fs.StringVar(&cfg.URL, "url", env("QUEUES_URL", "http://127.0.0.1:8080"), "the service's base URL (QUEUES_URL)")
	fs.StringVar(&cfg.Token, "token", env("QUEUES_TOKEN", ""), "project token (QUEUES_TOKEN)")
	fs.StringVar(&cfg.QueueType, "type", "standard", "queue type: standard or fifo")
	fs.IntVar(&cfg.Size, "size", 64, fmt.Sprintf("message body bytes (at least %d: sequence number and timestamp; up to 1 MiB, the queues made with a maxMessageBytes to fit; --batch defaults to what fits a 3 MiB request)", bench.MinSize))
	fs.IntVar(&cfg.Batch, "batch", 10, "messages per send and maxMessages per receive (1-10)")
	fs.IntVar(&cfg.InFlight, "inflight", 16, "requests in flight per phase: produce runs this many producers, consume this many consumers, e2e a third producers, the rest consumers")
	fs.IntVar(&cfg.Producers, "producers", 0, "producers (overrides -inflight in produce and e2e)")
	fs.IntVar(&cfg.Consumers, "consumers", 0, "consumers (overrides -inflight in consume and e2e)")
	fs.IntVar(&cfg.Count, "count", 50_000, "messages per phase")
	fs.DurationVar(&cfg.Duration, "duration", time.Minute, "longest a phase may run (a phase ends at -count or -duration)")
	fs.IntVar(&cfg.Wait, "wait", 1, "consumers' long-poll waitSeconds (0-20)")
	fs.IntVar(&cfg.Groups, "groups", 64, "fifo: message groups the sends are spread over")
	fs.IntVar(&cfg.Wakeups, "wakeups", 200, "messages the wakeup phase sends (and the publish phase publishes one at a time)")
	fs.IntVar(&cfg.Bindings, "bindings", 1, fmt.Sprintf("publish: queues bound to the topic (1-%d)", bench.MaxBindings))
	fs.StringVar(&cfg.PushListen, "push-listen", "127.0.0.1:0", "address of the push phase's receiver (the pusher must reach it)")
	fs.BoolVar(&cfg.Raw, "raw", false, "drive produce, consume and e2e with the generator's raw HTTP/1.1 client instead of the Go SDK (diagnosis)")
	fs.BoolVar(&cfg.SendBatch, "sendbatch", false, "the SDK's producers send with SendBatch requests (one in flight each) instead of a Producer on the send stream")
	fs.IntVar(&cfg.SendWindow, "send-window", 0, "the Producer's window: batches in flight on the send stream (0: the SDK's DefaultProducerWindow)")
	fs.BoolVar(&cfg.Poll, "poll", false, "the SDK's consumers poll (ConsumeOptions.Polling) instead of using the receive stream")
	fs.BoolVar(&cfg.Stream, "stream", false, "with -raw: consume and e2e consumers receive over receive streams (one WebSocket each) instead of receive requests")
	fs.IntVar(&cfg.StreamWindow, "stream-window", 4, "stream: each stream's credit, in batches")
	aProcess, aChild := neighbourFlags(fs, &cfg.Neighbour)
	f := benchFlags{phases: phases, cpuOut: cpuOut, cpuPID: cpuPID, asJSON: asJSON, quiet: quiet, aProcess: aProcess, aChild: aChild}
	return func(ctx context.Context, args []string) error { return runBenchPhases(ctx, cfg, f, args) }
}

// runBenchPhases runs the phases, once the flags are parsed into cfg and f.
func runBenchPhases(ctx context.Context, cfg bench.Config, f benchFlags, args []string) error {
	n := &cfg.Neighbour
	if *f.aChild {
		return bench.RunNeighbourAChild(ctx, os.Stdin, os.Stdout)
	}
	if *f.aProcess {
		self, err := os.Executable()
		if err != nil {
			return err
		}
		n.AProcess = []string{self, "bench", "-neighbour-a-child"}
	}
	if len(args) > 0 {
		return fmt.Errorf("unexpected arguments: %s", strings.Join(args, " "))
	}
	pids, err := bench.ParseCPUPIDs(*f.cpuPID)
	if err != nil {
		return err
	}
	cfg.CPUPIDs = pids
	for _, p := range strings.Split(*f.phases, ",") {
		if p = strings.TrimSpace(p); p != "" {
			cfg.Phases = append(cfg.Phases, p)
		}
	}
	if st, err := os.Stderr.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 && !*f.quiet {
		cfg.Progress = func(line string) { fmt.Fprintf(os.Stderr, "\r\033[K%s", line) }
	}
	if *f.cpuOut != "" {
		prof, err := os.Create(*f.cpuOut)
		if err != nil {
			return err
		}
		defer prof.Close()
		if err := pprof.StartCPUProfile(prof); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	rep, err := bench.Run(ctx, cfg)
	if cfg.Progress != nil {
		fmt.Fprint(os.Stderr, "\r\033[K")
	}
	if rep != nil && len(rep.Phases) > 0 || err == nil {
		if *f.asJSON {
			enc := json.NewEncoder(os.Stdout)
			enc.SetIndent("", "  ")
			if jerr := enc.Encode(rep); jerr != nil {
				return jerr
			}
		} else if werr := rep.WriteText(os.Stdout); werr != nil {
			return werr
		}
	}
	return err
}

// neighbourFlags defines the neighbour phase's flags on fs, into n; aProcess and aChild say how
// A's load runs.
func neighbourFlags(fs *pflag.FlagSet, n *bench.NeighbourConfig) (aProcess, aChild *bool) {
	fs.StringVar(&n.OperatorToken, "operator-token", env("QUEUES_OPERATOR_TOKEN", ""), "neighbour: the operator credential (QUEUES_OPERATOR_TOKEN)")
	fs.DurationVar(&n.Window, "neighbour-window", 10*time.Second, "neighbour: how long B is measured alone, and again beside A")
	fs.DurationVar(&n.Settle, "neighbour-settle", 2*time.Second, "neighbour: how long A runs before B is measured beside it")
	fs.Int64Var(&n.MaxStoredBytes, "neighbour-max-stored-bytes", 4<<20, "neighbour: A's maxStoredBytes")
	fs.IntVar(&n.RequestsPerSecond, "neighbour-rps", 300, "neighbour: A's requestsPerSecond (its 256 KiB sends are paced at it)")
	fs.IntVar(&n.MaxWaitingReceives, "neighbour-waiting", 50, "neighbour: A's maxWaitingReceives (the long polls it holds)")
	fs.Int64Var(&n.SendBytesPerSecond, "neighbour-send-bytes", 1<<20, "neighbour: A's sendBytesPerSecond")
	fs.IntVar(&n.MaxQueues, "neighbour-max-queues", 10, "neighbour: A's maxQueues")
	fs.IntVar(&n.ExtraPolls, "neighbour-extra-polls", 2, "neighbour: long polls A keeps trying beyond maxWaitingReceives")
	fs.DurationVar(&n.PushDelay, "neighbour-push-delay", 30*time.Second, "neighbour: how long A's push endpoint takes to answer")
	fs.IntVar(&n.PushTimeout, "neighbour-push-timeout", 30, "neighbour: timeoutSeconds of A's subscription")
	fs.IntVar(&n.Workers, "neighbour-workers", 4, "neighbour: B's workers")
	fs.DurationVar(&n.Interval, "neighbour-interval", 20*time.Millisecond, "neighbour: each B worker's send/receive/ack cycle period")
	aProcess = fs.Bool("neighbour-a-process", true, "neighbour: run A's load in a process of its own, so that it does not share the scheduler of the process measuring B")
	fs.IntVar(&n.ANice, "neighbour-a-nice", 0, "neighbour: nice value of A's process (0: unchanged)")
	aChild = fs.Bool("neighbour-a-child", false, "internal: be the neighbour phase's A process (spec on stdin)")
	return aProcess, aChild
}
