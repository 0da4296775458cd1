package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/queueshq/queues/sdk/go/client"
)

// sendFlags are the flags of send.
type sendFlags struct {
	attrs []string
	delay secondsValue
	group string
	dedup string
	key   string
	merge string
	at    string
	// barrier marks every message sent a barrier (docs/delivery-options.md).
	barrier bool
	// priority is every message's priority, 0 to 9 (standard queues).
	priority int
	// endGroup marks every message sent endGroup (fifo, exclusive queues: its settlement
	// ends the group's binding).
	endGroup bool
}

func (c *cli) sendCmd() *cobra.Command {
	var f sendFlags
	cmd := c.leaf(clientSpec{
		use: "send QUEUE [BODY ...]", short: "send messages from arguments or standard input, one a line",
		long: `Sends each BODY as a message; with no BODY, each line of standard input is a message (empty
lines are skipped). Prints each message's id (--json: each result as a JSON line).`,
		example: `  queues send orders "order 1" "order 2" --attr source=cli
  seq 1 100 | queues send orders
  queues send payments charge --group customer-7 --dedup-id c-1
  queues send prices '{"bid": 101.5}' --key order-42 --merge patch
  queues send reminders "call back" --deliver-at 2026-12-24T09:00:00Z
  queues send alerts "disk full" --priority 9`,
		minArgs: 1, maxArgs: -1, completeArgs: c.queueArg,
		run: func(ctx context.Context, _ *cobra.Command, args []string) error { return c.send(ctx, args, &f) },
	})
	fl := cmd.Flags()
	fl.StringArrayVar(&f.attrs, "attr", nil, "an attribute NAME=VALUE for every message (repeatable)")
	fl.Var(&f.delay, "delay", "delay of each message (standard queues)")
	fl.StringVar(&f.group, "group", "", "message group (required on fifo queues)")
	fl.StringVar(&f.dedup, "dedup-id", "", "deduplication id (fifo; unless there is exactly one BODY, the messages get -1, -2, … appended)")
	fl.StringVar(&f.key, "key", "", "conflation key (standard): change the key's waiting message instead of adding one")
	fl.StringVar(&f.merge, "merge", "", "with --key: replace (default) or patch (RFC 7396 JSON Merge Patch of JSON object bodies)")
	fl.StringVar(&f.at, "deliver-at", "", "RFC 3339 time at which the messages become visible (standard; instead of --delay)")
	fl.IntVar(&f.priority, "priority", 0, "priority of each message, 0 (default) to 9 (standard queues): higher ones are received first")
	fl.BoolVar(&f.endGroup, "end-group", false, "fifo: mark each message endGroup (on an exclusive queue its ack ends the group's binding to its consumer)")
	fl.BoolVar(&f.barrier, "barrier", false, "send barrier messages (standard queues): each waits until everything sent before it has left the queue, and holds back what follows until it has left")
	return cmd
}

// attributes parses the --attr flags.
func (f *sendFlags) attributes() (map[string]string, error) {
	if len(f.attrs) == 0 {
		return nil, nil
	}
	attributes := map[string]string{}
	for _, a := range f.attrs {
		k, v, ok := strings.Cut(a, "=")
		if !ok || k == "" {
			return nil, usagef("--attr wants NAME=VALUE, not %q", a)
		}
		attributes[k] = v
	}
	return attributes, nil
}

// bodies yields the bodies to send: the arguments, or else the non-empty lines of stdin.
func (c *cli) bodies(args []string) func() (string, bool, error) {
	if len(args) > 0 {
		return func() (string, bool, error) {
			if len(args) == 0 {
				return "", false, nil
			}
			b := args[0]
			args = args[1:]
			return b, true, nil
		}
	}
	sc := bufio.NewScanner(c.io.stdin)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	return func() (string, bool, error) {
		for sc.Scan() {
			if line := strings.TrimRight(sc.Text(), "\r"); line != "" {
				return line, true, nil
			}
		}
		return "", false, sc.Err()
	}
}

// send sends the bodies of pos[1:], or the lines of standard input, in batches.
func (c *cli) send(ctx context.Context, pos []string, f *sendFlags) error {
	attributes, err := f.attributes()
	if err != nil {
		return err
	}
	if f.priority < 0 || f.priority > 9 {
		return usagef("--priority wants 0 to 9, not %d", f.priority)
	}
	var deliverAt time.Time
	if f.at != "" {
		if deliverAt, err = time.Parse(time.RFC3339Nano, f.at); err != nil {
			return usagef("--deliver-at wants an RFC 3339 time such as 2026-12-24T09:00:00Z, not %q", f.at)
		}
	}
	queue, next := pos[0], c.bodies(pos[1:])
	n, failed := 0, 0
	for {
		var batch []client.SendMessage
		for len(batch) < client.MaxSendBatch {
			b, ok, err := next()
			if err != nil {
				return fmt.Errorf("reading standard input: %w", err)
			}
			if !ok {
				break
			}
			m := client.SendMessage{Body: b, Attributes: attributes, GroupID: f.group, Barrier: f.barrier, Priority: f.priority, EndGroup: f.endGroup}
			if f.delay.set {
				m.DelaySeconds = f.delay.v
			}
			m.Key, m.Merge, m.DeliverAt = f.key, client.MergeMode(f.merge), deliverAt
			if f.dedup != "" {
				m.DedupID = f.dedup
				if len(pos) != 2 { // not exactly one body: number them
					m.DedupID = fmt.Sprintf("%s-%d", f.dedup, n+len(batch)+1)
				}
			}
			batch = append(batch, m)
		}
		if len(batch) == 0 {
			break
		}
		nf, err := c.sendBatch(ctx, queue, batch, n)
		if err != nil {
			return err
		}
		failed += nf
		n += len(batch)
	}
	if n == 0 {
		return usagef("nothing to send: give bodies as arguments or lines on standard input")
	}
	if failed > 0 {
		return &client.Error{Code: client.CodeInvalidArgument, Message: fmt.Sprintf("%d of %d messages not sent", failed, n)}
	}
	return nil
}

// sendBatch sends one batch (its first message is the sent+1-th), prints what was sent and
// what was refused, and returns how many were refused.
func (c *cli) sendBatch(ctx context.Context, queue string, batch []client.SendMessage, sent int) (int, error) {
	r, err := c.client.SendBatch(ctx, queue, batch)
	if err != nil {
		return 0, err
	}
	for _, m := range r.Messages {
		dup := ""
		if m.Duplicate {
			dup = " (duplicate of an earlier send)"
		}
		if m.Merged {
			dup = " (merged into the key's waiting message)"
		}
		if err := c.line(m, "sent "+m.MessageID+dup); err != nil {
			return 0, err
		}
	}
	for _, f := range r.Failed {
		msg := fmt.Sprintf("queues send: message %d not sent: %s: %s", sent+f.Index+1, f.Err.Code, f.Err.Message)
		if f.Err.Field != "" {
			msg += " (field " + f.Err.Field + ")"
		}
		fmt.Fprintln(c.io.stderr, msg)
	}
	return len(r.Failed), nil
}

// printMessage prints a received message: its body (text) or the whole message (--json).
func (c *cli) printMessage(m *client.Message) error {
	return c.line(m, m.Body)
}

// receiveFlags are the flags of receive.
type receiveFlags struct {
	n                int
	wait, visibility secondsValue
	noAck            bool
	consumer         string
	maxBacklog       int
	filter           filterFlag
}

func (c *cli) receiveCmd() *cobra.Command {
	var f receiveFlags
	cmd := c.leaf(clientSpec{
		use: "receive QUEUE", short: "receive messages, print and acknowledge them (--no-ack)",
		long: "Prints each message's body on a line (--json: the whole message) and acknowledges it.",
		example: `  queues receive orders
  queues receive orders -n 10 --wait 5
  queues receive orders --no-ack --json        # the whole message, receipt handle too
  queues receive orders --filter region=eu --filter kind=invoice --filter kind=refund`,
		minArgs: 1, maxArgs: 1, completeArgs: c.queueArg,
		run: func(ctx context.Context, _ *cobra.Command, args []string) error { return c.receive(ctx, args[0], &f) },
	})
	fl := cmd.Flags()
	fl.IntVarP(&f.n, "n", "n", 1, "receive up to this many messages")
	fl.Var(&f.wait, "wait", "long-polling wait, 0-20 s (default the queue's receive wait)")
	fl.Var(&f.visibility, "visibility-timeout", "visibility timeout of the receive (default the queue's)")
	fl.BoolVar(&f.noAck, "no-ack", false, "leave the messages in flight (they come back at their deadline)")
	fl.StringVar(&f.consumer, "consumer-id", "", "receive as this consumer id (listed by queue consumers; required on an exclusive fifo queue)")
	fl.StringVar(&f.consumer, "consumer", "", "the same as --consumer-id")
	fl.IntVar(&f.maxBacklog, "max-backlog", 0, "with --consumer-id: hold at most this many unsettled messages (1-10000)")
	fl.StringArrayVar((*[]string)(&f.filter), "filter", nil, filterUsage)
	return cmd
}

func (c *cli) receive(ctx context.Context, queue string, f *receiveFlags) error {
	if f.n < 1 {
		return usagef("-n must be at least 1")
	}
	if f.maxBacklog != 0 && f.consumer == "" {
		return usagef("--max-backlog needs --consumer-id")
	}
	flt, err := f.filter.filter()
	if err != nil {
		return err
	}
	for got := 0; got < f.n; {
		want := min(f.n-got, client.MaxReceiveBatch)
		msgs, err := c.client.Receive(ctx, queue, client.ReceiveInput{MaxMessages: want, WaitSeconds: f.wait.ptr(),
			VisibilityTimeoutSeconds: f.visibility.ptr(), ConsumerID: f.consumer, MaxBacklog: f.maxBacklog, Filter: flt})
		if err != nil {
			return err
		}
		handles := make([]string, 0, len(msgs))
		for i := range msgs {
			if err := c.printMessage(&msgs[i]); err != nil {
				return err
			}
			if h := msgs[i].ReceiptHandle; h != "" { // none on an at-most-once queue: already gone
				handles = append(handles, h)
			}
		}
		if !f.noAck && len(handles) > 0 {
			res, err := c.client.AckBatch(ctx, handles)
			if err != nil {
				return fmt.Errorf("acknowledging: %w", err)
			}
			if err := res.Err(); err != nil {
				return fmt.Errorf("acknowledging: %w", err)
			}
		}
		got += len(msgs)
		if len(msgs) < want {
			break
		}
	}
	return nil
}

// tailFlags are the flags of tail.
type tailFlags struct {
	n          int
	noAck      bool
	visibility secondsValue
	filter     filterFlag
	consumer   string
}

func (c *cli) tailCmd() *cobra.Command {
	var f tailFlags
	cmd := c.leaf(clientSpec{
		use: "tail QUEUE", short: "follow a queue, printing and acknowledging what arrives",
		long: `Follows a queue: receives, prints (like receive) and acknowledges each message as it arrives,
until interrupted or -n messages. With --no-ack messages are left in flight and come back
at their visibility deadline (and are printed again).`,
		example: `  queues tail orders
  queues tail orders -n 100 --json > orders.jsonl`,
		minArgs: 1, maxArgs: 1, completeArgs: c.queueArg,
		run: func(ctx context.Context, _ *cobra.Command, args []string) error { return c.tail(ctx, args[0], &f) },
	})
	fl := cmd.Flags()
	fl.IntVarP(&f.n, "n", "n", 0, "stop after this many messages (default: follow until interrupted)")
	fl.BoolVar(&f.noAck, "no-ack", false, "do not acknowledge")
	fl.Var(&f.visibility, "visibility-timeout", "visibility timeout of the receives (default the queue's)")
	fl.StringArrayVar((*[]string)(&f.filter), "filter", nil, filterUsage)
	fl.StringVar(&f.consumer, "consumer-id", "", "receive as this consumer id (required on an exclusive fifo queue)")
	return cmd
}

func (c *cli) tail(ctx context.Context, queue string, f *tailFlags) error {
	flt, err := f.filter.filter()
	if err != nil {
		return err
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	var mu sync.Mutex
	seen := 0
	var printErr error
	opts := client.ConsumeOptions{Concurrency: 1, OnError: func(err error) {
		var ce *client.ConsumerError
		if errors.As(err, &ce) && ce.Op == "receive" {
			fmt.Fprintf(c.io.stderr, "queues tail: %v (retrying)\n", ce.Err)
		}
	}}
	opts.Filter = flt
	opts.ConsumerID = f.consumer
	if f.visibility.set {
		opts.VisibilityTimeout = time.Duration(f.visibility.v) * time.Second
	}
	err = c.client.Consume(ctx, queue, func(_ context.Context, m *client.Message) error {
		mu.Lock()
		defer mu.Unlock()
		if f.n > 0 && seen >= f.n {
			return client.Retry() // over the count: give it back
		}
		if err := c.printMessage(m); err != nil {
			printErr = err
			stop()
			return client.Retry()
		}
		seen++
		if f.n > 0 && seen == f.n {
			stop()
		}
		if f.noAck {
			return client.Defer()
		}
		return nil
	}, opts)
	if err != nil {
		return err
	}
	return printErr
}
