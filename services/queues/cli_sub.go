package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/queueshq/queues/pkg/client"
)

func runSubCmd(ctx context.Context, args []string, cio cliIO) error {
	simple := func(verb string, call func(c *client.Client, ctx context.Context, queue string) (*client.Subscription, error)) func([]string) error {
		return func(a []string) error {
			c := newCLI(cio, "sub "+verb, "sub "+verb+" QUEUE")
			pos, err := c.parse(a, 1, 1)
			if err != nil {
				return err
			}
			s, err := call(c.client, ctx, pos[0])
			if err != nil {
				return err
			}
			return c.out(s, func(w io.Writer) { printSub(w, s) })
		}
	}
	verbs := map[string]func([]string) error{
		"create": func(a []string) error { return subCreate(ctx, a, cio) },
		"get":    simple("get", (*client.Client).GetSubscription),
		"pause":  simple("pause", (*client.Client).PauseSubscription),
		"resume": simple("resume", (*client.Client).ResumeSubscription),
		"rotate-secret": simple("rotate-secret", func(c *client.Client, ctx context.Context, q string) (*client.Subscription, error) {
			return c.RotateSecret(ctx, q)
		}),
		"delete": func(a []string) error {
			c := newCLI(cio, "sub delete", "sub delete QUEUE")
			pos, err := c.parse(a, 1, 1)
			if err != nil {
				return err
			}
			if err := c.client.DeleteSubscription(ctx, pos[0]); err != nil {
				return err
			}
			return c.out(map[string]string{"deleted": pos[0]}, func(w io.Writer) { fmt.Fprintf(w, "deleted the subscription of %s\n", pos[0]) })
		},
		"attempts": func(a []string) error { return subAttempts(ctx, a, cio) },
	}
	return sub(args, cio, "sub", verbs, []string{"create", "get", "pause", "resume", "rotate-secret", "attempts", "delete"})
}

func printSub(w io.Writer, s *client.Subscription) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	state := "active"
	if s.Paused {
		state = "paused"
	}
	rows := [][2]string{
		{"subscription", s.Slug}, {"id", s.ID}, {"endpoint", s.Endpoint}, {"state", state},
		{"batch size", fmt.Sprint(s.BatchSize)}, {"batch window", fmt.Sprintf("%dms", s.BatchWindowMs)},
		{"max in flight", fmt.Sprint(s.MaxInFlight)}, {"timeout", fmt.Sprintf("%ds", s.TimeoutSeconds)},
	}
	if s.SigningSecret != "" {
		rows = append(rows, [2]string{"signing secret", s.SigningSecret + "  (shown only now: keep it)"})
	}
	for _, kv := range rows {
		fmt.Fprintf(tw, "%s:\t%s\n", kv[0], kv[1])
	}
	tw.Flush()
}

func subCreate(ctx context.Context, args []string, cio cliIO) error {
	c := newCLI(cio, "sub create", "sub create QUEUE --endpoint URL [--batch-size N] [--batch-window-ms N] [--max-in-flight N] [--timeout S] [--paused]")
	endpoint := c.fs.String("endpoint", "", "the https URL pushes go to (required)")
	var batchSize, window, inFlight intValue
	var timeout secondsValue
	c.fs.Var(&batchSize, "batch-size", "messages per push, 1-100 (default 10)")
	c.fs.Var(&window, "batch-window-ms", "how long to wait to fill a batch, 0-10000 ms (default 0)")
	c.fs.Var(&inFlight, "max-in-flight", "concurrent pushes, 1-100 (default 10)")
	c.fs.Var(&timeout, "timeout", "push timeout, 1-60 s (default 30)")
	paused := c.fs.Bool("paused", false, "create it paused")
	pos, err := c.parse(args, 1, 1)
	if err != nil {
		return err
	}
	if *endpoint == "" {
		return usagef("--endpoint is required")
	}
	in := client.SubscriptionInput{Endpoint: *endpoint, BatchSize: batchSize.ptr(), BatchWindowMs: window.ptr(), MaxInFlight: inFlight.ptr(), TimeoutSeconds: timeout.ptr()}
	if *paused {
		in.Paused = client.Bool(true)
	}
	s, err := c.client.CreateSubscription(ctx, pos[0], in)
	if err != nil {
		return err
	}
	return c.out(s, func(w io.Writer) { printSub(w, s) })
}

func subAttempts(ctx context.Context, args []string, cio cliIO) error {
	c := newCLI(cio, "sub attempts", "sub attempts QUEUE [--limit N]")
	limit := c.fs.Int("limit", 20, "how many recent attempts")
	pos, err := c.parse(args, 1, 1)
	if err != nil {
		return err
	}
	p, err := c.client.ListAttempts(ctx, pos[0], *limit)
	if err != nil {
		return err
	}
	return c.out(p, func(w io.Writer) {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "AT\tSTATUS\tOUTCOME\tMESSAGES\tLATENCY\tERROR")
		for _, a := range p.Attempts {
			status := "-"
			if a.StatusCode != 0 {
				status = fmt.Sprint(a.StatusCode)
			}
			errText := a.Error
			if a.Detail != "" {
				errText += " " + a.Detail
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%dms\t%s\n", a.At.Format("2006-01-02T15:04:05.000Z07:00"), status, a.Outcome, len(a.MessageIDs), a.LatencyMs, errText)
		}
		tw.Flush()
	})
}
