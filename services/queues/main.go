// Command queues is the Queues service in one binary: the API tier (api), the push fleet
// (pusher), everything in one process (serve), the metadata migration (migrate), project and
// token administration (admin), a local development stack (dev), and the client commands
// (queue, send, message, move, receive, tail, sub, project). cli_root.go builds the command
// tree; see docs/configuration.md for configuration.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := execute(ctx, os.Args[1:], processIO())
	stop()
	os.Exit(code)
}
