package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/queueshq/queues/sdk/go/client"
)

// moveCmd groups the move-task commands: redrive a dead-letter queue, or replay a queue's
// messages into another (docs/redrive.md).
func (c *cli) moveCmd() *cobra.Command {
	return c.group("move", "move tasks: send a dead-letter queue's messages back (redrive) or a queue's to another (replay)",
		`  queues move start orders-dlq                      # each message back to its source queue
  queues move start orders-dlq --dry-run --reason maxReceiveCount
  queues move start orders-dlq --to orders-replay --rate 2000 --wait
  queues move start orders-dlq --action delete --reason poison
  queues move list orders-dlq
  queues move cancel orders-dlq 0193a5b4-3c4d-7e5f-8061-7c8d9e0f1a2b`,
		c.moveStartCmd(), c.moveListCmd(), c.moveGetCmd(), c.moveCancelCmd())
}

// moveFlags are the flags of move start.
type moveFlags struct {
	to, action, reason, group, after, before string
	attrs                                    []string
	rate                                     intValue
	dryRun, wait                             bool
}

func (c *cli) moveStartCmd() *cobra.Command {
	var f moveFlags
	cmd := c.leaf(clientSpec{
		use: "start QUEUE", short: "start a move task of QUEUE's visible messages (prints the task)",
		long: `Starts a move task: QUEUE's visible messages that match the filter flags move, at --rate a
second, to --to, or without --to each back to the queue it was dead-lettered from. A moved
message keeps its id, body, attributes and group; its receive count restarts at 0. One task
runs per queue at a time (exit code of a conflict while one runs). --dry-run only counts what
would move (a task too: the command follows it and prints its counts). --action delete deletes the matching messages instead of moving them (no --to).
--wait follows the task until it finishes (exit 1 if it fails).`,
		example: `  queues move start orders-dlq
  queues move start orders-dlq --dry-run --reason maxReceiveCount --sent-after 2026-11-01T00:00:00Z
  queues move start orders-dlq --to orders-replay --rate 2000 --attr kind=refund --attr kind=charge
  queues move start orders-dlq --action delete --reason poison --sent-before 2026-11-01T00:00:00Z
  queues move start orders-dlq --wait --json`,
		minArgs: 1, maxArgs: 1, completeArgs: c.queueArg,
		run: func(ctx context.Context, _ *cobra.Command, args []string) error { return c.moveStart(ctx, args[0], &f) },
	})
	fl := cmd.Flags()
	fl.StringVar(&f.to, "to", "", "destination queue (id, slug or name; default: each message's dead-letter source)")
	fl.StringVar(&f.action, "action", "", "move (default) or delete: delete the matching messages instead of moving them")
	fl.Var(&f.rate, "rate", "messages a second, 1-10000 (default 500)")
	fl.BoolVar(&f.dryRun, "dry-run", false, "only count what would move (moves nothing; waits for the count)")
	fl.BoolVar(&f.wait, "wait", false, "follow the task until it finishes, printing its progress")
	fl.StringVar(&f.reason, "reason", "", "filter: only messages dead-lettered for this reason (maxReceiveCount, …)")
	fl.StringVar(&f.after, "sent-after", "", "filter: only messages sent after this RFC 3339 time")
	fl.StringVar(&f.before, "sent-before", "", "filter: only messages sent before this RFC 3339 time")
	fl.StringVar(&f.group, "group", "", "filter: only messages of this group (fifo)")
	fl.StringArrayVar(&f.attrs, "attr", nil, "filter: attribute NAME=VALUE (repeatable; values of one NAME are alternatives)")
	_ = cmd.RegisterFlagCompletionFunc("to", c.queueArg)
	return cmd
}

// input turns the flags into the request, or a usage error naming the flag.
func (f *moveFlags) input() (client.StartMoveTaskInput, error) {
	in := client.StartMoveTaskInput{Destination: f.to, Action: f.action, MaxMessagesPerSecond: f.rate.ptr(), DryRun: f.dryRun}
	switch f.action {
	case "", client.MoveActionMove:
	case client.MoveActionDelete:
		if f.to != "" {
			return in, usagef("--to and --action delete contradict each other (a delete task moves nothing)")
		}
	default:
		return in, usagef("--action wants move or delete, not %q", f.action)
	}
	var filter client.MoveFilter
	var err error
	if filter.SentAfter, err = timeFlag("--sent-after", f.after); err != nil {
		return in, err
	}
	if filter.SentBefore, err = timeFlag("--sent-before", f.before); err != nil {
		return in, err
	}
	for _, a := range f.attrs {
		k, v, ok := strings.Cut(a, "=")
		if !ok || k == "" {
			return in, usagef("--attr wants NAME=VALUE, not %q", a)
		}
		if filter.Attributes == nil {
			filter.Attributes = map[string][]string{}
		}
		filter.Attributes[k] = append(filter.Attributes[k], v)
	}
	filter.Reason, filter.GroupID = f.reason, f.group
	if filter.Reason != "" || filter.GroupID != "" || filter.SentAfter != nil || filter.SentBefore != nil || filter.Attributes != nil {
		in.Filter = &filter
	}
	return in, nil
}

// timeFlag parses an optional RFC 3339 flag value.
func timeFlag(name, v string) (*time.Time, error) {
	if v == "" {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return nil, usagef("%s wants an RFC 3339 time such as 2026-11-01T00:00:00Z, not %q", name, v)
	}
	return &t, nil
}

func (c *cli) moveStart(ctx context.Context, queue string, f *moveFlags) error {
	in, err := f.input()
	if err != nil {
		return err
	}
	t, err := c.client.StartMoveTask(ctx, queue, in)
	if err != nil {
		return err
	}
	if f.dryRun { // a dry run answers its counts, or (a large queue) is a task that counts
		if t, err = c.moveFollow(ctx, queue, t, false); err != nil {
			return err
		}
		return c.out(t, func(w io.Writer) {
			fmt.Fprintf(w, "dry run: %d would %s, %d could not (nothing %s)\n", t.ToMove, verb(t), t.Failed, verb(t)+"d")
		})
	}
	if f.wait {
		return c.moveWait(ctx, queue, t)
	}
	return c.out(t, func(w io.Writer) {
		if t.Action == client.MoveActionDelete {
			fmt.Fprintf(w, "started delete task %s of %s (%d to delete so far)\n", t.ID, queue, t.ToMove)
			return
		}
		fmt.Fprintf(w, "started move task %s of %s to %s (%d to move so far)\n", t.ID, queue, moveDest(t), t.ToMove)
	})
}

// movePoll is how often --wait reads the task.
const movePoll = 500 * time.Millisecond

// moveWait follows t until it leaves running: a progress line each time it changes (text),
// then the final task. A failed task is a failure of the command.
func (c *cli) moveWait(ctx context.Context, queue string, t *client.MoveTask) error {
	t, err := c.moveFollow(ctx, queue, t, !c.json)
	if err != nil {
		return err
	}
	if err := c.out(t, func(w io.Writer) { printMoveTask(w, t) }); err != nil {
		return err
	}
	if t.Status == "failed" {
		return fmt.Errorf("move task %s failed: %s", t.ID, deref(t.Error))
	}
	return nil
}

// moveFollow reads t until it leaves running, printing a progress line each time it changes
// when progress is set, and answers the final task.
func (c *cli) moveFollow(ctx context.Context, queue string, t *client.MoveTask, progress bool) (*client.MoveTask, error) {
	tick := time.NewTicker(movePoll)
	defer tick.Stop()
	var last int64 = -1
	for t.Status == "running" {
		if progress && t.Moved != last {
			fmt.Fprintf(c.io.stdout, "%s: %d of %d %sd, %d failed\n", t.ID, t.Moved, t.ToMove, verb(t), t.Failed)
			last = t.Moved
		}
		select {
		case <-ctx.Done():
			return t, ctx.Err()
		case <-tick.C:
		}
		var err error
		if t, err = c.client.GetMoveTask(ctx, queue, t.ID); err != nil {
			return t, err
		}
	}
	return t, nil
}

// verb is what a task does to the messages it selects: move or delete.
func verb(t *client.MoveTask) string {
	if t.Action == client.MoveActionDelete {
		return "delete"
	}
	return "move"
}

func (c *cli) moveListCmd() *cobra.Command {
	var limit int
	cmd := c.leaf(clientSpec{
		use: "list QUEUE", short: "a queue's move tasks, newest first", minArgs: 1, maxArgs: 1,
		example: "  queues move list orders-dlq\n  queues move list orders-dlq --limit 5 --json", completeArgs: c.queueArg,
		run: func(ctx context.Context, _ *cobra.Command, args []string) error {
			p, err := c.client.ListMoveTasks(ctx, args[0], client.Page{Limit: limit})
			if err != nil {
				return err
			}
			return c.out(p.MoveTasks, func(w io.Writer) { printMoveTasks(w, p.MoveTasks) })
		},
	})
	cmd.Flags().IntVar(&limit, "limit", 20, "how many recent tasks (1-100)")
	return cmd
}

func (c *cli) moveGetCmd() *cobra.Command {
	return c.moveTaskCmd("get", "show one move task and its progress", (*client.Client).GetMoveTask)
}

func (c *cli) moveCancelCmd() *cobra.Command {
	return c.moveTaskCmd("cancel", "stop a running move task at its next batch (what it moved stays moved)", (*client.Client).CancelMoveTask)
}

// moveTaskCmd is a move verb that takes the queue and a task id and prints the task.
func (c *cli) moveTaskCmd(verb, short string, call func(c *client.Client, ctx context.Context, queue, id string) (*client.MoveTask, error)) *cobra.Command {
	return c.leaf(clientSpec{
		use: verb + " QUEUE TASK_ID", short: short, minArgs: 2, maxArgs: 2, completeArgs: c.queueArg,
		example: "  queues move " + verb + " orders-dlq 0193a5b4-3c4d-7e5f-8061-7c8d9e0f1a2b",
		run: func(ctx context.Context, _ *cobra.Command, args []string) error {
			t, err := call(c.client, ctx, args[0], args[1])
			if err != nil {
				return err
			}
			return c.out(t, func(w io.Writer) { printMoveTask(w, t) })
		},
	})
}

func printMoveTask(w io.Writer, t *client.MoveTask) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	rows := [][2]string{
		{"move task", t.ID}, {"status", t.Status}, {"source", t.Source}, {"destination", moveDest(t)},
		{"rate", fmt.Sprintf("%d/s", t.MaxMessagesPerSecond)},
		{"moved", fmt.Sprintf("%d of %d", t.Moved, t.ToMove)}, {"failed", fmt.Sprint(t.Failed)},
		{"started", t.StartedAt.Format(time.RFC3339)}, {"finished", finishedAt(t)},
	}
	if t.Error != nil {
		rows = append(rows, [2]string{"error", *t.Error})
	}
	for _, kv := range rows {
		fmt.Fprintf(tw, "%s:\t%s\n", kv[0], kv[1])
	}
	tw.Flush()
}

func printMoveTasks(w io.Writer, ts []client.MoveTask) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATUS\tMOVED\tTO MOVE\tFAILED\tDESTINATION\tSTARTED\tFINISHED")
	for i := range ts {
		t := &ts[i]
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\n", t.ID, t.Status, t.Moved, t.ToMove, t.Failed, moveDest(t), t.StartedAt.Format(time.RFC3339), finishedAt(t))
	}
	tw.Flush()
}

// moveDest names where a task's messages go.
func moveDest(t *client.MoveTask) string {
	if t.Action == client.MoveActionDelete {
		return "deleted"
	}
	if t.Destination == nil {
		return "each message's source queue"
	}
	return *t.Destination
}

func finishedAt(t *client.MoveTask) string {
	if t.FinishedAt == nil {
		return "-"
	}
	return t.FinishedAt.Format(time.RFC3339)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
