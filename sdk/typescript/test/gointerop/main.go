// Command gointerop is the Go side of the TypeScript SDK's interoperability test: the node
// tests run it to send, consume and verify with the Go SDK (sdk/go/client) against the same
// server. It reads QUEUES_URL and QUEUES_TOKEN and prints JSON on stdout.
//
//	gointerop send QUEUE BODY...          send each body; prints the message ids
//	gointerop consume QUEUE N             consume N messages (a body starting "dead:" is
//	                                      dead-lettered with reason "go", others acked);
//	                                      prints them
//	gointerop verify SECRET ID TS SIG     verify a push whose body is stdin; exit 1 if not
//	gointerop drain QUEUE N CONCURRENCY   time Consume draining N messages with a no-op
//	                                      handler; prints messages per second
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queueshq/queues/sdk/go/client"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "gointerop:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: gointerop send, consume or verify")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	switch {
	case args[0] == "send" && len(args) >= 3:
		return send(ctx, args[1], args[2:])
	case args[0] == "consume" && len(args) == 3:
		n, err := strconv.Atoi(args[2])
		if err != nil {
			return err
		}
		return consume(ctx, args[1], n)
	case args[0] == "verify" && len(args) == 5:
		return verify(args[1:])
	case args[0] == "drain" && len(args) == 4:
		n, err1 := strconv.Atoi(args[2])
		conc, err2 := strconv.Atoi(args[3])
		if err1 != nil || err2 != nil {
			return fmt.Errorf("drain QUEUE N CONCURRENCY: want numbers")
		}
		return drain(ctx, args[1], n, conc)
	}
	return fmt.Errorf("bad arguments %q", args)
}

func send(ctx context.Context, queue string, bodies []string) error {
	c, err := client.FromEnv()
	if err != nil {
		return err
	}
	var ids []string
	for _, b := range bodies {
		m, err := c.Send(ctx, queue, client.SendMessage{Body: b, Attributes: map[string]string{"from": "go"}})
		if err != nil {
			return err
		}
		ids = append(ids, m.MessageID)
	}
	return json.NewEncoder(os.Stdout).Encode(ids)
}

type seen struct {
	MessageID    string            `json:"messageId"`
	Body         string            `json:"body"`
	Attributes   map[string]string `json:"attributes"`
	ReceiveCount int               `json:"receiveCount"`
}

func consume(ctx context.Context, queue string, n int) error {
	c, err := client.FromEnv()
	if err != nil {
		return err
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	var mu sync.Mutex
	var got []seen
	err = c.Consume(ctx, queue, func(_ context.Context, m *client.Message) error {
		mu.Lock()
		got = append(got, seen{m.MessageID, m.Body, m.Attributes, m.ReceiveCount})
		if len(got) >= n {
			stop()
		}
		mu.Unlock()
		if strings.HasPrefix(m.Body, "dead:") {
			return client.DeadLetter("go")
		}
		return nil
	}, client.ConsumeOptions{Concurrency: 4, WaitSeconds: 1})
	if err != nil {
		return err
	}
	if len(got) < n {
		return fmt.Errorf("consumed %d of %d messages before the deadline", len(got), n)
	}
	return json.NewEncoder(os.Stdout).Encode(got)
}

func drain(ctx context.Context, queue string, n, concurrency int) error {
	c, err := client.FromEnv()
	if err != nil {
		return err
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	var handled atomic.Int64
	var elapsed time.Duration
	start := time.Now()
	err = c.Consume(ctx, queue, func(context.Context, *client.Message) error {
		if handled.Add(1) == int64(n) {
			elapsed = time.Since(start)
			stop()
		}
		return nil
	}, client.ConsumeOptions{Concurrency: concurrency, WaitSeconds: 1})
	if err != nil {
		return err
	}
	if handled.Load() < int64(n) {
		return fmt.Errorf("drained %d of %d messages before the deadline", handled.Load(), n)
	}
	_, err = fmt.Println(float64(n) / elapsed.Seconds())
	return err
}

func verify(args []string) error {
	body, err := io.ReadAll(os.Stdin)
	if err != nil {
		return err
	}
	h := http.Header{}
	h.Set(client.HeaderWebhookID, args[1])
	h.Set(client.HeaderWebhookTimestamp, args[2])
	h.Set(client.HeaderWebhookSignature, args[3])
	return client.Verify([]string{args[0]}, h, body, time.Now(), 0)
}
