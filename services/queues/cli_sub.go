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

func (c *cli) subCmd() *cobra.Command {
	return c.group("sub", "push subscriptions: the service POSTs a queue's messages to an https endpoint",
		`  queues sub create orders --endpoint https://example.com/hooks/orders --batch-size 5
  queues sub attempts orders --limit 50
  queues sub rotate-secret orders`,
		c.subCreateCmd(), c.subUpdateCmd(),
		c.subSimpleCmd("get", "show a queue's subscription", (*client.Client).GetSubscription),
		c.subSimpleCmd("pause", "stop pushing (messages wait in the queue)", (*client.Client).PauseSubscription),
		c.subSimpleCmd("resume", "start pushing again (a paused or disabled subscription)", (*client.Client).ResumeSubscription),
		c.subSimpleCmd("rotate-secret", "issue a new signing secret (printed once) and, with ed25519 signing, a new key pair; the old ones sign beside them for 24 h", (*client.Client).RotateSecret),
		c.subAttemptsCmd(), c.subDeleteCmd())
}

// subSimpleCmd is a sub verb that takes the queue and prints the subscription.
func (c *cli) subSimpleCmd(verb, short string, call func(c *client.Client, ctx context.Context, queue string) (*client.Subscription, error)) *cobra.Command {
	return c.leaf(clientSpec{
		use: verb + " QUEUE", short: short, minArgs: 1, maxArgs: 1, completeArgs: c.queueArg,
		example: "  queues sub " + verb + " orders",
		run: func(ctx context.Context, _ *cobra.Command, args []string) error {
			s, err := call(c.client, ctx, args[0])
			if err != nil {
				return err
			}
			return c.out(s, func(w io.Writer) { printSub(w, s) })
		},
	})
}

func (c *cli) subDeleteCmd() *cobra.Command {
	return c.leaf(clientSpec{
		use: "delete QUEUE", short: "delete a queue's subscription (its messages stay)", minArgs: 1, maxArgs: 1,
		example: "  queues sub delete orders", completeArgs: c.queueArg,
		run: func(ctx context.Context, _ *cobra.Command, args []string) error {
			if err := c.client.DeleteSubscription(ctx, args[0]); err != nil {
				return err
			}
			return c.out(map[string]string{"deleted": args[0]}, func(w io.Writer) { fmt.Fprintf(w, "deleted the subscription of %s\n", args[0]) })
		},
	})
}

func printSub(w io.Writer, s *client.Subscription) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	state := "active"
	switch {
	case s.State == client.SubscriptionDisabled:
		state = "disabled: " + s.DisabledReason + "  (queues sub resume " + s.Queue + ")"
	case s.Paused:
		state = "paused"
	}
	rows := [][2]string{
		{"subscription", s.Slug}, {"id", s.ID}, {"endpoint", s.Endpoint}, {"state", state},
		{"batch size", fmt.Sprint(s.BatchSize)}, {"batch window", fmt.Sprintf("%dms", s.BatchWindowMs)},
		{"max in flight", fmt.Sprint(s.MaxInFlight)}, {"timeout", fmt.Sprintf("%ds", s.TimeoutSeconds)},
		{"disable after", disableAfter(s.DisableAfterSeconds)},
	}
	rows = append(rows, healthRows(s.Health)...)
	if s.MaxMessagesPerSecond > 0 {
		rows = append(rows, [2]string{"max messages/s", fmt.Sprint(s.MaxMessagesPerSecond)})
	}
	if f := s.FlowControl; f != nil {
		rate := "no rate bound"
		if f.MessagesPerSecond > 0 {
			rate = fmt.Sprintf("%d messages/s", f.MessagesPerSecond)
		}
		rows = append(rows, [2]string{"flow control", fmt.Sprintf("per %s: %d in flight, %s", f.KeyAttribute, f.Parallelism, rate)})
	}
	rows = append(rows, signingRows(s)...)
	if s.SigningSecret != "" {
		rows = append(rows, [2]string{"signing secret", s.SigningSecret + "  (shown only now: keep it)"})
	}
	for _, kv := range rows {
		fmt.Fprintf(tw, "%s:\t%s\n", kv[0], kv[1])
	}
	tw.Flush()
}

// signingRows are printSub's lines on how pushes are signed and authenticated.
func signingRows(s *client.Subscription) [][2]string {
	signing := s.Signing
	if signing == "" {
		signing = "hmac"
	}
	rows := [][2]string{{"signing", signing}}
	if s.SigningPublicKey != "" {
		rows = append(rows, [2]string{"signing public key", s.SigningPublicKey})
	}
	auth := "none"
	if a := s.Auth; a != nil {
		auth = a.Type + " (audience " + a.Audience + ")"
	}
	return append(rows, [2]string{"auth", auth})
}

func disableAfter(secs int) string {
	if secs == 0 {
		return "never"
	}
	return (time.Duration(secs) * time.Second).String() + " of failures"
}

// healthRows are the endpoint health lines of printSub (none without figures).
func healthRows(h *client.SubscriptionHealth) [][2]string {
	if h == nil {
		return nil
	}
	pct := func(r *float64, n int64) string {
		if r == nil {
			return "no attempts"
		}
		return fmt.Sprintf("%.1f%% of %d", *r*100, n)
	}
	at := func(t *time.Time) string {
		if t == nil {
			return "never"
		}
		return t.UTC().Format(time.RFC3339)
	}
	rows := [][2]string{
		{"success (5 min)", pct(h.SuccessRate5m, h.Attempts5m)}, {"success (24 h)", pct(h.SuccessRate24h, h.Attempts24h)},
		{"last success", at(h.LastSuccessAt)}, {"consecutive failures", fmt.Sprint(h.ConsecutiveFailures)},
		{"flow-control limit", fmt.Sprint(h.FlowControlLimit)},
	}
	if e := h.LastError; e != nil {
		status := "no response"
		if e.Status != nil {
			status = fmt.Sprint(*e.Status)
		}
		rows = append(rows, [2]string{"last error", fmt.Sprintf("%s %s (%s) at %s", status, e.Error, e.Message, e.At.UTC().Format(time.RFC3339))})
	}
	if h.ThrottledUntil != nil {
		rows = append(rows, [2]string{"throttled until", at(h.ThrottledUntil)})
	}
	return rows
}

func (c *cli) subCreateCmd() *cobra.Command {
	var sf subFlags
	var paused bool
	cmd := c.leaf(clientSpec{
		use: "create QUEUE", short: "subscribe an https endpoint to a queue (prints the signing secret once)", minArgs: 1, maxArgs: 1,
		example: `  queues sub create orders --endpoint https://example.com/hooks/orders
  queues sub create orders --endpoint https://example.com/hooks/orders --batch-size 5 --timeout 10s --paused`,
		completeArgs: c.queueArg,
		run: func(ctx context.Context, _ *cobra.Command, args []string) error {
			if sf.endpoint == "" {
				return usagef("--endpoint is required")
			}
			in, err := sf.input()
			if err != nil {
				return err
			}
			if paused {
				in.Paused = client.Bool(true)
			}
			s, err := c.client.CreateSubscription(ctx, args[0], in)
			if err != nil {
				return err
			}
			return c.out(s, func(w io.Writer) { printSub(w, s) })
		},
	})
	sf.add(cmd, true)
	cmd.Flags().BoolVar(&paused, "paused", false, "create it paused")
	return cmd
}

func (c *cli) subUpdateCmd() *cobra.Command {
	var sf subFlags
	cmd := c.leaf(clientSpec{
		use: "update QUEUE", short: "change a subscription's settings (only the flags given)", minArgs: 1, maxArgs: 1,
		example: `  queues sub update orders --max-messages-per-second 500
  queues sub update orders --flow-key customer --flow-parallelism 2 --flow-messages-per-second 10
  queues sub update orders --no-flow-control
  queues sub update orders --signing ed25519 --oidc-audience https://example.com/hooks
  queues sub update orders --signing hmac --no-auth`,
		completeArgs: c.queueArg,
		run: func(ctx context.Context, _ *cobra.Command, args []string) error {
			in, err := sf.input()
			if err != nil {
				return err
			}
			s, err := c.client.UpdateSubscription(ctx, args[0], in)
			if err != nil {
				return err
			}
			return c.out(s, func(w io.Writer) { printSub(w, s) })
		},
	})
	sf.add(cmd, false)
	return cmd
}

// subFlags are the settings flags sub create and sub update share.
type subFlags struct {
	endpoint                    string
	batchSize, window, inFlight intValue
	timeout, disableAfter       secondsValue
	flow                        flowFlags
	auth                        authFlags
}

// add defines the flags on cmd; create's help names the defaults an unset flag takes.
func (sf *subFlags) add(cmd *cobra.Command, create bool) {
	def := func(d string) string {
		if create {
			return " (default " + d + ")"
		}
		return ""
	}
	f := cmd.Flags()
	if create {
		f.StringVar(&sf.endpoint, "endpoint", "", "the https URL pushes go to (required)")
	} else {
		f.StringVar(&sf.endpoint, "endpoint", "", "a new https URL for the pushes")
	}
	f.Var(&sf.batchSize, "batch-size", "messages per push, 1-100"+def("10"))
	f.Var(&sf.window, "batch-window-ms", "how long to wait to fill a batch, 0-10000 ms"+def("0"))
	f.Var(&sf.inFlight, "max-in-flight", "concurrent pushes, 1-100"+def("10"))
	f.Var(&sf.timeout, "timeout", "push timeout, 1-60 s"+def("30"))
	never := " (0 never)"
	if create {
		never = " (default 120h; 0 never)"
	}
	f.Var(&sf.disableAfter, "disable-after", "disable it after every push failed this long, e.g. 48h"+never)
	sf.flow.add(cmd)
	sf.auth.add(cmd, create)
}

// input is the subscription input of the flags given.
func (sf *subFlags) input() (client.SubscriptionInput, error) {
	in := client.SubscriptionInput{Endpoint: sf.endpoint, BatchSize: sf.batchSize.ptr(), BatchWindowMs: sf.window.ptr(),
		MaxInFlight: sf.inFlight.ptr(), TimeoutSeconds: sf.timeout.ptr(), DisableAfterSeconds: sf.disableAfter.ptr()}
	if err := sf.auth.apply(&in); err != nil {
		return in, err
	}
	return in, sf.flow.apply(&in)
}

// authFlags are the signing and token auth flags of sub create and sub update.
type authFlags struct {
	signing, audience string
	oidc, off         bool
}

func (af *authFlags) add(cmd *cobra.Command, create bool) {
	f := cmd.Flags()
	def := ""
	if create {
		def = " (default hmac)"
	}
	f.StringVar(&af.signing, "signing", "", "how pushes are signed: hmac (the whsec_ secret) or ed25519 (a new key pair; the public key is shown)"+def)
	_ = cmd.RegisterFlagCompletionFunc("signing", cobra.FixedCompletions([]string{"hmac", "ed25519"}, cobra.ShellCompDirectiveNoFileComp))
	f.BoolVar(&af.oidc, "oidc", false, "token auth: each push carries a service-signed JWT whose audience is the endpoint URL")
	f.StringVar(&af.audience, "oidc-audience", "", "token auth with this JWT audience (implies --oidc)")
	if !create {
		f.BoolVar(&af.off, "no-auth", false, "remove token auth")
	}
}

// apply sets the flags given on in.
func (af *authFlags) apply(in *client.SubscriptionInput) error {
	switch af.signing {
	case "", "hmac", "ed25519":
		in.Signing = af.signing
	default:
		return usagef("--signing is hmac or ed25519, not %q", af.signing)
	}
	switch {
	case af.off && (af.oidc || af.audience != ""):
		return usagef("--no-auth takes no --oidc or --oidc-audience")
	case af.off:
		in.NoAuth = true
	case af.oidc || af.audience != "":
		in.Auth = &client.PushAuth{Type: "oidc", Audience: af.audience}
	}
	return nil
}

// flowFlags are the rate and keyed flow control flags of sub create and sub update.
type flowFlags struct {
	rate, parallelism, keyRate intValue
	key                        string
	off                        bool
}

func (ff *flowFlags) add(cmd *cobra.Command) {
	f := cmd.Flags()
	f.Var(&ff.rate, "max-messages-per-second", "most messages pushed a second, 0-100000 (0: no bound)")
	f.StringVar(&ff.key, "flow-key", "", "keyed flow control: the message attribute whose value is the key")
	f.Var(&ff.parallelism, "flow-parallelism", "keyed flow control: most pushes of one key in flight, 1-100 (default 1)")
	f.Var(&ff.keyRate, "flow-messages-per-second", "keyed flow control: most messages of one key a second (0: no bound)")
	if cmd.Name() == "update" {
		f.BoolVar(&ff.off, "no-flow-control", false, "turn keyed flow control off")
	}
}

// apply sets the flags given on in: the flow-* flags replace the whole flowControl setting.
func (ff *flowFlags) apply(in *client.SubscriptionInput) error {
	in.MaxMessagesPerSecond = ff.rate.ptr()
	switch {
	case ff.off && (ff.key != "" || ff.parallelism.set || ff.keyRate.set):
		return usagef("--no-flow-control takes no --flow-* flag")
	case ff.off:
		in.NoFlowControl = true
	case ff.key != "":
		in.FlowControl = &client.FlowControl{KeyAttribute: ff.key, Parallelism: ff.parallelism.v, MessagesPerSecond: ff.keyRate.v}
	case ff.parallelism.set || ff.keyRate.set:
		return usagef("--flow-parallelism and --flow-messages-per-second need --flow-key")
	}
	return nil
}

func (c *cli) subAttemptsCmd() *cobra.Command {
	var limit int
	cmd := c.leaf(clientSpec{
		use: "attempts QUEUE", short: "the subscription's recent push attempts, newest first", minArgs: 1, maxArgs: 1,
		example: "  queues sub attempts orders\n  queues sub attempts orders --limit 100 --json", completeArgs: c.queueArg,
		run: func(ctx context.Context, _ *cobra.Command, args []string) error {
			p, err := c.client.ListAttempts(ctx, args[0], limit)
			if err != nil {
				return err
			}
			return c.out(p, func(w io.Writer) { printAttempts(w, p) })
		},
	})
	cmd.Flags().IntVar(&limit, "limit", 20, "how many recent attempts")
	return cmd
}

func printAttempts(w io.Writer, p *client.AttemptPage) {
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
}
