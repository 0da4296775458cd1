package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/queueshq/queues/pkg/client"
)

func runSend(ctx context.Context, args []string, cio cliIO) error {
	c := newCLI(cio, "send", "send QUEUE [BODY ...] [--attr NAME=VALUE ...] [--delay S] [--group G] [--dedup-id D]\n\nWith no BODY, each line of standard input is a message (empty lines are skipped).")
	var attrs listValue
	var delay secondsValue
	c.fs.Var(&attrs, "attr", "an attribute NAME=VALUE for every message (repeatable)")
	c.fs.Var(&delay, "delay", "delay of each message (standard queues)")
	group := c.fs.String("group", "", "message group (required on fifo queues)")
	dedup := c.fs.String("dedup-id", "", "deduplication id (fifo; unless there is exactly one BODY, the messages get -1, -2, … appended)")
	pos, err := c.parse(args, 1, -1)
	if err != nil {
		return err
	}
	queue, bodies := pos[0], pos[1:]
	attributes := map[string]string{}
	for _, a := range attrs {
		k, v, ok := strings.Cut(a, "=")
		if !ok || k == "" {
			return usagef("--attr wants NAME=VALUE, not %q", a)
		}
		attributes[k] = v
	}
	if len(attributes) == 0 {
		attributes = nil
	}
	next := func() (string, bool, error) {
		if len(bodies) > 0 {
			b := bodies[0]
			bodies = bodies[1:]
			return b, true, nil
		}
		return "", false, nil
	}
	if len(pos) == 1 {
		sc := bufio.NewScanner(cio.stdin)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		next = func() (string, bool, error) {
			for sc.Scan() {
				if line := strings.TrimRight(sc.Text(), "\r"); line != "" {
					return line, true, nil
				}
			}
			return "", false, sc.Err()
		}
	}
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
			m := client.SendMessage{Body: b, Attributes: attributes, GroupID: *group}
			if delay.set {
				m.DelaySeconds = delay.v
			}
			if *dedup != "" {
				m.DedupID = *dedup
				if len(pos) != 2 { // not exactly one body: number them
					m.DedupID = fmt.Sprintf("%s-%d", *dedup, n+len(batch)+1)
				}
			}
			batch = append(batch, m)
		}
		if len(batch) == 0 {
			break
		}
		r, err := c.client.SendBatch(ctx, queue, batch)
		if err != nil {
			return err
		}
		for _, m := range r.Messages {
			dup := ""
			if m.Duplicate {
				dup = " (duplicate of an earlier send)"
			}
			if err := c.line(m, "sent "+m.MessageID+dup); err != nil {
				return err
			}
		}
		for _, f := range r.Failed {
			failed++
			msg := fmt.Sprintf("queues send: message %d not sent: %s: %s", n+f.Index+1, f.Err.Code, f.Err.Message)
			if f.Err.Field != "" {
				msg += " (field " + f.Err.Field + ")"
			}
			fmt.Fprintln(cio.stderr, msg)
		}
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

// printMessage prints a received message: its body (text) or the whole message (--json).
func (c *cli) printMessage(m *client.Message) error {
	return c.line(m, m.Body)
}

func runReceive(ctx context.Context, args []string, cio cliIO) error {
	c := newCLI(cio, "receive", "receive QUEUE [-n N] [--wait S] [--visibility-timeout S] [--no-ack]\n\nPrints each message's body on a line (--json: the whole message) and acknowledges it.")
	n := c.fs.Int("n", 1, "receive up to this many messages")
	var wait, visibility secondsValue
	c.fs.Var(&wait, "wait", "long-polling wait, 0-20 s (default the queue's receive wait)")
	c.fs.Var(&visibility, "visibility-timeout", "visibility timeout of the receive (default the queue's)")
	noAck := c.fs.Bool("no-ack", false, "leave the messages in flight (they come back at their deadline)")
	pos, err := c.parse(args, 1, 1)
	if err != nil {
		return err
	}
	if *n < 1 {
		return usagef("-n must be at least 1")
	}
	for got := 0; got < *n; {
		want := min(*n-got, client.MaxReceiveBatch)
		msgs, err := c.client.Receive(ctx, pos[0], client.ReceiveInput{MaxMessages: want, WaitSeconds: wait.ptr(), VisibilityTimeoutSeconds: visibility.ptr()})
		if err != nil {
			return err
		}
		handles := make([]string, 0, len(msgs))
		for i := range msgs {
			if err := c.printMessage(&msgs[i]); err != nil {
				return err
			}
			handles = append(handles, msgs[i].ReceiptHandle)
		}
		if !*noAck && len(handles) > 0 {
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

func runTail(ctx context.Context, args []string, cio cliIO) error {
	c := newCLI(cio, "tail", "tail QUEUE [-n N] [--no-ack]\n\nFollows a queue: receives, prints (like receive) and acknowledges each message as it arrives,\nuntil interrupted or -n messages. With --no-ack messages are left in flight and come back\nat their visibility deadline (and are printed again).")
	n := c.fs.Int("n", 0, "stop after this many messages (default: follow until interrupted)")
	noAck := c.fs.Bool("no-ack", false, "do not acknowledge")
	var visibility secondsValue
	c.fs.Var(&visibility, "visibility-timeout", "visibility timeout of the receives (default the queue's)")
	pos, err := c.parse(args, 1, 1)
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
			fmt.Fprintf(cio.stderr, "queues tail: %v (retrying)\n", ce.Err)
		}
	}}
	if visibility.set {
		opts.VisibilityTimeout = time.Duration(visibility.v) * time.Second
	}
	err = c.client.Consume(ctx, pos[0], func(_ context.Context, m *client.Message) error {
		mu.Lock()
		defer mu.Unlock()
		if *n > 0 && seen >= *n {
			return client.Retry() // over the count: give it back
		}
		if err := c.printMessage(m); err != nil {
			printErr = err
			stop()
			return client.Retry()
		}
		seen++
		if *n > 0 && seen == *n {
			stop()
		}
		if *noAck {
			return client.Defer()
		}
		return nil
	}, opts)
	if err != nil {
		return err
	}
	return printErr
}
