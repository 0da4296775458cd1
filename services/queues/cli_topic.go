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

// topicCmd groups the topic commands (docs/topics.md): manage topics, publish,
// bind queues, read the log and the keyed state.
func (c *cli) topicCmd() *cobra.Command {
	return c.group("topic", "topics: publish once into every bound queue, read the log and the keyed state",
		`  queues topic create prices --retention 24h
  queues topic bind eu-prices prices --filter region=eu --from earliest
  queues topic publish prices '{"bid": 101.5}' --attr region=eu --key AAPL
  queues topic log prices --from 1 --limit 10
  queues topic state prices AAPL
  queues topic replay start prices --queue prices-rebuild --from 1
  queues topic stream prices --from earliest --delta`,
		c.topicCreateCmd(), c.topicListCmd(), c.topicGetCmd(), c.topicUpdateCmd(), c.topicDeleteCmd(),
		c.topicPublishCmd(), c.topicBindCmd(), c.topicBindingsCmd(), c.topicFilterCmd(), c.topicUnbindCmd(),
		c.topicLogCmd(), c.topicStateCmd(), c.topicReplayCmd(), c.topicStreamCmd())
}

// topicArg completes the first argument with the project's topic names (as queueArg does
// queues').
func (c *cli) topicArg(cmd *cobra.Command, args []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 || c.connect() != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), 2*time.Second)
	defer cancel()
	var names []cobra.Completion
	for t, err := range c.client.AllTopics(ctx, prefix) {
		if err != nil || len(names) == 1000 {
			break
		}
		names = append(names, t.Name)
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

func (c *cli) topicCreateCmd() *cobra.Command {
	var typ string
	var retention secondsValue
	cmd := c.leaf(clientSpec{
		use: "create NAME", short: "create a topic", minArgs: 1, maxArgs: 1,
		example: `  queues topic create prices
  queues topic create ledger.fifo --type fifo --retention 168h
  queues topic create fanout-only --retention 0`,
		run: func(ctx context.Context, _ *cobra.Command, args []string) error {
			if typ != "standard" && typ != "fifo" {
				return usagef("--type must be standard or fifo")
			}
			t, err := c.client.CreateTopic(ctx, client.CreateTopicInput{Name: args[0], Type: client.QueueType(typ), RetentionSeconds: retention.ptr()})
			if err != nil {
				return err
			}
			return c.out(t, func(w io.Writer) { fmt.Fprintf(w, "created %s topic %s (%s)\n", t.Type, t.Name, t.Slug) })
		},
	})
	cmd.Flags().StringVar(&typ, "type", "standard", "standard or fifo (fixed at creation; a topic binds queues of its type)")
	_ = cmd.RegisterFlagCompletionFunc("type", cobra.FixedCompletions([]cobra.Completion{"standard", "fifo"}, cobra.ShellCompDirectiveNoFileComp))
	cmd.Flags().Var(&retention, "retention", "how long the log keeps what was published, up to 336h (default 24h; 0: nothing beyond fan-out)")
	return cmd
}

func (c *cli) topicListCmd() *cobra.Command {
	var prefix string
	var limit int
	cmd := c.leaf(clientSpec{
		use: "list", short: "list the project's topics", minArgs: 0, maxArgs: 0,
		example: "  queues topic list\n  queues topic list --prefix pri --json",
		run: func(ctx context.Context, _ *cobra.Command, _ []string) error {
			ts := []client.Topic{}
			for t, err := range c.client.AllTopics(ctx, prefix) {
				if err != nil {
					return err
				}
				ts = append(ts, t)
				if limit > 0 && len(ts) == limit {
					break
				}
			}
			return c.out(ts, func(w io.Writer) {
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "NAME\tTYPE\tLAST SEQUENCE\tBINDINGS\tRETENTION\tSTORED BYTES\tSLUG")
				for _, t := range ts {
					fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%ds\t%d\t%s\n", t.Name, t.Type, t.LastSequence, t.Bindings, t.RetentionSeconds, t.StoredBytes, t.Slug)
				}
				tw.Flush()
			})
		},
	})
	cmd.Flags().StringVar(&prefix, "prefix", "", "only topics whose name starts with this")
	cmd.Flags().IntVar(&limit, "limit", 0, "at most this many topics (default all)")
	return cmd
}

func printTopic(w io.Writer, t *client.Topic) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, kv := range [][2]string{
		{"name", t.Name}, {"id", t.ID}, {"slug", t.Slug}, {"type", string(t.Type)},
		{"retention", fmt.Sprintf("%ds", t.RetentionSeconds)},
		{"log", fmt.Sprintf("sequences %d to %d held (last assigned %d)", t.FirstSequence, t.LastSequence, t.LastSequence)},
		{"stored bytes", fmt.Sprint(t.StoredBytes)},
		{"bindings", fmt.Sprint(t.Bindings)},
		{"created", t.CreatedAt.Format("2006-01-02T15:04:05.000Z07:00")},
		{"updated", t.UpdatedAt.Format("2006-01-02T15:04:05.000Z07:00")},
	} {
		fmt.Fprintf(tw, "%s:\t%s\n", kv[0], kv[1])
	}
	tw.Flush()
}

func (c *cli) topicGetCmd() *cobra.Command {
	return c.leaf(clientSpec{
		use: "get TOPIC", short: "show a topic's settings and log bounds", minArgs: 1, maxArgs: 1,
		example: "  queues topic get prices\n  queues topic get top_4kq... --json", completeArgs: c.topicArg,
		run: func(ctx context.Context, _ *cobra.Command, args []string) error {
			t, err := c.client.GetTopic(ctx, args[0])
			if err != nil {
				return err
			}
			return c.out(t, func(w io.Writer) { printTopic(w, t) })
		},
	})
}

func (c *cli) topicUpdateCmd() *cobra.Command {
	var retention secondsValue
	cmd := c.leaf(clientSpec{
		use: "update TOPIC", short: "change a topic's retention", minArgs: 1, maxArgs: 1,
		example: "  queues topic update prices --retention 72h", completeArgs: c.topicArg,
		run: func(ctx context.Context, _ *cobra.Command, args []string) error {
			if !retention.set {
				return usagef("nothing to change: give --retention")
			}
			t, err := c.client.UpdateTopic(ctx, args[0], client.UpdateTopicInput{RetentionSeconds: retention.ptr()})
			if err != nil {
				return err
			}
			return c.out(t, func(w io.Writer) { printTopic(w, t) })
		},
	})
	cmd.Flags().Var(&retention, "retention", "how long the log keeps what was published, up to 336h (0: nothing beyond fan-out)")
	return cmd
}

func (c *cli) topicDeleteCmd() *cobra.Command {
	return c.leaf(clientSpec{
		use: "delete TOPIC", short: "delete a topic, its log, keyed state and bindings (the queues stay)", minArgs: 1, maxArgs: 1,
		example: "  queues topic delete prices", completeArgs: c.topicArg,
		run: func(ctx context.Context, _ *cobra.Command, args []string) error {
			if err := c.client.DeleteTopic(ctx, args[0]); err != nil {
				return err
			}
			return c.out(map[string]string{"deleted": args[0]}, func(w io.Writer) { fmt.Fprintf(w, "deleted topic %s\n", args[0]) })
		},
	})
}

// publishFlags are the flags of topic publish.
type publishFlags struct {
	attrs        []string
	group, dedup string
	key, merge   string
	deleteKey    bool
}

func (c *cli) topicPublishCmd() *cobra.Command {
	var f publishFlags
	cmd := c.leaf(clientSpec{
		use: "publish TOPIC [BODY ...]", short: "publish messages from arguments or standard input, one a line",
		long: `Publishes each BODY to the topic; with no BODY, each line of standard input is a message (empty
lines are skipped). Every bound queue whose filter selects a message receives one copy. Prints
each message's id and sequence (--json: each result as a JSON line). --delete with --key
publishes a null body, which deletes the key's state.`,
		example: `  queues topic publish prices '{"bid": 101.5}' --attr region=eu
  seq 1 100 | queues topic publish numbers
  queues topic publish ledger.fifo debit --group account-7 --dedup-id tx-1
  queues topic publish quotes '{"bid": 101.5}' --key AAPL --merge patch
  queues topic publish quotes --key AAPL --delete`,
		minArgs: 1, maxArgs: -1, completeArgs: c.topicArg,
		run: func(ctx context.Context, _ *cobra.Command, args []string) error { return c.publish(ctx, args, &f) },
	})
	fl := cmd.Flags()
	fl.StringArrayVar(&f.attrs, "attr", nil, "an attribute NAME=VALUE for every message (repeatable)")
	fl.StringVar(&f.group, "group", "", "message group (required on fifo topics)")
	fl.StringVar(&f.dedup, "dedup-id", "", "deduplication id (fifo; unless there is exactly one BODY, the messages get -1, -2, … appended)")
	fl.StringVar(&f.key, "key", "", "keep the message as this key's state (topic state shows it)")
	fl.StringVar(&f.merge, "merge", "", "with --key: replace (default) or patch (RFC 7396 JSON Merge Patch into the key's state)")
	fl.BoolVar(&f.deleteKey, "delete", false, "with --key and no BODY: publish a null body, deleting the key's state")
	return cmd
}

// publish publishes the bodies of pos[1:], or the lines of standard input, in batches.
func (c *cli) publish(ctx context.Context, pos []string, f *publishFlags) error {
	attributes, err := (&sendFlags{attrs: f.attrs}).attributes() // --attr as send parses it
	if err != nil {
		return err
	}
	topic, next := pos[0], c.bodies(pos[1:])
	if f.deleteKey {
		if f.key == "" || len(pos) > 1 {
			return usagef("--delete needs --key and no BODY")
		}
		next = func() (string, bool, error) { return "", false, nil }
	}
	n, failed := 0, 0
	for {
		var batch []client.PublishMessage
		for len(batch) < client.MaxPublishBatch {
			b, ok, err := next()
			if err != nil {
				return fmt.Errorf("reading standard input: %w", err)
			}
			if !ok {
				break
			}
			m := client.PublishMessage{Body: b, Attributes: attributes, GroupID: f.group, Key: f.key, Merge: client.MergeMode(f.merge), Delete: f.deleteKey}
			if f.dedup != "" {
				m.DedupID = f.dedup
				if len(pos) != 2 { // not exactly one body: number them
					m.DedupID = fmt.Sprintf("%s-%d", f.dedup, n+len(batch)+1)
				}
			}
			batch = append(batch, m)
		}
		if f.deleteKey && n == 0 {
			batch = append(batch, client.PublishMessage{Key: f.key, Delete: true, Attributes: attributes, GroupID: f.group})
		}
		if len(batch) == 0 {
			break
		}
		nf, err := c.publishBatch(ctx, topic, batch, n)
		if err != nil {
			return err
		}
		failed += nf
		n += len(batch)
	}
	if n == 0 {
		return usagef("nothing to publish: give bodies as arguments or lines on standard input")
	}
	if failed > 0 {
		return &client.Error{Code: client.CodeInvalidArgument, Message: fmt.Sprintf("%d of %d messages not published", failed, n)}
	}
	return nil
}

// publishBatch publishes one batch (its first message is the sent+1-th), prints what was
// published and what was refused, and returns how many were refused.
func (c *cli) publishBatch(ctx context.Context, topic string, batch []client.PublishMessage, sent int) (int, error) {
	r, err := c.client.PublishBatch(ctx, topic, batch)
	if err != nil {
		return 0, err
	}
	for _, m := range r.Messages {
		dup := ""
		if m.Duplicate {
			dup = " (duplicate of an earlier publish)"
		}
		if err := c.line(m, fmt.Sprintf("published %s at sequence %d%s", m.MessageID, m.Sequence, dup)); err != nil {
			return 0, err
		}
	}
	for _, f := range r.Failed {
		msg := fmt.Sprintf("queues topic publish: message %d not published: %s: %s", sent+f.Index+1, f.Err.Code, f.Err.Message)
		if f.Err.Field != "" {
			msg += " (field " + f.Err.Field + ")"
		}
		fmt.Fprintln(c.io.stderr, msg)
	}
	return len(r.Failed), nil
}
