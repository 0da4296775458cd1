// Command queues is the Queues service in one binary: the API tier (api), the metadata
// migration (migrate), project and token administration (admin) and a local development stack
// (dev). See the README for configuration.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

type command struct {
	name, summary string
	run           func(ctx context.Context, args []string) error
}

var commands = []command{
	{"serve", "run everything in one process on the embedded store (data in ./.queues)", runServe},
	{"api", "run the API tier (Redis + DynamoDB)", runAPI},
	{"pusher", "run a push fleet replica (Redis + DynamoDB)", runPusher},
	{"migrate", "create or update the DynamoDB table (idempotent)", runMigrate},
	{"admin", "manage projects and tokens directly in DynamoDB", runAdmin},
	{"dev", "start a local stack: redis-server, DynamoDB Local and the API, with a project and token", runDev},
	{"health", "probe a health endpoint (exit 0 on 200): the healthcheck of distroless images", runHealth},
	{"bench", "load generator: produce, consume and end-to-end rates and latencies of a running service", runBench},
	{"queue", "client: create|list|get|update|delete|purge queues ($QUEUES_URL, $QUEUES_TOKEN)", cliCommand("queue")},
	{"send", "client: send messages from arguments or standard input, one a line", cliCommand("send")},
	{"receive", "client: receive messages, print and acknowledge them (--no-ack)", cliCommand("receive")},
	{"tail", "client: follow a queue, printing and acknowledging what arrives", cliCommand("tail")},
	{"sub", "client: push subscription create|get|pause|resume|rotate-secret|attempts|delete", cliCommand("sub")},
	{"project", "client: the token's own project with its limits and usage; 'project usage' for hourly use", cliCommand("project")},
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: queues <command> [flags]\n\ncommands:")
	for _, c := range commands {
		fmt.Fprintf(os.Stderr, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(os.Stderr, "\nRun 'queues <command> -h' for a command's flags.")
}

func main() {
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	for _, c := range commands {
		if c.name == os.Args[1] {
			err := c.run(ctx, os.Args[2:])
			if errors.Is(err, flag.ErrHelp) {
				os.Exit(0)
			}
			if err != nil {
				fmt.Fprintf(os.Stderr, "queues %s: %v\n", c.name, err)
				os.Exit(1)
			}
			return
		}
	}
	if os.Args[1] == "-h" || os.Args[1] == "--help" || os.Args[1] == "help" {
		usage()
		return
	}
	fmt.Fprintf(os.Stderr, "queues: unknown command %q\n\n", os.Args[1])
	usage()
	os.Exit(2)
}
