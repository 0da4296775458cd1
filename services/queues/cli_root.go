package main

// The command tree of the queues binary. Two kinds of commands hang off the root:
//   - operator commands (serve, api, pusher, migrate, admin, dev, health, bench) run the
//     service; their flags are cobra's too, with QUEUES_* variables under the command line
//     (cli_operator.go, envflags.go), documented by `queues <command> --help`;
//   - client commands (queue, send, message, move, receive, tail, sub, project, topic; version
//     needs no service) talk to a running service through the Go SDK; their flags are cobra's (cli.go says how to add one).
// `queues completion bash|zsh|fish|powershell` prints a shell completion script (cobra's),
// which completes commands, flags and, for the client commands, queue names.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// clientCommands are the client commands, in the order of the help.
func (c *cli) clientCommands() []*cobra.Command {
	return []*cobra.Command{c.queueCmd(), c.sendCmd(), c.messageCmd(), c.moveCmd(), c.receiveCmd(), c.browseCmd(), c.tailCmd(), c.subCmd(), c.projectCmd(), c.topicCmd(), c.listenCmd(), c.versionCmd()}
}

// operatorError is an operator command's failure: printed as "queues serve: …", exit 1.
type operatorError struct{ err error }

func (o *operatorError) Error() string { return o.err.Error() }
func (o *operatorError) Unwrap() error { return o.err }

const (
	groupClient   = "client"
	groupOperator = "operator"
)

// newRoot builds the command tree for one run.
func newRoot(cio cliIO) *cobra.Command {
	c := &cli{io: cio}
	root := &cobra.Command{
		Use:   "queues",
		Short: "Queues: a hosted message queue service and its command line",
		Long: `Queues is a multi-tenant message queue service. This one binary runs it (serve, or api and
pusher on Redis and DynamoDB) and talks to it (queue, send, message, move, receive, tail, sub,
project).`,
		Example: `  queues serve                                  # everything in one process, data in ./.queues
  export QUEUES_URL=http://127.0.0.1:8080 QUEUES_TOKEN=...
  queues queue create orders
  seq 1 3 | queues send orders
  queues receive orders -n 3
  source <(queues completion bash)             # completion (also zsh, fish, powershell)`,
		SilenceErrors: true, SilenceUsage: true,
		Args: rootArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return &usageError{msg: "missing a command", cmd: cmd}
		},
	}
	root.SetIn(cio.stdin)
	root.SetOut(cio.stdout)
	root.SetErr(cio.stderr)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return &usageError{msg: err.Error(), cmd: cmd}
	})
	root.SetUsageTemplate(root.UsageTemplate() + `{{with index .Annotations "exitCodes"}}
{{.}}
{{end}}`)
	root.AddGroup(&cobra.Group{ID: groupClient, Title: "Client commands ($QUEUES_URL, $QUEUES_TOKEN):"},
		&cobra.Group{ID: groupOperator, Title: "Running the service:"})
	root.SetCompletionCommandGroupID(groupClient)
	root.SetHelpCommandGroupID(groupClient)
	for _, cmd := range c.clientCommands() {
		cmd.GroupID = groupClient
		root.AddCommand(cmd)
	}
	for _, op := range operatorCommands {
		cmd := op.command()
		cmd.GroupID = groupOperator
		root.AddCommand(cmd)
	}
	root.InitDefaultCompletionCmd()
	if cmd, _, err := root.Find([]string{"completion"}); err == nil && cmd != root {
		strict(cmd)
	}
	return root
}

// rootArgs refuses an unknown command, with cobra's "did you mean".
func rootArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	return unknown(cmd, "command", args[0])
}

// unknown is the usage error for an unknown (sub)command, suggesting the near names.
func unknown(cmd *cobra.Command, what, name string) error {
	var names []string
	for _, sub := range cmd.Commands() {
		if sub.IsAvailableCommand() {
			names = append(names, sub.Name())
		}
	}
	msg := fmt.Sprintf("unknown %s %q (want %s)", what, name, strings.Join(names, ", "))
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2 // cobra's default, set only on its own path
	}
	if s := cmd.SuggestionsFor(name); len(s) > 0 {
		msg += "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t")
	}
	return &usageError{msg: msg}
}

// group makes a noun's command (queue, sub): it runs a subcommand, and without one, or with
// an unknown one, is a usage error.
func (c *cli) group(use, short, example string, subs ...*cobra.Command) *cobra.Command {
	names := make([]string, 0, len(subs))
	for _, s := range subs {
		names = append(names, s.Name())
	}
	cmd := &cobra.Command{
		Use: use + " <" + strings.Join(names, "|") + ">", Short: short, Example: example,
		Annotations: map[string]string{"exitCodes": exitCodesHelp},
	}
	cmd.AddCommand(subs...)
	strict(cmd)
	return cmd
}

// strict makes a command that only groups subcommands refuse to run without one, or with an
// unknown one (cobra would print the help and exit 0).
func strict(cmd *cobra.Command) {
	cmd.Args = func(cmd *cobra.Command, args []string) error {
		var names []string
		for _, s := range cmd.Commands() {
			if s.IsAvailableCommand() {
				names = append(names, s.Name())
			}
		}
		if len(args) == 0 {
			return &usageError{msg: "missing a subcommand (" + strings.Join(names, ", ") + ")\nusage: " + cmd.UseLine(), cmd: cmd}
		}
		return unknown(cmd, "subcommand", args[0])
	}
	cmd.RunE = func(*cobra.Command, []string) error { return nil } // Args has refused every call
}

// execute runs the command line args (without the program name) and returns the exit code.
func execute(ctx context.Context, args []string, cio cliIO) int {
	root := newRoot(cio)
	root.SetArgs(longFlagsOneDash(root, args))
	cmd, err := root.ExecuteContextC(ctx)
	name := "queues"
	if cmd != nil {
		name = cmd.CommandPath()
	}
	var oe *operatorError
	if errors.As(err, &oe) {
		if errors.Is(oe.err, pflag.ErrHelp) {
			return exitOK
		}
		fmt.Fprintf(cio.stderr, "%s: %v\n", name, oe.err)
		return exitError
	}
	return report(cio, name, err)
}

// runCLI runs one client command (name, then its arguments) and returns its exit code.
func runCLI(ctx context.Context, name string, args []string, cio cliIO) int {
	return execute(ctx, append([]string{name}, args...), cio)
}

// longFlagsOneDash rewrites -name to --name: the client commands were first written over Go's
// flag package, where one dash is as good as two, and so were the operator commands; scripts
// written then keep working. A flag's value is never rewritten (--group -g1 keeps its group),
// nor anything after "--"; -h and -n stay the shorthands they are, and a one-letter long flag
// without a shorthand (health's -q) is read as long. An operator command's flags end at its
// first argument that is not one (cobra parses them so, SetInterspersed(false)), and so does
// the rewriting.
func longFlagsOneDash(root *cobra.Command, args []string) []string {
	cmd, _, err := root.Find(args)
	if err != nil {
		return args
	}
	lookup := func(name string) *pflag.Flag {
		if f := cmd.Flags().Lookup(name); f != nil {
			return f
		}
		return cmd.InheritedFlags().Lookup(name)
	}
	names := depth(cmd) // the command's path comes first
	out := slices.Clone(args)
	for i := 0; i < len(out); i++ {
		a := out[i]
		if a == "--" {
			break
		}
		if len(a) < 2 || a[0] != '-' {
			if names--; names < 0 && isOperator(cmd) {
				break
			}
			continue
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		var f *pflag.Flag
		switch {
		case strings.HasPrefix(a, "--"):
			f = lookup(name)
		case len(name) == 1:
			if f = cmd.Flags().ShorthandLookup(name); f == nil {
				if f = lookup(name); f != nil {
					out[i] = "-" + a
				}
			}
		default:
			out[i] = "-" + a // unknown too: "unknown flag: --bogus" names it as the user wrote it
			f = lookup(name)
		}
		if f != nil && f.NoOptDefVal == "" && !hasValue {
			i++ // the next argument is this flag's value
		}
	}
	return out
}

// depth is how many command names lead to cmd from the root.
func depth(cmd *cobra.Command) int {
	n := 0
	for c := cmd; c.HasParent(); c = c.Parent() {
		n++
	}
	return n
}

// processIO is the process's standard streams and environment.
func processIO() cliIO { return cliIO{os.Stdin, os.Stdout, os.Stderr, os.Getenv} }
