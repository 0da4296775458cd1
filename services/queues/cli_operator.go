package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// operatorRun runs an operator command once its flags are parsed; args are the arguments
// after them.
type operatorRun func(ctx context.Context, args []string) error

// operatorCommand is a command that runs (part of) the service. Its flags are cobra's: define
// registers them on the command's flag set (binding QUEUES_* variables with bindEnv) and
// returns what runs. A command with subs only groups them (admin).
type operatorCommand struct {
	use, summary, long, example string
	define                      func(fs *pflag.FlagSet) operatorRun
	subs                        []operatorCommand
}

var operatorCommands = []operatorCommand{
	{use: "serve", summary: "run everything in one process on the embedded store (data in ./.queues)", define: defineServe},
	{use: "api", summary: "run the API tier (Redis + DynamoDB)", define: defineAPI},
	{use: "pusher", summary: "run a push fleet replica (Redis + DynamoDB)", define: definePusher},
	{use: "migrate", summary: "create or update the DynamoDB table (idempotent)", define: defineMigrate},
	adminCommand,
	{use: "dev", summary: "start a local stack: redis-server, DynamoDB Local and the API, with a project and token", define: defineDev},
	{use: "health <url>", summary: "probe a health endpoint (exit 0 on 200): the healthcheck of distroless images",
		example: "  queues health -q --timeout 3s http://127.0.0.1:8080/readyz", define: defineHealth},
	{use: "bench", summary: "load generator: produce, consume and end-to-end rates and latencies of a running service", long: benchLong, define: defineBench},
}

// operatorAnnotation marks an operator command: its flags end at the first argument that is
// not one, as with Go's flag package (longFlagsOneDash stops there too).
const operatorAnnotation = "operator"

// command builds the cobra command. Cobra parses the flags; then applyEnv fills in the ones
// the command line left from their variables, and the command runs. A failure is an
// operatorError (exit 1), an unknown or malformed flag included, as before cobra parsed them.
func (op operatorCommand) command() *cobra.Command {
	cmd := &cobra.Command{
		Use: op.use, Short: op.summary, Long: op.long, Example: op.example,
		Annotations: map[string]string{operatorAnnotation: "true"},
	}
	if op.long != "" {
		cmd.Long = op.summary + "\n\n" + op.long
	}
	cmd.Flags().SetInterspersed(false)
	cmd.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		// A malformed variable is reported first, as when it was applied before the command line.
		if envErr := applyEnv(cmd.Flags()); envErr != nil {
			err = envErr
		}
		return &operatorError{fmt.Errorf("%w\nRun '%s --help' for usage", err, cmd.CommandPath())}
	})
	for _, sub := range op.subs {
		cmd.AddCommand(sub.command())
	}
	if op.define == nil {
		cmd.RunE = func(cmd *cobra.Command, args []string) error { return groupRun(cmd, args) }
		return cmd
	}
	run := op.define(cmd.Flags())
	hideSecretDefaults(cmd.Flags())
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := applyEnv(cmd.Flags()); err != nil {
			return &operatorError{err}
		}
		if err := run(cmd.Context(), args); err != nil {
			return &operatorError{err}
		}
		return nil
	}
	return cmd
}

// groupRun runs a command that only groups subcommands (admin, admin project): without one it
// prints its help on stderr and exits 0; an unknown one is an error.
func groupRun(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		cmd.SetOut(cmd.ErrOrStderr())
		_ = cmd.Help()
		return &operatorError{pflag.ErrHelp}
	}
	what := strings.TrimPrefix(cmd.CommandPath()+" "+strings.Join(args, " "), cmd.Root().Name()+" ")
	return &operatorError{fmt.Errorf("unknown command %q (see '%s --help')", what, cmd.CommandPath())}
}

// isOperator reports whether cmd is an operator command or below one.
func isOperator(cmd *cobra.Command) bool {
	return cmd.Annotations[operatorAnnotation] != ""
}

// secretFlags take their defaults from variables that hold credentials.
var secretFlags = map[string]bool{"token": true, "operator-token": true, "signing-keys": true}

// hideSecretDefaults keeps --help from printing a credential: the flag keeps the value its
// variable gave it, only the default shown in the usage is blanked.
func hideSecretDefaults(fs *pflag.FlagSet) {
	fs.VisitAll(func(f *pflag.Flag) {
		if secretFlags[f.Name] {
			f.DefValue = ""
		}
	})
}
