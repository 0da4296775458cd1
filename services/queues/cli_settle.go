package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/queueshq/queues/sdk/go/client"
)

// Settling received messages by receipt handle (docs/cli.md): the message subcommands ack,
// release, visibility, cancel and dead-letter. Handles come as arguments or, with none, one a
// line of standard input — a bare handle, or a JSON object with a receiptHandle, so the
// output of receive --no-ack --json pipes in as it is. They go in batches of up to
// client.MaxReceiptBatch; each handle's failure is printed and the command exits with the
// first one's code.

// settleOp is one settlement: its verb and how a batch of handles is settled.
type settleOp struct {
	use, short, long, done string
	run                    func(ctx context.Context, handles []string) (client.BatchErrors, error)
}

func (c *cli) settleCmds() []*cobra.Command {
	var vis secondsValue
	var reason string
	ops := []settleOp{
		{use: "ack", short: "acknowledge received messages (delete them) by receipt handle", done: "acknowledged",
			run: func(ctx context.Context, hs []string) (client.BatchErrors, error) { return c.client.AckBatch(ctx, hs) }},
		{use: "release", short: "make received messages visible again now (retry; the delivery counts)", done: "released",
			run: func(ctx context.Context, hs []string) (client.BatchErrors, error) {
				return c.client.ChangeVisibilityBatch(ctx, visEntries(hs, 0))
			}},
		{use: "visibility", short: "extend received messages' visibility, or retry them after --timeout", done: "changed the visibility of",
			long: `Sets each delivery's visibility deadline to now + --timeout (0 releases it). On fifo queues
the group stays blocked until then.`,
			run: func(ctx context.Context, hs []string) (client.BatchErrors, error) {
				if !vis.set {
					return nil, usagef("visibility needs --timeout (seconds or a duration)")
				}
				return c.client.ChangeVisibilityBatch(ctx, visEntries(hs, vis.v))
			}},
		{use: "cancel", short: "give received messages back without counting the delivery (maxCancels bounds it)", done: "cancelled",
			run: func(ctx context.Context, hs []string) (client.BatchErrors, error) {
				return c.client.CancelBatch(ctx, hs)
			}},
		{use: "dead-letter", short: "move received messages to the dead-letter queue now (--reason)", done: "dead-lettered",
			run: func(ctx context.Context, hs []string) (client.BatchErrors, error) {
				es := make([]client.DeadLetterEntry, len(hs))
				for i, h := range hs {
					es[i] = client.DeadLetterEntry{ReceiptHandle: h, Reason: reason}
				}
				return c.client.DeadLetterBatch(ctx, es)
			}},
	}
	cmds := make([]*cobra.Command, len(ops))
	for i, op := range ops {
		cmds[i] = c.settleCmd(op)
	}
	cmds[2].Flags().Var(&vis, "timeout", "the new visibility timeout, 0-43200 s (a duration too: 5m)")
	cmds[4].Flags().StringVar(&reason, "reason", "", `the reason recorded with the message (default "consumer")`)
	return cmds
}

func visEntries(hs []string, seconds int) []client.VisibilityEntry {
	es := make([]client.VisibilityEntry, len(hs))
	for i, h := range hs {
		es[i] = client.VisibilityEntry{ReceiptHandle: h, VisibilityTimeoutSeconds: seconds}
	}
	return es
}

func (c *cli) settleCmd(op settleOp) *cobra.Command {
	long := op.long
	if long != "" {
		long += "\n\n"
	}
	long += `Takes receipt handles as arguments or, with none, one a line of standard input (a bare
handle, or a JSON object with a receiptHandle: the lines of receive --no-ack --json).
Prints how many were settled; a handle that failed (stale: received again, settled or
gone) is printed with its error, and the command exits non-zero.`
	return c.leaf(clientSpec{
		use: op.use + " [RECEIPT_HANDLE ...]", short: op.short, long: long,
		example: fmt.Sprintf("  queues message %s <receipt handle>\n  queues receive orders -n 10 --no-ack --json | queues message %s", op.use, op.use),
		minArgs: 0, maxArgs: -1,
		run: func(ctx context.Context, _ *cobra.Command, args []string) error { return c.settle(ctx, op, args) },
	})
}

// settle settles the handles of args, or of standard input, in batches.
func (c *cli) settle(ctx context.Context, op settleOp, args []string) error {
	handles := args
	if len(handles) == 0 {
		var err error
		if handles, err = readHandles(c.io.stdin); err != nil {
			return err
		}
	}
	if len(handles) == 0 {
		return usagef("no receipt handles: give them as arguments or lines on standard input")
	}
	done := 0
	var first error
	for from := 0; from < len(handles); from += client.MaxReceiptBatch {
		batch := handles[from:min(from+client.MaxReceiptBatch, len(handles))]
		res, err := op.run(ctx, batch)
		if err != nil {
			return err
		}
		for i, e := range res {
			if e == nil {
				done++
				continue
			}
			first = cmp(first, e)
			fmt.Fprintf(c.io.stderr, "queues message %s: handle %d: %s\n", op.use, from+i+1, describe(e))
		}
	}
	if err := c.out(map[string]any{"settled": done, "failed": len(handles) - done}, func(w io.Writer) {
		fmt.Fprintf(w, "%s %d of %d\n", op.done, done, len(handles))
	}); err != nil {
		return err
	}
	if first != nil {
		var ce *client.Error
		if errors.As(first, &ce) {
			return &client.Error{StatusCode: ce.StatusCode, Code: ce.Code,
				Message: fmt.Sprintf("%d of %d receipt handles not settled", len(handles)-done, len(handles))}
		}
		return first
	}
	return nil
}

// describe is one entry's error: its code and message.
func describe(err error) string {
	var ce *client.Error
	if errors.As(err, &ce) {
		s := string(ce.Code) + ": " + ce.Message
		if ce.Field != "" {
			s += " (field " + ce.Field + ")"
		}
		return s
	}
	return err.Error()
}

func cmp(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// readHandles reads receipt handles, one a line: bare, or a JSON object's receiptHandle.
func readHandles(r io.Reader) ([]string, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var out []string
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		if strings.HasPrefix(line, "{") {
			var m struct {
				ReceiptHandle string `json:"receiptHandle"`
			}
			if err := json.Unmarshal([]byte(line), &m); err != nil || m.ReceiptHandle == "" {
				return nil, usagef("line %d of standard input: a JSON object without a receiptHandle (at-most-once queues hand out none)", n)
			}
			line = m.ReceiptHandle
		}
		out = append(out, line)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading standard input: %w", err)
	}
	return out, nil
}
