package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/queueshq/queues/sdk/go/client"
)

// queueGroupsCmd lists a fifo queue's message groups, parked ones included (docs/fifo.md).
func (c *cli) queueGroupsCmd() *cobra.Command {
	var state string
	cmd := c.leaf(clientSpec{
		use: "groups QUEUE", short: "list a fifo queue's message groups (--state parked: those a poison policy holds)", minArgs: 1, maxArgs: 1,
		example: "  queues queue groups ledger\n  queues queue groups ledger --state parked --json", completeArgs: c.queueArg,
		run: func(ctx context.Context, _ *cobra.Command, args []string) error {
			if state != "" && state != string(client.GroupActive) && state != string(client.GroupParked) {
				return usagef("--state must be active or parked")
			}
			all := []client.Group{}
			for g, err := range c.client.AllGroupsInState(ctx, args[0], client.GroupState(state), client.Page{Limit: 1000}) {
				if err != nil {
					return err
				}
				all = append(all, g)
			}
			return c.out(all, func(w io.Writer) { printGroups(w, all) })
		},
	})
	cmd.Flags().StringVar(&state, "state", "", "only the groups in this state: active or parked")
	_ = cmd.RegisterFlagCompletionFunc("state", cobra.FixedCompletions([]cobra.Completion{"active", "parked"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func printGroups(w io.Writer, gs []client.Group) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tSTATE\tMESSAGES\tIN FLIGHT\tRECEIVE COUNT\tCONSUMER\tLAST ERROR")
	for _, g := range gs {
		last, consumer := "-", "-"
		if g.LastError != nil {
			last = *g.LastError
		}
		if g.ConsumerID != "" { // bound on an exclusive queue
			consumer = g.ConsumerID
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%v\t%d\t%s\t%s\n", g.GroupID, g.State, g.Messages, g.InFlight, g.ReceiveCount, consumer, last)
	}
	tw.Flush()
}

// queueReleaseGroupCmd ends a parked group's parking.
func (c *cli) queueReleaseGroupCmd() *cobra.Command {
	return c.leaf(clientSpec{
		use: "release-group QUEUE GROUP", short: "deliver a parked fifo group again from its head (its dead-lettered messages, moved back later, go to its end)",
		minArgs: 2, maxArgs: 2,
		example: "  queues queue release-group ledger acct-1", completeArgs: c.queueArg,
		run: func(ctx context.Context, _ *cobra.Command, args []string) error {
			if err := c.client.ReleaseGroup(ctx, args[0], args[1]); err != nil {
				return err
			}
			return c.out(map[string]string{"released": args[1]}, func(w io.Writer) {
				fmt.Fprintf(w, "released group %s of queue %s\n", args[1], args[0])
			})
		},
	})
}
