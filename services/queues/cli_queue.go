package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/queueshq/queues/pkg/client"
)

// queueSettings are the flags of queue create and update.
type queueSettings struct {
	visibility, retention, delay, receiveWait secondsValue
	dlq                                       string
	maxReceive                                intValue
	contentBasedDedup                         bool
}

func (s *queueSettings) register(c *cli) {
	c.fs.Var(&s.visibility, "visibility-timeout", "how long a received message stays in flight (seconds or a duration; default 30s)")
	c.fs.Var(&s.retention, "retention", "how long a message is kept (default 96h)")
	c.fs.Var(&s.delay, "delay", "delay of new messages (default 0)")
	c.fs.Var(&s.receiveWait, "receive-wait", "long-polling wait of receives that give none (default 0)")
	c.fs.StringVar(&s.dlq, "dlq", "", "dead-letter queue (id or slug) for messages received --max-receive-count times")
	c.fs.Var(&s.maxReceive, "max-receive-count", "receives before a message goes to --dlq (1-1000; default 5 with --dlq)")
	c.fs.BoolVar(&s.contentBasedDedup, "content-based-dedup", false, "fifo: deduplicate sends by the body's SHA-256 when they give no dedup id")
}

func (s *queueSettings) redrive() *client.Redrive {
	if s.dlq == "" {
		return nil
	}
	n := 5
	if s.maxReceive.set {
		n = s.maxReceive.v
	}
	return &client.Redrive{DeadLetterQueue: s.dlq, MaxReceiveCount: n}
}

func runQueueCmd(ctx context.Context, args []string, cio cliIO) error {
	verbs := map[string]func([]string) error{
		"create": func(a []string) error { return queueCreate(ctx, a, cio) },
		"list":   func(a []string) error { return queueList(ctx, a, cio) },
		"get":    func(a []string) error { return queueGet(ctx, a, cio) },
		"update": func(a []string) error { return queueUpdate(ctx, a, cio) },
		"delete": func(a []string) error { return queueDelete(ctx, a, cio) },
		"purge":  func(a []string) error { return queuePurge(ctx, a, cio) },
	}
	return sub(args, cio, "queue", verbs, []string{"create", "list", "get", "update", "delete", "purge"})
}

func queueCreate(ctx context.Context, args []string, cio cliIO) error {
	c := newCLI(cio, "queue create", "queue create NAME [--type standard|fifo] [--visibility-timeout S] [--retention S] [--delay S] [--receive-wait S] [--dlq QUEUE [--max-receive-count N]] [--content-based-dedup]")
	var s queueSettings
	s.register(c)
	typ := c.fs.String("type", "standard", "standard or fifo (fixed at creation)")
	pos, err := c.parse(args, 1, 1)
	if err != nil {
		return err
	}
	if *typ != "standard" && *typ != "fifo" {
		return usagef("--type must be standard or fifo")
	}
	q, err := c.client.CreateQueue(ctx, client.CreateQueueInput{
		Name: pos[0], Type: client.QueueType(*typ),
		VisibilityTimeoutSeconds: s.visibility.ptr(), RetentionSeconds: s.retention.ptr(),
		DelaySeconds: s.delay.ptr(), ReceiveWaitSeconds: s.receiveWait.ptr(),
		Redrive: s.redrive(), ContentBasedDedup: s.contentBasedDedup,
	})
	if err != nil {
		return err
	}
	return c.out(q, func(w io.Writer) { fmt.Fprintf(w, "created %s queue %s (%s)\n", q.Type, q.Name, q.Slug) })
}

func queueList(ctx context.Context, args []string, cio cliIO) error {
	c := newCLI(cio, "queue list", "queue list [--prefix P] [--limit N]")
	prefix := c.fs.String("prefix", "", "only queues whose name starts with this")
	limit := c.fs.Int("limit", 0, "at most this many queues (default all)")
	if _, err := c.parse(args, 0, 0); err != nil {
		return err
	}
	var qs []client.Queue
	for q, err := range c.client.AllQueues(ctx, *prefix) {
		if err != nil {
			return err
		}
		qs = append(qs, q)
		if *limit > 0 && len(qs) == *limit {
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
		{"partitions", fmt.Sprint(q.Partitions)},
		{"messages", fmt.Sprintf("%d visible, %d in flight, %d delayed%s; oldest %ds", q.Counts.Visible, q.Counts.InFlight, q.Counts.Delayed, more, q.Counts.OldestMessageAgeSeconds)},
		{"created", q.CreatedAt.Format("2006-01-02T15:04:05.000Z07:00")},
		{"updated", q.UpdatedAt.Format("2006-01-02T15:04:05.000Z07:00")},
	} {
		fmt.Fprintf(tw, "%s:\t%s\n", kv[0], kv[1])
	}
	tw.Flush()
}

func queueGet(ctx context.Context, args []string, cio cliIO) error {
	c := newCLI(cio, "queue get", "queue get QUEUE")
	pos, err := c.parse(args, 1, 1)
	if err != nil {
		return err
	}
	q, err := c.client.GetQueue(ctx, pos[0])
	if err != nil {
		return err
	}
	return c.out(q, func(w io.Writer) { printQueue(w, q) })
}

func queueUpdate(ctx context.Context, args []string, cio cliIO) error {
	c := newCLI(cio, "queue update", "queue update QUEUE [--visibility-timeout S] [--retention S] [--delay S] [--receive-wait S] [--dlq QUEUE [--max-receive-count N] | --no-redrive] [--content-based-dedup=true|false]")
	var s queueSettings
	s.register(c)
	noRedrive := c.fs.Bool("no-redrive", false, "remove the redrive policy")
	pos, err := c.parse(args, 1, 1)
	if err != nil {
		return err
	}
	in := client.UpdateQueueInput{
		VisibilityTimeoutSeconds: s.visibility.ptr(), RetentionSeconds: s.retention.ptr(),
		DelaySeconds: s.delay.ptr(), ReceiveWaitSeconds: s.receiveWait.ptr(),
		Redrive: s.redrive(), RemoveRedrive: *noRedrive,
	}
	c.fs.Visit(func(f *flag.Flag) {
		if f.Name == "content-based-dedup" {
			in.ContentBasedDedup = client.Bool(s.contentBasedDedup)
		}
	})
	if *noRedrive && in.Redrive != nil {
		return usagef("--dlq and --no-redrive contradict each other")
	}
	if s.maxReceive.set && s.dlq == "" {
		return usagef("--max-receive-count needs --dlq")
	}
	q, err := c.client.UpdateQueue(ctx, pos[0], in)
	if err != nil {
		return err
	}
	return c.out(q, func(w io.Writer) { printQueue(w, q) })
}

func queueDelete(ctx context.Context, args []string, cio cliIO) error {
	c := newCLI(cio, "queue delete", "queue delete QUEUE")
	pos, err := c.parse(args, 1, 1)
	if err != nil {
		return err
	}
	if err := c.client.DeleteQueue(ctx, pos[0]); err != nil {
		return err
	}
	return c.out(map[string]string{"deleted": pos[0]}, func(w io.Writer) { fmt.Fprintf(w, "deleted queue %s\n", pos[0]) })
}

func queuePurge(ctx context.Context, args []string, cio cliIO) error {
	c := newCLI(cio, "queue purge", "queue purge QUEUE")
	pos, err := c.parse(args, 1, 1)
	if err != nil {
		return err
	}
	at, err := c.client.PurgeQueue(ctx, pos[0])
	if err != nil {
		return err
	}
	return c.out(map[string]any{"purgedAt": at}, func(w io.Writer) {
		fmt.Fprintf(w, "purged queue %s: messages sent before %s are gone\n", pos[0], at.Format("2006-01-02T15:04:05.000Z07:00"))
	})
}
