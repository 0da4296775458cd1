package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/queueshq/queues/sdk/go/client"
)

// The topic commands on bindings (a queue's sources), the log and the keyed state.

func (c *cli) topicBindCmd() *cobra.Command {
	var from string
	var filter filterFlag
	cmd := c.leaf(clientSpec{
		use: "bind QUEUE TOPIC", short: "bind a queue to a topic: it receives a copy of every message the filter selects",
		long: `Binds QUEUE to TOPIC: every message published to the topic from --from on that --filter selects
enters the queue once, with the id the publish answered. --from is now (default), earliest (the
oldest the log holds), a sequence, or an RFC 3339 time (the first message published at or after
it). A queue is bound to a topic once (exit code of a conflict: change the filter with 'topic
filter' instead); a fifo topic binds fifo queues, a standard topic standard ones.`,
		example: `  queues topic bind eu-prices prices --filter region=eu
  queues topic bind audit prices --from earliest
  queues topic bind replayed prices --from 2026-12-01T00:00:00Z --json`,
		minArgs: 2, maxArgs: 2, completeArgs: c.queueThenTopicArg,
		run: func(ctx context.Context, _ *cobra.Command, args []string) error {
			flt, err := filter.filter()
			if err != nil {
				return err
			}
			b, err := c.client.Bind(ctx, args[0], client.BindInput{Topic: args[1], Filter: flt, From: client.Position(from)})
			if err != nil {
				return err
			}
			return c.out(b, func(w io.Writer) {
				fmt.Fprintf(w, "bound queue %s to topic %s (%s) from sequence %d\n", b.Queue, b.Topic, b.Slug, b.StartSequence)
			})
		},
	})
	cmd.Flags().StringVar(&from, "from", "", "now (default), earliest, a sequence or an RFC 3339 time")
	cmd.Flags().StringArrayVar((*[]string)(&filter), "filter", nil, filterUsage)
	return cmd
}

// queueThenTopicArg completes bind's arguments: a queue name, then a topic name.
func (c *cli) queueThenTopicArg(cmd *cobra.Command, args []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) == 1 {
		return c.topicArg(cmd, nil, prefix)
	}
	return c.queueArg(cmd, args, prefix)
}

func (c *cli) topicBindingsCmd() *cobra.Command {
	var queue bool
	cmd := c.leaf(clientSpec{
		use: "bindings TOPIC", completeArgs: c.topicArg, short: "list a topic's bindings (with --queue: a queue's sources) and their progress",
		example: `  queues topic bindings prices
  queues topic bindings --queue eu-prices --json`,
		minArgs: 1, maxArgs: 1,
		run: func(ctx context.Context, _ *cobra.Command, args []string) error {
			var bs []client.Binding
			var err error
			if queue {
				bs, err = c.client.ListSources(ctx, args[0])
			} else {
				bs, err = c.client.TopicBindings(ctx, args[0])
			}
			if err != nil {
				return err
			}
			return c.out(bs, func(w io.Writer) { printBindings(w, bs) })
		},
	})
	cmd.Flags().BoolVar(&queue, "queue", false, "the argument is a queue: list its sources")
	return cmd
}

func printBindings(w io.Writer, bs []client.Binding) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "BINDING\tQUEUE\tTOPIC\tFILTER\tSEQUENCE\tLAG\tCOPIED\tFAILED\tLAST FAILURE")
	for _, b := range bs {
		last := "-"
		if b.LastFailure != nil {
			last = b.LastFailure.At.Format("2006-01-02T15:04:05Z07:00") + " " + b.LastFailure.Reason
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\n", b.Slug, b.Queue, b.Topic, filterText(b.Filter), b.Sequence, b.Lag, b.Copied, b.Failed, last)
	}
	tw.Flush()
}

// filterText is a filter as name=value pairs in name order ("-" for none).
func filterText(f *client.Filter) string {
	if f == nil || len(f.Attributes) == 0 {
		return "-"
	}
	var parts []string
	for k, vs := range f.Attributes {
		for _, v := range vs {
			parts = append(parts, k+"="+v)
		}
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

func (c *cli) topicFilterCmd() *cobra.Command {
	var filter filterFlag
	cmd := c.leaf(clientSpec{
		use: "filter QUEUE BINDING", short: "replace a binding's filter (no --filter: every message enters the queue)",
		long: `Replaces the filter of one of QUEUE's bindings (its id or qbd_ slug, as 'topic bindings' prints):
messages published after the answer are judged by the new filter. Without --filter the binding
takes every message.`,
		example: `  queues topic filter eu-prices qbd_4kq... --filter region=eu --filter region=uk
  queues topic filter eu-prices qbd_4kq...`,
		minArgs: 2, maxArgs: 2, completeArgs: c.queueArg,
		run: func(ctx context.Context, _ *cobra.Command, args []string) error {
			flt, err := filter.filter()
			if err != nil {
				return err
			}
			b, err := c.client.UpdateSourceFilter(ctx, args[0], args[1], flt)
			if err != nil {
				return err
			}
			return c.out(b, func(w io.Writer) {
				fmt.Fprintf(w, "binding %s of queue %s: filter %s\n", b.Slug, b.Queue, filterText(b.Filter))
			})
		},
	})
	cmd.Flags().StringArrayVar((*[]string)(&filter), "filter", nil, filterUsage)
	return cmd
}

func (c *cli) topicUnbindCmd() *cobra.Command {
	return c.leaf(clientSpec{
		use: "unbind QUEUE BINDING", short: "delete a binding: the queue receives nothing more from the topic (and keeps what it has)",
		example: "  queues topic unbind eu-prices qbd_4kq...", minArgs: 2, maxArgs: 2, completeArgs: c.queueArg,
		run: func(ctx context.Context, _ *cobra.Command, args []string) error {
			if err := c.client.Unbind(ctx, args[0], args[1]); err != nil {
				return err
			}
			return c.out(map[string]string{"deleted": args[1]}, func(w io.Writer) {
				fmt.Fprintf(w, "unbound binding %s of queue %s\n", args[1], args[0])
			})
		},
	})
}

// logFlags are the flags of topic log.
type logFlags struct {
	from, to string
	limit    int
	filter   filterFlag
}

func (c *cli) topicLogCmd() *cobra.Command {
	var f logFlags
	cmd := c.leaf(clientSpec{
		use: "log TOPIC", short: "read a topic's log in sequence order (read-only)",
		long: `Prints the entries of TOPIC's log from --from (a sequence or an RFC 3339 time; default the
oldest held) to --to (inclusive; default the last), at most --limit of them, only those whose
attributes match --filter. --json prints the entries as the API answers them.`,
		example: `  queues topic log prices
  queues topic log prices --from 120 --to 130
  queues topic log prices --from 2026-12-04T09:00:00Z --filter region=eu --limit 0 --json`,
		minArgs: 1, maxArgs: 1, completeArgs: c.topicArg,
		run: func(ctx context.Context, _ *cobra.Command, args []string) error { return c.topicLog(ctx, args[0], &f) },
	})
	fl := cmd.Flags()
	fl.StringVar(&f.from, "from", "", "the first sequence, or an RFC 3339 time (default the oldest held)")
	fl.StringVar(&f.to, "to", "", "the last sequence, or an RFC 3339 time (inclusive; default the last)")
	fl.IntVar(&f.limit, "limit", 100, "at most this many entries (0: all)")
	fl.StringArrayVar((*[]string)(&f.filter), "filter", nil, filterUsage)
	return cmd
}

func (c *cli) topicLog(ctx context.Context, topic string, f *logFlags) error {
	flt, err := f.filter.filter()
	if err != nil {
		return err
	}
	if f.limit < 0 {
		return usagef("--limit must be 0 or more")
	}
	all := []client.LogEntry{}
	in := client.ReadLogInput{From: client.Position(f.from), To: client.Position(f.to), Filter: flt}
	for {
		in.Limit = 1000
		if f.limit > 0 {
			in.Limit = min(1000, f.limit-len(all))
		}
		page, err := c.client.ReadLog(ctx, topic, in)
		if err != nil {
			return err
		}
		all = append(all, page.Messages...)
		if page.NextCursor == nil || (f.limit > 0 && len(all) >= f.limit) {
			break
		}
		in.Cursor = *page.NextCursor
	}
	return c.out(all, func(w io.Writer) {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "SEQUENCE\tMESSAGE ID\tPUBLISHED\tKEY\tATTRIBUTES\tBODY")
		for _, m := range all {
			body := oneLine(m.Body)
			if m.Deleted {
				body = "(deleted the key's state)"
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", m.Sequence, m.MessageID, m.PublishedAt.Format("2006-01-02T15:04:05Z07:00"),
				cmpOr(m.Key, "-"), attrText(m.Attributes), body)
		}
		tw.Flush()
	})
}

func (c *cli) topicStateCmd() *cobra.Command {
	var limit int
	cmd := c.leaf(clientSpec{
		use: "state TOPIC [KEY]", short: "print one key's state (its body), or every key's in key order",
		long: `With KEY, prints the key's state: the body of the last message published with it (merged, for
--merge patch publishes); a key without state is not found. Without KEY, lists every key's
state in key order (at most --limit). --json prints the API's state objects.`,
		example: `  queues topic state quotes AAPL
  queues topic state quotes --json`,
		minArgs: 1, maxArgs: 2, completeArgs: c.topicArg,
		run: func(ctx context.Context, _ *cobra.Command, args []string) error {
			if len(args) == 2 {
				s, err := c.client.State(ctx, args[0], args[1])
				if err != nil {
					return err
				}
				return c.out(s, func(w io.Writer) { fmt.Fprintln(w, s.Body) })
			}
			return c.topicStates(ctx, args[0], limit)
		},
	})
	cmd.Flags().IntVar(&limit, "limit", 100, "without KEY: at most this many keys (0: all)")
	return cmd
}

func (c *cli) topicStates(ctx context.Context, topic string, limit int) error {
	if limit < 0 {
		return usagef("--limit must be 0 or more")
	}
	all := []client.StateEntry{}
	for s, err := range c.client.AllState(ctx, topic) {
		if err != nil {
			return err
		}
		all = append(all, s)
		if limit > 0 && len(all) == limit {
			break
		}
	}
	return c.out(all, func(w io.Writer) {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "KEY\tSEQUENCE\tPUBLISHED\tATTRIBUTES\tBODY")
		for _, s := range all {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", s.Key, s.Sequence, s.PublishedAt.Format("2006-01-02T15:04:05Z07:00"), attrText(s.Attributes), oneLine(s.Body))
		}
		tw.Flush()
	})
}
