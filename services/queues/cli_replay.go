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

// topicReplayCmd groups the replay commands (docs/topics.md#replay): copy a range
// of a topic's log into a queue, as a task with a move task's lifecycle.
func (c *cli) topicReplayCmd() *cobra.Command {
	return c.group("replay", "replay a range of a topic's log into a queue (a task: list, follow, cancel)",
		`  queues topic replay start prices --queue prices-rebuild --from 1 --wait
  queues topic replay start prices --queue eu-prices --from 2026-12-04T09:00:00Z --filter region=eu --dry-run
  queues topic replay list prices
  queues topic replay cancel prices 0193b4f0-1a2b-7c3d-8e4f-5a6b7c8d9e0f`,
		c.replayStartCmd(), c.replayListCmd(), c.replayGetCmd(), c.replayCancelCmd())
}

// replayFlags are the flags of replay start.
type replayFlags struct {
	queue, from, to string
	filter          filterFlag
	rate            intValue
	dryRun, wait    bool
}

func (c *cli) replayStartCmd() *cobra.Command {
	var f replayFlags
	cmd := c.leaf(clientSpec{
		use: "start TOPIC --queue QUEUE --from FROM", short: "replay a range of TOPIC's log into a queue (prints the replay)",
		long: `Starts a replay: the entries of TOPIC's log from --from to --to (inclusive; sequences or RFC 3339
times; --to default: the last sequence now) whose attributes match --filter enter --queue as new
messages (new ids, each carrying replayOf: the topic and the sequence), at --rate a second. A
queue runs one task at a time, a replay into it or a move task from it (exit code of a
conflict while one runs). --dry-run only counts what would be replayed (the command follows
it and prints the count). --wait follows the replay until it finishes (exit 1 if it fails).`,
		example: `  queues topic replay start prices --queue prices-rebuild --from 1
  queues topic replay start prices --queue eu-prices --from 120 --to 130 --filter region=eu --rate 2000 --wait
  queues topic replay start prices --queue eu-prices --from 2026-12-04T09:00:00Z --dry-run --json`,
		minArgs: 1, maxArgs: 1, completeArgs: c.topicArg,
		run: func(ctx context.Context, _ *cobra.Command, args []string) error {
			return c.replayStart(ctx, args[0], &f)
		},
	})
	fl := cmd.Flags()
	fl.StringVar(&f.queue, "queue", "", "the destination queue (id or name; required)")
	fl.StringVar(&f.from, "from", "", "the first sequence, or an RFC 3339 time (required)")
	fl.StringVar(&f.to, "to", "", "the last sequence, or an RFC 3339 time (inclusive; default the last now)")
	fl.StringArrayVar((*[]string)(&f.filter), "filter", nil, filterUsage)
	fl.Var(&f.rate, "rate", "messages a second, 1-10000 (default 500)")
	fl.BoolVar(&f.dryRun, "dry-run", false, "only count what would be replayed (copies nothing; waits for the count)")
	fl.BoolVar(&f.wait, "wait", false, "follow the replay until it finishes, printing its progress")
	_ = cmd.RegisterFlagCompletionFunc("queue", c.queueArg)
	return cmd
}

// input turns the flags into the request, or a usage error naming the flag.
func (f *replayFlags) input() (client.StartReplayInput, error) {
	in := client.StartReplayInput{Queue: f.queue, MaxMessagesPerSecond: f.rate.ptr(), DryRun: f.dryRun}
	if f.queue == "" {
		return in, usagef("--queue is required: the queue to replay into")
	}
	if f.from == "" {
		return in, usagef("--from is required: a sequence or an RFC 3339 time")
	}
	in.From = f.from
	if f.to != "" {
		in.To = f.to
	}
	var err error
	in.Filter, err = f.filter.filter()
	return in, err
}

func (c *cli) replayStart(ctx context.Context, topic string, f *replayFlags) error {
	in, err := f.input()
	if err != nil {
		return err
	}
	r, err := c.client.StartReplay(ctx, topic, in)
	if err != nil {
		return err
	}
	if f.dryRun { // a dry run answers its count, or (a long range) is a task that counts
		if r, err = c.replayFollow(ctx, topic, r, false); err != nil {
			return err
		}
		return c.out(r, func(w io.Writer) {
			fmt.Fprintf(w, "dry run: %d of sequences %d..%d would be replayed (nothing copied)\n", r.ToMove, r.From, r.To)
		})
	}
	if f.wait {
		if r, err = c.replayFollow(ctx, topic, r, !c.json); err != nil {
			return err
		}
		if err := c.out(r, func(w io.Writer) { printReplay(w, r) }); err != nil {
			return err
		}
		if r.Status == "failed" {
			return fmt.Errorf("replay %s failed: %s", r.ID, r.Error)
		}
		return nil
	}
	return c.out(r, func(w io.Writer) {
		fmt.Fprintf(w, "started replay %s of %s %d..%d into %s (%d to replay so far)\n", r.ID, topic, r.From, r.To, replayQueue(r), r.ToMove)
	})
}

// replayFollow reads r until it leaves running, printing a progress line each time it changes
// when progress is set, and answers the final replay.
func (c *cli) replayFollow(ctx context.Context, topic string, r *client.Replay, progress bool) (*client.Replay, error) {
	tick := time.NewTicker(movePoll)
	defer tick.Stop()
	var last int64 = -1
	for r.Status == "running" {
		if progress && r.Moved != last {
			fmt.Fprintf(c.io.stdout, "%s: %d of %d replayed, %d failed\n", r.ID, r.Moved, r.ToMove, r.Failed)
			last = r.Moved
		}
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case <-tick.C:
		}
		var err error
		if r, err = c.client.GetReplay(ctx, topic, r.ID); err != nil {
			return r, err
		}
	}
	return r, nil
}

func (c *cli) replayListCmd() *cobra.Command {
	var limit int
	cmd := c.leaf(clientSpec{
		use: "list TOPIC", short: "a topic's replays, newest first", minArgs: 1, maxArgs: 1,
		example: "  queues topic replay list prices\n  queues topic replay list prices --limit 5 --json", completeArgs: c.topicArg,
		run: func(ctx context.Context, _ *cobra.Command, args []string) error {
			p, err := c.client.ListReplays(ctx, args[0], client.Page{Limit: limit})
			if err != nil {
				return err
			}
			return c.out(p.Replays, func(w io.Writer) { printReplays(w, p.Replays) })
		},
	})
	cmd.Flags().IntVar(&limit, "limit", 20, "how many recent replays (1-100)")
	return cmd
}

func (c *cli) replayGetCmd() *cobra.Command {
	return c.replayTaskCmd("get", "show one replay and its progress", (*client.Client).GetReplay)
}

func (c *cli) replayCancelCmd() *cobra.Command {
	return c.replayTaskCmd("cancel", "stop a running replay after the batch in transit (what it copied stays)", (*client.Client).CancelReplay)
}

// replayTaskCmd is a replay verb that takes the topic and a replay id and prints the replay.
func (c *cli) replayTaskCmd(verb, short string, call func(c *client.Client, ctx context.Context, topic, id string) (*client.Replay, error)) *cobra.Command {
	return c.leaf(clientSpec{
		use: verb + " TOPIC REPLAY_ID", short: short, minArgs: 2, maxArgs: 2, completeArgs: c.topicArg,
		example: "  queues topic replay " + verb + " prices 0193b4f0-1a2b-7c3d-8e4f-5a6b7c8d9e0f",
		run: func(ctx context.Context, _ *cobra.Command, args []string) error {
			r, err := call(c.client, ctx, args[0], args[1])
			if err != nil {
				return err
			}
			return c.out(r, func(w io.Writer) { printReplay(w, r) })
		},
	})
}

func printReplay(w io.Writer, r *client.Replay) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	rows := [][2]string{
		{"replay", r.ID}, {"status", r.Status}, {"topic", r.Topic}, {"queue", replayQueue(r)},
		{"range", fmt.Sprintf("%d..%d", r.From, r.To)}, {"filter", filterText(r.Filter)},
		{"rate", fmt.Sprintf("%d/s", r.MaxMessagesPerSecond)},
		{"replayed", fmt.Sprintf("%d of %d", r.Moved, r.ToMove)}, {"failed", fmt.Sprint(r.Failed)},
		{"started", r.StartedAt.Format(time.RFC3339)}, {"finished", replayFinished(r)},
	}
	if r.Error != "" {
		rows = append(rows, [2]string{"error", r.Error})
	}
	for _, kv := range rows {
		fmt.Fprintf(tw, "%s:\t%s\n", kv[0], kv[1])
	}
	tw.Flush()
}

func printReplays(w io.Writer, rs []client.Replay) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATUS\tRANGE\tREPLAYED\tTO REPLAY\tFAILED\tQUEUE\tSTARTED\tFINISHED")
	for i := range rs {
		r := &rs[i]
		fmt.Fprintf(tw, "%s\t%s\t%d..%d\t%d\t%d\t%d\t%s\t%s\t%s\n", r.ID, r.Status, r.From, r.To, r.Moved, r.ToMove, r.Failed,
			replayQueue(r), r.StartedAt.Format(time.RFC3339), replayFinished(r))
	}
	tw.Flush()
}

// replayQueue names a replay's destination ("(deleted)" once the queue is gone).
func replayQueue(r *client.Replay) string {
	if r.Queue == nil {
		return "(deleted) " + r.QueueID
	}
	return *r.Queue
}

func replayFinished(r *client.Replay) string {
	if r.FinishedAt == nil {
		return "-"
	}
	return r.FinishedAt.Format(time.RFC3339)
}
