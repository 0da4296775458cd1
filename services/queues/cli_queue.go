package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/queueshq/queues/sdk/go/client"
)

func (c *cli) queueCmd() *cobra.Command {
	return c.group("queue", "create, list, inspect, change, purge and delete queues",
		`  queues queue create orders --visibility-timeout 1m --dlq orders-dlq
  queues queue list --prefix ord
  queues queue get orders --json`,
		c.queueCreateCmd(), c.queueListCmd(), c.queueGetCmd(), c.queueUpdateCmd(), c.queueDeleteCmd(), c.queuePurgeCmd(),
		c.queueConsumersCmd(), c.queueGroupsCmd(), c.queueReleaseGroupCmd())
}

// queueSettings are the flags of queue create and update.
type queueSettings struct {
	visibility, retention, delay, receiveWait secondsValue
	dlq                                       string
	maxReceive                                intValue
	contentBasedDedup                         bool
	fairness                                  string
	maxCancels                                intValue
	maxMessageBytes                           intValue
	groupPolicy                               string
	groupAffinity                             secondsValue
	maxGroups                                 intValue
	onDeadLetter                              string
}

func (s *queueSettings) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.Var(&s.visibility, "visibility-timeout", "how long a received message stays in flight (seconds or a duration; default 30s)")
	f.Var(&s.retention, "retention", "how long a message is kept (default 96h)")
	f.Var(&s.delay, "delay", "delay of new messages (default 0)")
	f.Var(&s.receiveWait, "receive-wait", "long-polling wait of receives that give none (default 0)")
	f.StringVar(&s.dlq, "dlq", "", "dead-letter queue (name, id or slug) for messages received --max-receive-count times")
	f.Var(&s.maxReceive, "max-receive-count", "receives before a message goes to --dlq (1-1000; default 5 with --dlq)")
	f.BoolVar(&s.contentBasedDedup, "content-based-dedup", false, "fifo: deduplicate sends by the body's SHA-256 when they give no dedup id")
	f.StringVar(&s.fairness, "fairness", "", "between waiting receives: fast (default), roundRobin or proportional")
	f.Var(&s.maxCancels, "max-cancels", "cancels a message may take; the one beyond goes to --dlq (0-1000; default 10)")
	f.Var(&s.maxMessageBytes, "max-message-bytes", "the largest message, body and attributes together, in bytes (1024-1048576; default 262144)")
	f.StringVar(&s.groupPolicy, "group-policy", "", "fifo: sequenced (default) or exclusive (a group binds to the consumer that receives it; receives need --consumer-id)")
	f.Var(&s.groupAffinity, "group-affinity", "fifo, exclusive: how long a group's binding lasts without activity (1s-24h; default 60s)")
	f.Var(&s.maxGroups, "max-groups-per-consumer", "fifo, exclusive: the most groups one consumer holds bound (1-10000; default 100)")
	_ = cmd.RegisterFlagCompletionFunc("group-policy", cobra.FixedCompletions([]cobra.Completion{"sequenced", "exclusive"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("fairness", cobra.FixedCompletions([]cobra.Completion{"fast", "roundRobin", "proportional"}, cobra.ShellCompDirectiveNoFileComp))
	f.StringVar(&s.onDeadLetter, "on-dead-letter", "", "fifo: what a dead-letter does to the rest of its group: continue (default), park or parkGroup (these need --dlq)")
	_ = cmd.RegisterFlagCompletionFunc("on-dead-letter", cobra.FixedCompletions([]cobra.Completion{"continue", "park", "parkGroup"}, cobra.ShellCompDirectiveNoFileComp))
}

// redrive is the policy the flags ask for, nil without --dlq. The API's
// redrive.deadLetterQueue takes an id or slug only, while everywhere else the CLI takes a
// queue's name too: --dlq is looked up first, so a name works as it does in a path.
func (s *queueSettings) redrive(ctx context.Context, c *client.Client) (*client.Redrive, error) {
	if s.dlq == "" {
		return nil, nil
	}
	dlq, err := c.GetQueue(ctx, s.dlq)
	if err != nil {
		return nil, fmt.Errorf("--dlq %s: %w", s.dlq, err)
	}
	n := 5
	if s.maxReceive.set {
		n = s.maxReceive.v
	}
	return &client.Redrive{DeadLetterQueue: dlq.ID, MaxReceiveCount: n}, nil
}

func (c *cli) queueCreateCmd() *cobra.Command {
	var s queueSettings
	var typ, delivery string
	cmd := c.leaf(clientSpec{
		use: "create NAME", short: "create a queue", minArgs: 1, maxArgs: 1,
		example: `  queues queue create orders
  queues queue create payments --type fifo --content-based-dedup
  queues queue create metrics --delivery atMostOnce
  queues queue create orders --visibility-timeout 1m --retention 24h --dlq orders-dlq --max-receive-count 3
  queues queue create images --max-message-bytes 1048576`,
		run: func(ctx context.Context, _ *cobra.Command, args []string) error {
			if typ != "standard" && typ != "fifo" {
				return usagef("--type must be standard or fifo")
			}
			if delivery != string(client.DeliveryAtLeastOnce) && delivery != string(client.DeliveryAtMostOnce) {
				return usagef("--delivery must be atLeastOnce or atMostOnce")
			}
			redrive, err := s.redrive(ctx, c.client)
			if err != nil {
				return err
			}
			q, err := c.client.CreateQueue(ctx, client.CreateQueueInput{
				Name: args[0], Type: client.QueueType(typ),
				VisibilityTimeoutSeconds: s.visibility.ptr(), RetentionSeconds: s.retention.ptr(),
				DelaySeconds: s.delay.ptr(), ReceiveWaitSeconds: s.receiveWait.ptr(),
				Redrive: redrive, ContentBasedDedup: s.contentBasedDedup, Fairness: client.Fairness(s.fairness),
				Delivery: client.Delivery(delivery), MaxCancels: s.maxCancels.ptr(),
				MaxMessageBytes: s.maxMessageBytes.ptr(),
				GroupPolicy:     client.GroupPolicy(s.groupPolicy), GroupAffinitySeconds: s.groupAffinity.ptr(),
				MaxGroupsPerConsumer: s.maxGroups.ptr(), OnDeadLetter: client.OnDeadLetter(s.onDeadLetter),
			})
			if err != nil {
				return err
			}
			return c.out(q, func(w io.Writer) { fmt.Fprintf(w, "created %s queue %s (%s)\n", q.Type, q.Name, q.Slug) })
		},
	})
	s.register(cmd)
	cmd.Flags().StringVar(&typ, "type", "standard", "standard or fifo (fixed at creation)")
	_ = cmd.RegisterFlagCompletionFunc("type", cobra.FixedCompletions([]cobra.Completion{"standard", "fifo"}, cobra.ShellCompDirectiveNoFileComp))
	cmd.Flags().StringVar(&delivery, "delivery", string(client.DeliveryAtLeastOnce),
		"atLeastOnce, or atMostOnce: a receive removes what it hands out (standard only; fixed at creation)")
	_ = cmd.RegisterFlagCompletionFunc("delivery", cobra.FixedCompletions([]cobra.Completion{"atLeastOnce", "atMostOnce"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("dlq", c.queueArg)
	return cmd
}

func (c *cli) queueListCmd() *cobra.Command {
	var prefix string
	var limit int
	cmd := c.leaf(clientSpec{
		use: "list", short: "list the project's queues with their message counts", minArgs: 0, maxArgs: 0,
		example: `  queues queue list
  queues queue list --prefix orders --json`,
		run: func(ctx context.Context, _ *cobra.Command, _ []string) error {
			var qs []client.Queue
			for q, err := range c.client.AllQueues(ctx, prefix) {
				if err != nil {
					return err
				}
				qs = append(qs, q)
				if limit > 0 && len(qs) == limit {
					break
				}
			}
			if qs == nil {
				qs = []client.Queue{}
			}
			return c.out(qs, func(w io.Writer) {
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "NAME\tTYPE\tVISIBLE\tIN FLIGHT\tDELAYED\tOLDEST\tSLUG")
				for _, q := range qs {
					fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%ds\t%s\n", q.Name, q.Type, q.Counts.Visible, q.Counts.InFlight, q.Counts.Delayed, q.Counts.OldestMessageAgeSeconds, q.Slug)
				}
				tw.Flush()
			})
		},
	})
	cmd.Flags().StringVar(&prefix, "prefix", "", "only queues whose name starts with this")
	cmd.Flags().IntVar(&limit, "limit", 0, "at most this many queues (default all)")
	return cmd
}

func printQueue(w io.Writer, q *client.Queue) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	redrive := "none"
	if q.Redrive != nil {
		redrive = fmt.Sprintf("to %s after %d receives", q.Redrive.DeadLetterQueue, q.Redrive.MaxReceiveCount)
	}
	more := ""
	if q.Counts.Truncated {
		more = " (approximate)"
	}
	for _, kv := range [][2]string{
		{"name", q.Name}, {"id", q.ID}, {"slug", q.Slug}, {"type", string(q.Type)},
		{"visibility timeout", fmt.Sprintf("%ds", q.VisibilityTimeoutSeconds)},
		{"retention", fmt.Sprintf("%ds", q.RetentionSeconds)},
		{"delay", fmt.Sprintf("%ds", q.DelaySeconds)},
		{"receive wait", fmt.Sprintf("%ds", q.ReceiveWaitSeconds)},
		{"redrive", redrive},
		{"content-based dedup", fmt.Sprint(q.ContentBasedDedup)},
		{"fairness", string(q.Fairness)},
		{"max cancels", fmt.Sprint(q.MaxCancels)},
		{"max message bytes", fmt.Sprint(q.MaxMessageBytes)},
		{"group policy", groupPolicyOf(q)},
		{"on dead letter", string(q.OnDeadLetter)},
		{"delivery", string(q.Delivery)},
		{"partitions", fmt.Sprint(q.Partitions)},
		{"messages", fmt.Sprintf("%d visible, %d in flight, %d delayed%s; oldest %ds", q.Counts.Visible, q.Counts.InFlight, q.Counts.Delayed, more, q.Counts.OldestMessageAgeSeconds)},
		{"created", q.CreatedAt.Format("2006-01-02T15:04:05.000Z07:00")},
		{"updated", q.UpdatedAt.Format("2006-01-02T15:04:05.000Z07:00")},
	} {
		fmt.Fprintf(tw, "%s:\t%s\n", kv[0], kv[1])
	}
	tw.Flush()
}

func (c *cli) queueGetCmd() *cobra.Command {
	return c.leaf(clientSpec{
		use: "get QUEUE", short: "show a queue's settings and message counts", minArgs: 1, maxArgs: 1,
		example:      "  queues queue get orders\n  queues queue get que_4kq... --json",
		completeArgs: c.queueArg,
		run: func(ctx context.Context, _ *cobra.Command, args []string) error {
			q, err := c.client.GetQueue(ctx, args[0])
			if err != nil {
				return err
			}
			return c.out(q, func(w io.Writer) { printQueue(w, q) })
		},
	})
}

func (c *cli) queueUpdateCmd() *cobra.Command {
	var s queueSettings
	var noRedrive bool
	cmd := c.leaf(clientSpec{
		use: "update QUEUE", short: "change a queue's settings (only the flags given)", minArgs: 1, maxArgs: 1,
		example: `  queues queue update orders --visibility-timeout 90
  queues queue update orders --dlq orders-dlq --max-receive-count 3
  queues queue update orders --no-redrive
  queues queue update payments --content-based-dedup=false`,
		completeArgs: c.queueArg,
		run: func(ctx context.Context, cmd *cobra.Command, args []string) error {
			if noRedrive && s.dlq != "" {
				return usagef("--dlq and --no-redrive contradict each other")
			}
			if s.maxReceive.set && s.dlq == "" {
				return usagef("--max-receive-count needs --dlq")
			}
			redrive, err := s.redrive(ctx, c.client)
			if err != nil {
				return err
			}
			in := client.UpdateQueueInput{
				VisibilityTimeoutSeconds: s.visibility.ptr(), RetentionSeconds: s.retention.ptr(),
				DelaySeconds: s.delay.ptr(), ReceiveWaitSeconds: s.receiveWait.ptr(),
				Redrive: redrive, RemoveRedrive: noRedrive, Fairness: client.Fairness(s.fairness),
				MaxCancels: s.maxCancels.ptr(), MaxMessageBytes: s.maxMessageBytes.ptr(),
				GroupPolicy: client.GroupPolicy(s.groupPolicy), GroupAffinitySeconds: s.groupAffinity.ptr(),
				MaxGroupsPerConsumer: s.maxGroups.ptr(), OnDeadLetter: client.OnDeadLetter(s.onDeadLetter),
			}
			if cmd.Flags().Changed("content-based-dedup") {
				in.ContentBasedDedup = client.Bool(s.contentBasedDedup)
			}
			q, err := c.client.UpdateQueue(ctx, args[0], in)
			if err != nil {
				return err
			}
			return c.out(q, func(w io.Writer) { printQueue(w, q) })
		},
	})
	s.register(cmd)
	cmd.Flags().BoolVar(&noRedrive, "no-redrive", false, "remove the redrive policy")
	_ = cmd.RegisterFlagCompletionFunc("dlq", c.queueArg)
	return cmd
}

func (c *cli) queueDeleteCmd() *cobra.Command {
	return c.leaf(clientSpec{
		use: "delete QUEUE", short: "delete a queue and its messages", minArgs: 1, maxArgs: 1,
		example: "  queues queue delete orders", completeArgs: c.queueArg,
		run: func(ctx context.Context, _ *cobra.Command, args []string) error {
			if err := c.client.DeleteQueue(ctx, args[0]); err != nil {
				return err
			}
			return c.out(map[string]string{"deleted": args[0]}, func(w io.Writer) { fmt.Fprintf(w, "deleted queue %s\n", args[0]) })
		},
	})
}

func (c *cli) queuePurgeCmd() *cobra.Command {
	return c.leaf(clientSpec{
		use: "purge QUEUE", short: "delete the messages sent before now (once a minute)", minArgs: 1, maxArgs: 1,
		example: "  queues queue purge orders", completeArgs: c.queueArg,
		run: func(ctx context.Context, _ *cobra.Command, args []string) error {
			at, err := c.client.PurgeQueue(ctx, args[0])
			if err != nil {
				return err
			}
			return c.out(map[string]any{"purgedAt": at}, func(w io.Writer) {
				fmt.Fprintf(w, "purged queue %s: messages sent before %s are gone\n", args[0], at.Format("2006-01-02T15:04:05.000Z07:00"))
			})
		},
	})
}

func (c *cli) queueConsumersCmd() *cobra.Command {
	return c.leaf(clientSpec{
		use: "consumers QUEUE", short: "list the consumers seen in the last 5 minutes and what they hold", minArgs: 1, maxArgs: 1,
		example: "  queues queue consumers jobs\n  queues queue consumers jobs --json", completeArgs: c.queueArg,
		run: func(ctx context.Context, _ *cobra.Command, args []string) error {
			all := []client.Consumer{}
			for page := (client.Page{Limit: 1000}); ; {
				p, err := c.client.ListConsumers(ctx, args[0], page)
				if err != nil {
					return err
				}
				all = append(all, p.Consumers...)
				if p.NextCursor == nil {
					break
				}
				page.Cursor = *p.NextCursor
			}
			return c.out(all, func(w io.Writer) { printConsumers(w, all) })
		},
	})
}

func printConsumers(w io.Writer, cs []client.Consumer) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CONSUMER\tIN FLIGHT\tMAX BACKLOG\tLAST SEEN")
	for _, x := range cs {
		bound := "-"
		if x.MaxBacklog != nil {
			bound = fmt.Sprint(*x.MaxBacklog)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", x.ConsumerID, x.InFlight, bound, x.LastSeenAt.Format("2006-01-02T15:04:05.000Z07:00"))
	}
	tw.Flush()
}

// groupPolicyOf describes a fifo queue's group policy for queue get ("-" on standard queues).
func groupPolicyOf(q *client.Queue) string {
	switch q.GroupPolicy {
	case "":
		return "-"
	case client.GroupExclusive:
		return fmt.Sprintf("exclusive (affinity %ds, at most %d groups per consumer)", q.GroupAffinitySeconds, q.MaxGroupsPerConsumer)
	}
	return string(q.GroupPolicy)
}
