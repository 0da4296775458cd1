package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/queueshq/queues/sdk/go/client"
)

// filterFlag is the repeatable --filter NAME=VALUE of receive, tail and browse
// (docs/delivery-options.md#filtered-receive-and-browse): every name given must match, and a name
// given twice lists values any of which matches.
type filterFlag []string

const filterUsage = "only messages with attribute NAME=VALUE (repeatable: every name must match; a name given twice matches either value)"

// filter is the flags' filter (nil when none was given).
func (f filterFlag) filter() (*client.Filter, error) {
	if len(f) == 0 {
		return nil, nil
	}
	out := &client.Filter{}
	for _, kv := range f {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usagef("--filter wants NAME=VALUE, not %q", kv)
		}
		out.And(k, v)
	}
	return out, nil
}

// browseFlags are the flags of browse.
type browseFlags struct {
	state  string
	limit  int
	filter filterFlag
}

func (c *cli) browseCmd() *cobra.Command {
	var f browseFlags
	cmd := c.leaf(clientSpec{
		use: "browse QUEUE", short: "list messages without receiving them",
		long: `Lists the messages of one state (visible, inFlight or delayed) without leasing them: nothing
is received, counted or acknowledged. With --filter only messages whose attributes match.`,
		example: `  queues browse orders
  queues browse orders --state inFlight --limit 10
  queues browse orders --filter region=eu --filter kind=invoice --filter kind=refund --json`,
		minArgs: 1, maxArgs: 1, completeArgs: c.queueArg,
		run: func(ctx context.Context, _ *cobra.Command, args []string) error { return c.browse(ctx, args[0], &f) },
	})
	fl := cmd.Flags()
	fl.StringVar(&f.state, "state", "visible", "visible, inFlight or delayed")
	fl.IntVar(&f.limit, "limit", 100, "at most this many messages (0: all)")
	fl.StringArrayVar((*[]string)(&f.filter), "filter", nil, filterUsage)
	return cmd
}

func (c *cli) browse(ctx context.Context, queue string, f *browseFlags) error {
	flt, err := f.filter.filter()
	if err != nil {
		return err
	}
	if f.limit < 0 {
		return usagef("--limit must be 0 or more")
	}
	var all []client.BrowsedMessage
	in := client.BrowseInput{State: client.MessageState(f.state), Filter: flt}
	for {
		in.Limit = 100
		if f.limit > 0 {
			in.Limit = min(100, f.limit-len(all))
		}
		page, err := c.client.Browse(ctx, queue, in)
		if err != nil {
			return err
		}
		all = append(all, page.Messages...)
		if page.NextCursor == nil || (f.limit > 0 && len(all) >= f.limit) {
			break
		}
		in.Cursor = *page.NextCursor
	}
	if all == nil {
		all = []client.BrowsedMessage{}
	}
	return c.out(all, func(w io.Writer) {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "MESSAGE ID\tRECEIVES\tSENT\tATTRIBUTES\tBODY")
		for _, m := range all {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", m.MessageID, m.ReceiveCount, m.SentAt.Format("2006-01-02T15:04:05Z07:00"),
				attrText(m.Attributes), oneLine(m.Body))
		}
		tw.Flush()
	})
}

// attrText is a message's attributes as name=value pairs in name order.
func attrText(attrs map[string]string) string {
	var parts []string
	for k, v := range attrs {
		parts = append(parts, k+"="+v)
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

// oneLine keeps a body to one table cell: line breaks escaped, at most 60 characters.
func oneLine(s string) string {
	s = strings.NewReplacer("\n", `\n`, "\r", `\r`, "\t", `\t`).Replace(s)
	if r := []rune(s); len(r) > 60 {
		return string(r[:59]) + "…"
	}
	return s
}
