package main

// The client commands of the queues binary (queue, send, message, move, receive, tail, sub,
// project, topic): a command line over the Go SDK (sdk/go/client), built on cobra. They find the service with --url
// or QUEUES_URL (default http://127.0.0.1:8080) and present --token or QUEUES_TOKEN.
//
// Adding a client command or a flag:
//   - a command is a constructor `func (c *cli) xxxCmd() *cobra.Command` that fills a
//     clientSpec (use line, summary, examples, number of arguments, completion of the
//     arguments) and defines its flags on cmd.Flags(); it is listed in clientCommands
//     (cli_root.go), or added to its noun's group (queueCmd, subCmd, …).
//   - a flag is one line on cmd.Flags() in the constructor: StringVar, BoolVar, or Var with a
//     value type below when the command must tell "not given" from zero (intValue,
//     secondsValue) — or check cmd.Flags().Changed(name). The single-dash spelling
//     (-visibility-timeout) keeps working without anything more.
//   - a usage mistake the flag types cannot catch returns usagef(…): exit code 2.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/queueshq/queues/sdk/go/client"
)

// Exit codes of the client commands.
const (
	exitOK          = 0 // done
	exitError       = 1 // the API refused the request (invalid_argument, …) or another failure
	exitUsage       = 2 // bad command line
	exitNotFound    = 3 // not_found: no such queue, subscription, project or token
	exitAuth        = 4 // unauthenticated or permission_denied: check the token and its scopes
	exitConflict    = 5 // queue_exists, queue_in_use, subscription_exists, message_in_flight, move_task_running, topic_exists, binding_exists, group_not_parked
	exitUnavailable = 6 // rate_limited, purge_too_soon, unavailable, or the service is unreachable
)

const exitCodesHelp = `Exit codes: 0 ok, 1 API error (the code and message are printed) or other failure,
2 usage, 3 not found, 4 unauthenticated or permission denied, 5 conflict (exists, in use, in
flight, a move task running, or a queue already bound to the topic),
6 unavailable, rate limited or unreachable (try again later).`

// cliIO is what a command reads and writes (the process's, or a test's).
type cliIO struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
}

// usageError is a bad command line (exit code 2); cmd, when set, is the command whose usage
// is printed after the message.
type usageError struct {
	msg string
	cmd *cobra.Command
}

func (u *usageError) Error() string { return u.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// cli is one run of the command line: where it reads and writes, and the flags every client
// command has (--url, --token, --json), bound per run so that tests can run many.
type cli struct {
	io     cliIO
	url    string
	token  string
	json   bool
	client *client.Client // built after the command line is checked
}

// clientSpec describes a client command; leaf turns it into a cobra command.
type clientSpec struct {
	use     string // "get QUEUE": the name, then the arguments
	short   string // one line for the parent's list
	long    string // more, shown by --help above the flags
	example string // shown by --help
	minArgs int
	maxArgs int // -1: any number
	// completeArgs completes positional arguments (nil: none). queueArg completes queue names.
	completeArgs cobra.CompletionFunc
	run          func(ctx context.Context, cmd *cobra.Command, args []string) error
}

// leaf makes a client command: the common flags, the argument count check (a usage error
// naming the usage line), then the client, then run.
func (c *cli) leaf(s clientSpec) *cobra.Command {
	cmd := &cobra.Command{
		Use: s.use, Short: s.short, Long: s.long, Example: s.example,
		Annotations:       map[string]string{"exitCodes": exitCodesHelp},
		ValidArgsFunction: s.completeArgs,
	}
	if cmd.Long == "" {
		cmd.Long = s.short
	}
	cmd.Args = func(cmd *cobra.Command, args []string) error {
		if len(args) < s.minArgs || (s.maxArgs >= 0 && len(args) > s.maxArgs) {
			return &usageError{msg: "usage: " + cmd.UseLine()}
		}
		return nil
	}
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := c.connect(); err != nil {
			return err
		}
		return s.run(cmd.Context(), cmd, args)
	}
	c.clientFlags(cmd)
	return cmd
}

// clientFlags defines --url, --token and --json on cmd.
func (c *cli) clientFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&c.url, "url", "", "the service's URL (default $QUEUES_URL, else "+client.DefaultURL+")")
	f.StringVar(&c.token, "token", "", "the bearer token (default $QUEUES_TOKEN)")
	f.BoolVar(&c.json, "json", false, "print JSON instead of text")
}

// connect builds the client from the flags and the environment.
func (c *cli) connect() error {
	base := cmpOr(c.url, c.io.getenv(client.EnvURL), client.DefaultURL)
	token := cmpOr(c.token, c.io.getenv(client.EnvToken))
	cl, err := client.New(base, client.WithToken(token), client.WithUserAgent(cliUserAgent()))
	if err != nil {
		return usagef("%v", err)
	}
	c.client = cl
	return nil
}

// cliUserAgent is the CLI's User-Agent: its own product and the Go SDK's, which it is built
// on ("queues-cli/<version> queues-go/<version>"; one module, so one version).
func cliUserAgent() string { return "queues-cli/" + client.Version() + " " + client.UserAgent() }

func cmpOr(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

// out prints v as JSON (with --json) or runs text.
func (c *cli) out(v any, text func(w io.Writer)) error {
	if c.json {
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(c.io.stdout, "%s\n", b)
		return err
	}
	text(c.io.stdout)
	return nil
}

// line prints one JSON object per line (with --json) or text.
func (c *cli) line(v any, text string) error {
	if c.json {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(c.io.stdout, "%s\n", b)
		return err
	}
	_, err := fmt.Fprintln(c.io.stdout, text)
	return err
}

// queueArg completes the first argument with the project's queue names (the token's, from
// the flags or the environment). Completion must not hang a shell: it gives up after 2 s.
func (c *cli) queueArg(cmd *cobra.Command, args []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 || c.connect() != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), 2*time.Second)
	defer cancel()
	var names []cobra.Completion
	for q, err := range c.client.AllQueues(ctx, prefix) {
		if err != nil || len(names) == 1000 {
			break
		}
		names = append(names, q.Name)
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

// secondsValue is a flag of whole seconds given as "90" or a duration such as "1m30s"; set
// records that it was given.
type secondsValue struct {
	v   int
	set bool
}

func (s *secondsValue) String() string {
	if s == nil || !s.set {
		return ""
	}
	return strconv.Itoa(s.v)
}

func (s *secondsValue) Set(v string) error {
	if n, err := strconv.Atoi(v); err == nil {
		s.v, s.set = n, true
		return nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return errors.New("want seconds (90) or a duration (1m30s)")
	}
	if d%time.Second != 0 {
		return errors.New("want whole seconds")
	}
	s.v, s.set = int(d/time.Second), true
	return nil
}

// Type names the value in the help ("--delay seconds").
func (s *secondsValue) Type() string { return "seconds" }

func (s *secondsValue) ptr() *int {
	if !s.set {
		return nil
	}
	return client.Int(s.v)
}

// intValue is an integer flag that records whether it was given.
type intValue struct {
	v   int
	set bool
}

func (i *intValue) String() string {
	if i == nil || !i.set {
		return ""
	}
	return strconv.Itoa(i.v)
}

func (i *intValue) Set(v string) error {
	n, err := strconv.Atoi(v)
	if err != nil {
		return errors.New("want an integer")
	}
	i.v, i.set = n, true
	return nil
}

// Type names the value in the help.
func (i *intValue) Type() string { return "int" }

func (i *intValue) ptr() *int {
	if !i.set {
		return nil
	}
	return client.Int(i.v)
}

// report prints err helpfully and returns the exit code for it.
func report(cio cliIO, name string, err error) int {
	if err == nil {
		return exitOK
	}
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(cio.stderr, "%s: %s\n", name, ue.msg)
		if ue.cmd != nil {
			fmt.Fprintf(cio.stderr, "\n%s", ue.cmd.UsageString())
		}
		return exitUsage
	}
	var e *client.Error
	if errors.As(err, &e) {
		return reportAPI(cio, name, e)
	}
	fmt.Fprintf(cio.stderr, "%s: %v\n", name, err)
	if !errors.Is(err, context.Canceled) && isNetErr(err) {
		fmt.Fprintf(cio.stderr, "  is the service running at %s? (start one with 'queues serve'; set --url or %s)\n",
			cmpOr(cio.getenv(client.EnvURL), client.DefaultURL), client.EnvURL)
		return exitUnavailable
	}
	return exitError
}

// reportAPI prints an error answer of the API (code, message, field, retry) with a hint, and
// returns the exit code for its code.
func reportAPI(cio cliIO, name string, e *client.Error) int {
	msg := fmt.Sprintf("%s: %s: %s", name, e.Code, e.Message)
	if e.Field != "" {
		msg += " (field " + e.Field + ")"
	}
	if e.RetryAfter > 0 {
		msg += fmt.Sprintf(" (retry after %s)", e.RetryAfter)
	}
	fmt.Fprintln(cio.stderr, msg)
	if hint := hints[e.Code]; hint != "" {
		fmt.Fprintln(cio.stderr, "  "+hint)
	}
	switch e.Code {
	case client.CodeNotFound:
		return exitNotFound
	case client.CodeUnauthenticated, client.CodePermissionDenied:
		return exitAuth
	case client.CodeQueueExists, client.CodeQueueInUse, client.CodeSubscriptionExists, client.CodeMessageInFlight, client.CodeMoveTaskRunning,
		client.CodeTopicExists, client.CodeBindingExists, client.CodeGroupNotParked:
		return exitConflict
	case client.CodeRateLimited, client.CodePurgeTooSoon, client.CodeUnavailable:
		return exitUnavailable
	}
	return exitError
}

var hints = map[client.Code]string{
	client.CodeUnauthenticated:  "set --token or " + client.EnvToken + " to a project token",
	client.CodePermissionDenied: "the token lacks the scope this needs (queues:admin, queues:read, messages:send or messages:receive)",
	client.CodeNotFound:         "check the name (names are case-sensitive) and that the token is for the right project",
	client.CodeQuotaExceeded:    "the project is at one of its limits ('queues project' shows them); free some room or ask the operator to raise it",
}

// isNetErr: the request never got an answer.
func isNetErr(err error) bool {
	return client.CodeOf(err) == "" && strings.Contains(err.Error(), "queues: ") &&
		(strings.Contains(err.Error(), "connection refused") || strings.Contains(err.Error(), "no such host") ||
			strings.Contains(err.Error(), "dial") || strings.Contains(err.Error(), "EOF") || strings.Contains(err.Error(), "timeout"))
}
