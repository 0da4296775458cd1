package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// The operator commands as the tests call them: through the command tree, as the binary runs
// them (cobra parses the flags, QUEUES_* variables fill in the rest).
func runServe(ctx context.Context, args []string) error  { return runOperator(ctx, "serve", args) }
func runAPI(ctx context.Context, args []string) error    { return runOperator(ctx, "api", args) }
func runPusher(ctx context.Context, args []string) error { return runOperator(ctx, "pusher", args) }
func runMigrate(ctx context.Context, args []string) error {
	return runOperator(ctx, "migrate", args)
}
func runAdmin(ctx context.Context, args []string) error  { return runOperator(ctx, "admin", args) }
func runHealth(ctx context.Context, args []string) error { return runOperator(ctx, "health", args) }
func runBench(ctx context.Context, args []string) error  { return runOperator(ctx, "bench", args) }

// runOperator runs the operator command name with args as execute does, and returns its
// error (nil after --help).
func runOperator(ctx context.Context, name string, args []string) error {
	return runTree(ctx, newRoot(cliIO{strings.NewReader(""), io.Discard, io.Discard, func(string) string { return "" }}),
		append([]string{name}, args...))
}

// runTree runs args on root as execute does and returns the command's error, unwrapped from
// operatorError (nil after --help).
func runTree(ctx context.Context, root *cobra.Command, args []string) error {
	root.SetArgs(longFlagsOneDash(root, args))
	_, err := root.ExecuteContextC(ctx)
	var oe *operatorError
	if errors.As(err, &oe) {
		if errors.Is(oe.err, pflag.ErrHelp) {
			return nil
		}
		return oe.err
	}
	return err
}

// parseAsOperator defines flags with define on an operator command "t" and runs args on it;
// rest is what the command was left with after its flags.
func parseAsOperator(define func(fs *pflag.FlagSet), args ...string) (rest []string, err error) {
	var out bytes.Buffer
	root := newRoot(cliIO{strings.NewReader(""), &out, &out, func(string) string { return "" }})
	op := operatorCommand{use: "t", summary: "a test command", define: func(fs *pflag.FlagSet) operatorRun {
		define(fs)
		return func(_ context.Context, args []string) error { rest = args; return nil }
	}}
	root.AddCommand(op.command())
	err = runTree(context.Background(), root, append([]string{"t"}, args...))
	return rest, err
}

// The operator commands' flags are cobra's: `queues serve --help` and `queues help serve`
// list them with their variables, the one-dash spelling and the variables still set them,
// and an unknown flag is refused with exit 1 and a pointer to the help.
func TestOperatorFlagsAreCobras(t *testing.T) {
	run := func(args ...string) (code int, stdout, stderr string) {
		var out, errb bytes.Buffer
		code = execute(t.Context(), args, cliIO{strings.NewReader(""), &out, &errb, func(string) string { return "" }})
		return code, out.String(), errb.String()
	}
	for _, args := range [][]string{{"serve", "--help"}, {"serve", "-help"}, {"serve", "-h"}, {"help", "serve"}} {
		code, out, _ := run(args...)
		if code != exitOK || !strings.Contains(out, "Usage:\n  queues serve [flags]") ||
			!regexp.MustCompile(`--rate-send int +send requests/s per standard queue \(QUEUES_RATE_SEND\)`).MatchString(out) {
			t.Errorf("%q: exit %d, want 0 and the flags with their variables:\n%s", args, code, out)
		}
	}
	if code, out, _ := run("admin", "project", "limits", "set", "--help"); code != exitOK || !strings.Contains(out, "--default-limits string") {
		t.Errorf("admin project limits set --help: exit %d:\n%s", code, out)
	}
	for _, args := range [][]string{{"serve", "--bogus"}, {"api", "-bogus"}, {"admin", "token", "create", "-bogus"}, {"health", "-x", "http://127.0.0.1:1"}} {
		code, _, errOut := run(args...)
		if code != exitError || !strings.Contains(errOut, "unknown") || !strings.Contains(errOut, "--help' for usage") {
			t.Errorf("%q: exit %d, %q; want 1 and the unknown flag named", args, code, errOut)
		}
	}
}

// Flag over variable over default, for a flag bound with bindEnv and for one whose default
// is its variable (env), through the command tree.
func TestOperatorFlagPrecedence(t *testing.T) {
	var rate int
	var listen string
	define := func(fs *pflag.FlagSet) {
		fs.IntVar(&rate, "rate-send", 3, "")
		bindEnv(fs, "rate-send", "QUEUES_RATE_SEND")
		fs.StringVar(&listen, "listen", env("QUEUES_LISTEN", "default"), "")
	}
	check := func(wantRate int, wantListen string, args ...string) {
		t.Helper()
		if _, err := parseAsOperator(define, args...); err != nil || rate != wantRate || listen != wantListen {
			t.Errorf("%q: %d %q %v; want %d %q", args, rate, listen, err, wantRate, wantListen)
		}
	}
	check(3, "default")
	t.Setenv("QUEUES_RATE_SEND", "7")
	t.Setenv("QUEUES_LISTEN", "env")
	check(7, "env")
	check(9, "flag", "-rate-send", "9", "--listen", "flag")
	t.Setenv("QUEUES_RATE_SEND", "") // empty: the default, as before
	check(3, "env")
}

// Every flag bound to a variable names it in its help, so --help lists the variables.
func TestOperatorHelpNamesTheVariables(t *testing.T) {
	var walk func(cmd *cobra.Command)
	n := 0
	walk = func(cmd *cobra.Command) {
		cmd.Flags().VisitAll(func(f *pflag.Flag) {
			for _, v := range f.Annotations[envAnnotation] {
				n++
				if !strings.Contains(f.Usage, v) {
					t.Errorf("%s --%s: the help %q does not name %s", cmd.CommandPath(), f.Name, f.Usage, v)
				}
			}
		})
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
	}
	walk(newRoot(cliIO{strings.NewReader(""), io.Discard, io.Discard, func(string) string { return "" }}))
	if n < 10 {
		t.Fatalf("found %d bound flags: the walk is broken", n)
	}
}

// --help never prints a credential that a variable set as a flag's default.
func TestOperatorHelpHidesSecrets(t *testing.T) {
	const marker = "s3cr3t-marker"
	for _, v := range []string{"QUEUES_SIGNING_KEYS", "QUEUES_OPERATOR_TOKEN", "QUEUES_TOKEN"} {
		t.Setenv(v, "k1:"+marker)
	}
	for _, args := range [][]string{{"serve", "--help"}, {"api", "--help"}, {"bench", "--help"}, {"admin", "token", "create", "--help"}, {"pusher", "--help"}} {
		var out, errb bytes.Buffer
		code := execute(t.Context(), args, cliIO{strings.NewReader(""), &out, &errb, func(string) string { return "" }})
		if code != exitOK || strings.Contains(out.String()+errb.String(), marker) || !strings.Contains(out.String(), "Usage:") {
			t.Errorf("%q: exit %d; the usage shows a credential or is missing:\n%s%s", args, code, out.String(), errb.String())
		}
	}
}
