package main

// The client commands of the queues binary (queue, send, receive, tail, sub): a command line
// over the Go SDK (pkg/client). They find the service with --url or QUEUES_URL (default
// http://127.0.0.1:8080) and present --token or QUEUES_TOKEN.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/queueshq/queues/pkg/client"
)

// Exit codes of the client commands.
const (
	exitOK          = 0 // done
	exitError       = 1 // the API refused the request (invalid_argument, …) or another failure
	exitUsage       = 2 // bad command line
	exitNotFound    = 3 // not_found: no such queue, subscription, project or token
	exitAuth        = 4 // unauthenticated or permission_denied: check the token and its scopes
	exitConflict    = 5 // queue_exists, queue_in_use, subscription_exists
	exitUnavailable = 6 // rate_limited, purge_too_soon, unavailable, or the service is unreachable
)

const exitCodesHelp = `Exit codes: 0 ok, 1 API error (the code and message are printed) or other failure,
2 usage, 3 not found, 4 unauthenticated or permission denied, 5 conflict (exists or in use),
6 unavailable, rate limited or unreachable (try again later).`

// cliIO is what a client command reads and writes (the process's, or a test's).
type cliIO struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
}

// cliCommand adapts a client command to the binary's command list: it exits with the
// command's exit code.
func cliCommand(name string) func(ctx context.Context, args []string) error {
	return func(ctx context.Context, args []string) error {
		if code := runCLI(ctx, name, args, cliIO{os.Stdin, os.Stdout, os.Stderr, os.Getenv}); code != exitOK {
			os.Exit(code)
		}
		return nil
	}
}

// usageError is a bad command line; printed: the flag package has told the user already.
type usageError struct {
	msg     string
	printed bool
}

func (u *usageError) Error() string { return u.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// cli is one run of a client command.
type cli struct {
	io     cliIO
	name   string // "queue create", …
	fs     *flag.FlagSet
	url    string
	token  string
	json   bool
	usage  string
	client *client.Client
}

func newCLI(cio cliIO, name, usage string) *cli {
	c := &cli{io: cio, name: name, usage: usage, fs: flag.NewFlagSet("queues "+name, flag.ContinueOnError)}
	c.fs.SetOutput(cio.stderr)
	c.fs.StringVar(&c.url, "url", "", "the service's URL (default $QUEUES_URL, else "+client.DefaultURL+")")
	c.fs.StringVar(&c.token, "token", "", "the bearer token (default $QUEUES_TOKEN)")
	c.fs.BoolVar(&c.json, "json", false, "print JSON instead of text")
	c.fs.Usage = func() {
		fmt.Fprintf(cio.stderr, "usage: queues %s\n\nflags:\n", usage)
		c.fs.PrintDefaults()
		fmt.Fprintf(cio.stderr, "\n%s\n", exitCodesHelp)
	}
	return c
}

// parse parses flags anywhere among the arguments (before "--"), checks the number of
// positional arguments (max < 0: any) and builds the client.
func (c *cli) parse(args []string, minArgs, maxArgs int) ([]string, error) {
	var pos, rest []string
	if i := indexOf(args, "--"); i >= 0 {
		args, rest = args[:i], args[i+1:]
	}
	for {
		if err := c.fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, &usageError{msg: err.Error(), printed: true}
		}
		args = c.fs.Args()
		if len(args) == 0 {
			break
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
	pos = append(pos, rest...)
	if len(pos) < minArgs || (maxArgs >= 0 && len(pos) > maxArgs) {
		return nil, usagef("usage: queues %s", c.usage)
	}
	base := cmpOr(c.url, c.io.getenv(client.EnvURL), client.DefaultURL)
	token := cmpOr(c.token, c.io.getenv(client.EnvToken))
	cl, err := client.New(base, client.WithToken(token), client.WithUserAgent("queues-cli"))
	if err != nil {
		return nil, usagef("%v", err)
	}
	c.client = cl
	return pos, nil
}

func indexOf(args []string, s string) int {
	for i, a := range args {
		if a == s {
			return i
		}
	}
	return -1
}

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

func (i *intValue) ptr() *int {
	if !i.set {
		return nil
	}
	return client.Int(i.v)
}

// listValue is a repeatable string flag.
type listValue []string

func (l *listValue) String() string     { return strings.Join(*l, ",") }
func (l *listValue) Set(v string) error { *l = append(*l, v); return nil }

// runCLI runs a client command and returns its exit code.
func runCLI(ctx context.Context, name string, args []string, cio cliIO) int {
	var err error
	switch name {
	case "queue":
		err = runQueueCmd(ctx, args, cio)
	case "send":
		err = runSend(ctx, args, cio)
	case "receive":
		err = runReceive(ctx, args, cio)
	case "tail":
		err = runTail(ctx, args, cio)
	case "sub":
		err = runSubCmd(ctx, args, cio)
	case "project":
		err = runProjectCmd(ctx, args, cio)
	default:
		err = usagef("unknown command %q", name)
	}
	return report(cio, name, err)
}

// report prints err helpfully and returns the exit code for it.
func report(cio cliIO, name string, err error) int {
	if err == nil {
		return exitOK
	}
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	var ue *usageError
	if errors.As(err, &ue) {
		if !ue.printed {
			fmt.Fprintf(cio.stderr, "queues %s: %s\n", name, ue.msg)
		}
		return exitUsage
	}
	var e *client.Error
	if errors.As(err, &e) {
		msg := fmt.Sprintf("queues %s: %s: %s", name, e.Code, e.Message)
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
		case client.CodeQueueExists, client.CodeQueueInUse, client.CodeSubscriptionExists:
			return exitConflict
		case client.CodeRateLimited, client.CodePurgeTooSoon, client.CodeUnavailable:
			return exitUnavailable
		}
		return exitError
	}
	fmt.Fprintf(cio.stderr, "queues %s: %v\n", name, err)
	if !errors.Is(err, context.Canceled) && isNetErr(err) {
		fmt.Fprintf(cio.stderr, "  is the service running at %s? (start one with 'queues serve'; set --url or %s)\n",
			cmpOr(cio.getenv(client.EnvURL), client.DefaultURL), client.EnvURL)
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

// sub dispatches "<noun> <verb> …" to verbs.
func sub(args []string, cio cliIO, noun string, verbs map[string]func([]string) error, order []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprintf(cio.stderr, "usage: queues %s <%s> [flags]\n\n%s\n", noun, strings.Join(order, "|"), exitCodesHelp)
		if len(args) == 0 {
			return usagef("missing a subcommand (%s)", strings.Join(order, ", "))
		}
		return flag.ErrHelp
	}
	f, ok := verbs[args[0]]
	if !ok {
		return usagef("unknown subcommand %q (want %s)", args[0], strings.Join(order, ", "))
	}
	return f(args[1:])
}
