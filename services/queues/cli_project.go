package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/queueshq/queues/sdk/go/client"
)

// projectCmd is `queues project` (the token's own project, its limits and usage) and
// `queues project usage` (its hourly metered use).
func (c *cli) projectCmd() *cobra.Command {
	cmd := c.leaf(clientSpec{
		use: "project", short: "the token's own project with its limits and usage; 'project usage' for hourly use",
		example: "  queues project\n  queues project usage --from 2026-03-14T00:00:00Z",
		run: func(ctx context.Context, _ *cobra.Command, _ []string) error {
			p, err := c.client.OwnProject(ctx)
			if err != nil {
				return err
			}
			return c.out(p, func(w io.Writer) { printProject(w, p) })
		},
	})
	cmd.Args = func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 {
			return unknown(cmd, "subcommand", args[0])
		}
		return nil
	}
	cmd.AddCommand(c.projectUsageCmd())
	return cmd
}

func printProject(w io.Writer, p *client.Project) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "project\t%s (%s)\n", p.Name, p.Slug)
	if l, u := p.Limits, p.Usage; l != nil && u != nil {
		fmt.Fprintf(tw, "queues\t%d of %d\n", u.Queues, l.MaxQueues)
		fmt.Fprintf(tw, "subscriptions\t%d of %d\n", u.Subscriptions, l.MaxSubscriptions)
		fmt.Fprintf(tw, "topics\t%d of %d\n", u.Topics, l.MaxTopics)
		fmt.Fprintf(tw, "stored bytes\t%d of %d\n", u.StoredBytes, l.MaxStoredBytes)
		fmt.Fprintf(tw, "requests per second\t%d\n", l.RequestsPerSecond)
		fmt.Fprintf(tw, "waiting receives\t%d\n", l.MaxWaitingReceives)
	}
	tw.Flush()
}

// timeValue is a flag holding an RFC 3339 time.
type timeValue struct{ t time.Time }

func (v *timeValue) String() string {
	if v.t.IsZero() {
		return ""
	}
	return v.t.Format(time.RFC3339)
}

func (v *timeValue) Set(s string) error {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return fmt.Errorf("want an RFC 3339 time such as 2026-03-14T15:00:00Z")
	}
	v.t = t
	return nil
}

// Type names the value in the help.
func (v *timeValue) Type() string { return "time" }

func (c *cli) projectUsageCmd() *cobra.Command {
	var from, to timeValue
	cmd := c.leaf(clientSpec{
		use: "usage", short: "the project's metered use, hour by hour", minArgs: 0, maxArgs: 0,
		example: "  queues project usage\n  queues project usage --from 2026-03-01T00:00:00Z --to 2026-03-08T00:00:00Z --json",
		run: func(ctx context.Context, _ *cobra.Command, _ []string) error {
			hours, err := c.client.OwnUsage(ctx, client.UsageRange{From: from.t, To: to.t})
			if err != nil {
				return err
			}
			return c.out(map[string]any{"usage": hours}, func(w io.Writer) {
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "HOUR\tREQUESTS\tSENT\tDELIVERED\tACKED\tBYTES IN\tBYTES OUT\tPUSHES\tBYTE-HOURS\tPUBLISHED")
				for _, h := range hours {
					fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", h.Hour.UTC().Format(time.RFC3339), h.Requests, h.MessagesSent,
						h.MessagesDelivered, h.MessagesAcked, h.BytesIn, h.BytesOut, h.PushAttempts, h.StoredByteHours, h.MessagesPublished)
				}
				tw.Flush()
			})
		},
	})
	cmd.Flags().Var(&from, "from", "start, RFC 3339 (default: 24 hours before --to)")
	cmd.Flags().Var(&to, "to", "end, RFC 3339, at most 31 days after --from (default: now)")
	return cmd
}
