package bench

import (
	"fmt"
	"io"
	"sort"
	"text/tabwriter"
)

// WriteText prints the report as a table: one line per phase, then one per route.
func (r *Report) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "%s queue, %d-byte bodies, batches of %d, %d requests in flight, %d messages per phase (%s)\n\n",
		r.QueueType, r.Size, r.Batch, r.InFlight, r.Count, r.URL)
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
	return tw.Flush()
}
