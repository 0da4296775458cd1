package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/queueshq/queues/sdk/go/client"
)

// queues topic stream: the topic stream (docs/streaming.md "The topic stream") as JSON lines.

type topicStreamFlags struct {
	from   string
	delta  bool
	filter filterFlag
	max    int
}

func (c *cli) topicStreamCmd() *cobra.Command {
	var f topicStreamFlags
	cmd := c.leaf(clientSpec{
		use: "stream TOPIC", short: "follow a topic's log from a bookmark on: one JSON line per message",
		long: `Streams TOPIC's messages from --from on (now, the default; earliest, the oldest the log holds;
a sequence; or an RFC 3339 time) as they are published, one JSON line per message
({sequence, messageId, body, attributes, publishedAt, key?, deleted?, delta?}), until
interrupted or --max messages. Only messages whose attributes match every --attribute are
printed. With --delta a keyed message whose key was printed before is printed as the merge
patch from that version ("delta": true). The command reconnects by itself when the
connection drops, from the message after the last printed: to resume later, pass the last
sequence printed + 1 as --from. Entries the log trimmed before they could be delivered are
reported on stderr. Needs the messages:receive scope.`,
		example: `  queues topic stream prices
  queues topic stream prices --from 1042 --attribute region=eu
  queues topic stream prices --from earliest --delta --max 100 | jq .body`,
		minArgs: 1, maxArgs: 1, completeArgs: c.topicArg,
		run: func(ctx context.Context, _ *cobra.Command, args []string) error {
			return c.topicStream(ctx, args[0], &f)
		},
	})
	fl := cmd.Flags()
	fl.StringVar(&f.from, "from", "", "now (default), earliest, a sequence or an RFC 3339 time")
	fl.BoolVar(&f.delta, "delta", false, "keyed messages as merge patches against the key's last printed version")
	fl.StringArrayVar((*[]string)(&f.filter), "attribute", nil, filterUsage)
	fl.IntVar(&f.max, "max", 0, "stop after this many messages (0: follow until interrupted)")
	return cmd
}

func (c *cli) topicStream(ctx context.Context, topic string, f *topicStreamFlags) error {
	for _, kv := range f.filter {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return usagef("--attribute wants NAME=VALUE, not %q", kv)
		}
	}
	flt, err := f.filter.filter()
	if err != nil {
		return err
	}
	if f.max < 0 {
		return usagef("--max must be 0 or more")
	}
	printed := 0
	o := client.TopicStreamOptions{From: client.Position(f.from), Filter: flt, Delta: f.delta}
	for ev, err := range c.client.TopicStream(ctx, topic, o) {
		if err != nil {
			if ctx.Err() != nil {
				return nil // interrupted
			}
			return err
		}
		if g := ev.Gap; g != nil {
			from := "an unknown sequence (the asked time is older than the log)"
			if g.From != nil {
				from = fmt.Sprint(*g.From)
			}
			fmt.Fprintf(c.io.stderr, "queues: messages from %s to %d were trimmed from the log before they could be delivered; going on at %d\n",
				from, g.FirstSequence-1, g.FirstSequence)
			continue
		}
		b, err := json.Marshal(ev.Entry)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(c.io.stdout, "%s\n", b); err != nil {
			return err
		}
		if printed++; f.max > 0 && printed >= f.max {
			return nil
		}
	}
	return nil
}
