package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// messageCmd groups the commands on one message: delete by id
// (docs/lifecycle.md#delete-a-waiting-message), and the settlements of received messages by receipt
// handle (cli_settle.go).
func (c *cli) messageCmd() *cobra.Command {
	return c.group("message", "act on a message: by the id its send answered (delete), or settle a received one by its receipt handle",
		`  queues message delete orders 0193a5b4-3c4d-7e5f-8061-7c8d9e0f1a2b
  queues receive orders -n 10 --no-ack --json | queues message ack
  queues message visibility --timeout 5m <receipt handle>`,
		append([]*cobra.Command{c.messageDeleteCmd()}, c.settleCmds()...)...)
}

func (c *cli) messageDeleteCmd() *cobra.Command {
	return c.leaf(clientSpec{
		use: "delete QUEUE MESSAGE_ID", short: "delete a visible or delayed message (cancel a scheduled one)",
		long: `Deletes one message that waits in the queue (visible or delayed), by the id its send
printed. A message in flight is not deleted (exit code of a conflict: settle it with its
receipt handle); one the queue does not hold is not found.`,
		example: "  queues message delete orders 0193a5b4-3c4d-7e5f-8061-7c8d9e0f1a2b", minArgs: 2, maxArgs: 2,
		completeArgs: c.queueArg,
		run: func(ctx context.Context, _ *cobra.Command, args []string) error {
			if err := c.client.DeleteMessage(ctx, args[0], args[1]); err != nil {
				return err
			}
			return c.out(map[string]any{"deleted": args[1]}, func(w io.Writer) {
				fmt.Fprintf(w, "deleted message %s of queue %s\n", args[1], args[0])
			})
		},
	})
}
