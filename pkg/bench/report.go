package bench

import (
	"fmt"
	"io"
	"sort"
	"text/tabwriter"
)

// WriteText prints the report as a table: one line per phase, then one per route.
func (r *Report) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "%s queue, %d-byte bodies, batches of %d, %d requests in flight, %d messages per phase, client %s (%s)\n\n",
		r.QueueType, r.Size, r.Batch, r.InFlight, r.Count, r.Client, r.URL)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "phase\tmessages\tseconds\tmsg/s\trequests\tp50 ms\tp90 ms\tp99 ms\tmax ms\te2e p50 ms\te2e p99 ms\tdup\tlost\t429s\t")
	for _, p := range r.Phases {
		rate := fmt.Sprintf("%.0f", p.MsgsPerSec)
		if p.Phase == PhaseWakeup {
			rate = "-"
		}
		e50, e99 := "-", "-"
		if p.EndToEnd != nil {
			e50, e99 = fmt.Sprintf("%.2f", p.EndToEnd.P50), fmt.Sprintf("%.2f", p.EndToEnd.P99)
		}
		lost := "?"
		if p.Lost >= 0 {
			lost = fmt.Sprint(p.Lost)
		}
		name := p.Phase
		if !p.Complete {
			name += " (cut short)"
		}
		fmt.Fprintf(tw, "%s\t%d\t%.2f\t%s\t%d\t%.2f\t%.2f\t%.2f\t%.2f\t%s\t%s\t%d\t%s\t%d\t\n",
			name, p.Messages, p.Seconds, rate, p.Requests, p.Latency.P50, p.Latency.P90, p.Latency.P99, p.Latency.Max,
			e50, e99, p.Duplicates, lost, p.Throttled)
		routes := make([]string, 0, len(p.ByRoute))
		for k := range p.ByRoute {
			routes = append(routes, k)
		}
		sort.Strings(routes)
		for _, k := range routes {
			l := p.ByRoute[k]
			fmt.Fprintf(tw, "  %s\t\t\t\t%d\t%.2f\t%.2f\t%.2f\t%.2f\t\t\t\t\t\t\n", k, l.Count, l.P50, l.P90, l.P99, l.Max)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := r.writeCPU(w); err != nil {
		return err
	}
	for _, p := range r.Phases {
		if p.Neighbour != nil {
			p.Neighbour.writeText(w)
		}
		if p.Bindings > 0 {
			p.writePublish(w)
		}
	}
	return nil
}

// writeCPU prints each phase's CPU per message by process, when any phase measured it.
func (r *Report) writeCPU(w io.Writer) error {
	var names []string
	seen := map[string]bool{}
	for _, p := range r.Phases {
		for _, c := range p.CPU {
			if !seen[c.Name] {
				seen[c.Name] = true
				names = append(names, c.Name)
			}
		}
	}
	if len(names) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nCPU µs per message, by process:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "phase\t")
	for _, n := range names {
		fmt.Fprintf(tw, "%s\t", n)
	}
	fmt.Fprintln(tw, "total\t")
	for _, p := range r.Phases {
		if len(p.CPU) == 0 {
			continue
		}
		by := map[string]ProcessCPU{}
		for _, c := range p.CPU {
			by[c.Name] = c
		}
		fmt.Fprintf(tw, "%s\t", p.Phase)
		total := 0.0
		for _, n := range names {
			c, ok := by[n]
			if !ok || c.Error != "" {
				fmt.Fprint(tw, "-\t")
				continue
			}
			total += c.USPerMsg
			fmt.Fprintf(tw, "%.1f\t", c.USPerMsg)
		}
		fmt.Fprintf(tw, "%.1f\t\n", total)
	}
	return tw.Flush()
}

// writePublish prints the publish phase's fan-out figures.
func (p *PhaseReport) writePublish(w io.Writer) {
	fmt.Fprintf(w, "\npublish: %d binding(s): %.0f publishes/s, %d copies delivered at %.0f copies/s",
		p.Bindings, p.MsgsPerSec, p.Copies, p.CopiesPerSec)
	if p.Receivable != nil {
		fmt.Fprintf(w, "; one at a time, publish -> delivered p50 %.2f ms, p99 %.2f ms (%d copies)",
			p.Receivable.P50, p.Receivable.P99, p.Receivable.Count)
	}
	fmt.Fprintln(w)
}

func (n *NeighbourReport) writeText(w io.Writer) {
	fmt.Fprintf(w, "\nneighbour: project B alone, then beside project A (%s) at its limits %v\n", n.Project, n.Limits)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "B\troute\trequests\tp50 ms\tp90 ms\tp99 ms\tmax ms\terrors\t")
	for _, win := range []struct {
		name string
		t    BTraffic
	}{{"alone", n.Alone}, {"beside A", n.Beside}} {
		for _, k := range []string{"send", "receive", "ack"} {
			l := win.t.ByRoute[k]
			errs := int64(0)
			for e, c := range win.t.Errors {
				if len(e) > len(k) && e[:len(k)+1] == k+":" {
					errs += c
				}
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%.2f\t%.2f\t%.2f\t%.2f\t%d\t\n", win.name, k, l.Count, l.P50, l.P90, l.P99, l.Max, errs)
		}
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "B p99 beside A / alone: send %.2fx, receive %.2fx\n", n.SendRatio, n.ReceiveRatio)
	for e, c := range n.Beside.Errors {
		fmt.Fprintf(w, "B error beside A: %s x%d\n", e, c)
	}
	for e, c := range n.Alone.Errors {
		fmt.Fprintf(w, "B error alone: %s x%d\n", e, c)
	}
	fmt.Fprintf(w, "A: %d requests; accepted %s; refused %s\n", n.A.Requests, sortedCounts(n.A.Accepted), sortedCounts(n.A.Refusals))
	extra := "-"
	if n.A.ExtraLatency != nil {
		extra = fmt.Sprintf("p99 %.2f ms, max %.2f ms", n.A.ExtraLatency.P99, n.A.ExtraLatency.Max)
	}
	fmt.Fprintf(w, "A: long polls held %d; extra polls %d, answered empty at once %d (%s); pushes to the slow endpoint %d (at most %d at once)\n",
		n.A.ParkedHeld, n.A.ExtraPolls, n.A.ExtraAtOnce, extra, n.A.Pushes, n.A.PushesMaxConcurrent)
	if n.A.ProcessCPUSeconds > 0 {
		fmt.Fprintf(w, "A's load ran in its own process: %.1f s of CPU\n", n.A.ProcessCPUSeconds)
	}
}

func sortedCounts(m map[string]int64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := ""
	for i, k := range keys {
		if i > 0 {
			out += ", "
		}
		out += fmt.Sprintf("%s: %d", k, m[k])
	}
	if out == "" {
		return "none"
	}
	return out
}

// Latency summarises a distribution, in milliseconds.
type Latency struct {
	Count int64   `json:"count"`
	Mean  float64 `json:"meanMs"`
	P50   float64 `json:"p50Ms"`
	P90   float64 `json:"p90Ms"`
	P99   float64 `json:"p99Ms"`
	Max   float64 `json:"maxMs"`
}

// PhaseReport is one phase's outcome.
type PhaseReport struct {
	Phase string `json:"phase"`
	Queue string `json:"queue"`
	// Messages is the phase's throughput count: sent (produce), or delivered and acknowledged
	// for the first time (consume, e2e, wakeup).
	Messages   int64   `json:"messages"`
	Seconds    float64 `json:"seconds"`
	MsgsPerSec float64 `json:"msgsPerSec"`
	Sent       int64   `json:"sent"`
	// Received counts deliveries, duplicates included; Acked the successful acknowledgements
	// (in push, the messages of the batches the receiver answered 204).
	Received   int64 `json:"received"`
	Acked      int64 `json:"acked"`
	Duplicates int64 `json:"duplicates"`
	// Lost is how many messages the phase sent (or found queued) and never delivered, once
	// it ran to completion; -1 when it was cut short by the duration bound.
	Lost      int64 `json:"lost"`
	Complete  bool  `json:"complete"`
	Requests  int64 `json:"requests"`
	Throttled int64 `json:"throttled"`
	// Latency is over every request of the phase; ByRoute splits it into send, receive, ack
	// (and receive-wait: the wakeup phase's long polls, which Latency leaves out).
	Latency  Latency            `json:"latency"`
	ByRoute  map[string]Latency `json:"byRoute"`
	EndToEnd *Latency           `json:"endToEnd,omitempty"`
	// PushBatches and PushRefused count the pushes the receiver took and the ones it refused
	// (bad signature or body): push phase only.
	PushBatches int64 `json:"pushBatches,omitempty"`
	PushRefused int64 `json:"pushRefused,omitempty"`
	// Neighbour is the neighbour phase's outcome.
	Neighbour *NeighbourReport `json:"neighbour,omitempty"`
	// Publish phase only: the topic's bound queues, the copies delivered from them (first
	// deliveries) and their rate, and publish → delivery one message at a time.
	Bindings     int      `json:"bindings,omitempty"`
	Copies       int64    `json:"copies,omitempty"`
	CopiesPerSec float64  `json:"copiesPerSec,omitempty"`
	Receivable   *Latency `json:"receivable,omitempty"`
	// CPU is each process's CPU over the phase's clock and per message, the generator's
	// (named "bench") first: produce, consume and e2e.
	CPU []ProcessCPU `json:"cpu,omitempty"`
	// Left, through the SDK, is how many messages the queue still held once the phase's
	// consumers stopped (0: every acknowledgement landed).
	Left *int64 `json:"left,omitempty"`
}

// Report is a run's outcome.
type Report struct {
	URL       string `json:"url"`
	QueueType string `json:"queueType"`
	Size      int    `json:"size"`
	Batch     int    `json:"batch"`
	InFlight  int    `json:"inFlight"`
	Count     int    `json:"count"`
	// Client is what drove produce, consume and e2e: "sdk" (the Go SDK, its consumers on the
	// receive stream), "sdk-poll" (its consumers polling) or "raw" (the generator's own).
	Client string        `json:"client"`
	Phases []PhaseReport `json:"phases"`
}
