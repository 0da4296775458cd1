package stacktest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/queueshq/queues/sdk/go/client"
)

// StreamSemantics checks the receive stream (docs/streaming.md) through c, a client with an
// every-scope token of a fresh project, against whichever engine serves it: deliveries only
// against credit, acks, visibility changes and dead-letter moves over the stream with the
// semantics of the receipt routes (receiveCount, redrive), fifo groups one batch at a time,
// a bad frame's error, and a deleted queue ending the stream with not_found. The API tier
// (sdk/go/client's tests, Redis) and serve (services/queues/embedded's, the embedded engine) both run it.
func StreamSemantics(t *testing.T, c *client.Client) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	dlq := must(c.CreateQueue(ctx, client.CreateQueueInput{Name: "stream-dlq"}))(t)
	q := must(c.CreateQueue(ctx, client.CreateQueueInput{Name: "stream", Redrive: &client.Redrive{DeadLetterQueue: dlq.ID, MaxReceiveCount: 5}}))(t)
	send(t, c, q.ID, "", "a", "b", "c")

	s := must(c.Stream(ctx, q.ID, client.StreamOptions{MaxMessages: 10, VisibilityTimeoutSeconds: client.Int(30)}))(t)
	defer s.Close()
	// Credit 2: two messages come, and no third until more credit.
	if err := s.Credit(ctx, 2); err != nil {
		t.Fatal(err)
	}
	got := next(ctx, t, s, 2)
	for _, m := range got {
		if m.ReceiveCount != 1 {
			t.Fatalf("first delivery with receiveCount %d", m.ReceiveCount)
		}
	}
	quiet, stop := context.WithTimeout(ctx, 300*time.Millisecond)
	if extra, err := s.Next(quiet); err == nil {
		t.Fatalf("delivered %d messages beyond the credit", len(extra))
	}
	stop()

	// Ack the first over the stream; a second ack of it is stale, in its own result.
	res, err := s.Ack(ctx, []string{got[0].ReceiptHandle})
	if err != nil || res[0] != nil {
		t.Fatalf("ack over the stream: %v %v", res, err)
	}
	if res, err := s.Ack(ctx, []string{got[0].ReceiptHandle}); err != nil || !errors.Is(res[0], client.ErrStale) {
		t.Fatalf("second ack: %v %v, want a stale result", res, err)
	}
	// Release the second (visibility 0): with credit it comes again, receiveCount 2.
	if res, err := s.ChangeVisibility(ctx, []client.VisibilityEntry{{ReceiptHandle: got[1].ReceiptHandle}}); err != nil || res[0] != nil {
		t.Fatalf("release over the stream: %v %v", res, err)
	}
	if err := s.Credit(ctx, 2); err != nil {
		t.Fatal(err)
	}
	again := next(ctx, t, s, 2)
	var released *client.Message
	for i := range again {
		if again[i].MessageID == got[1].MessageID {
			released = &again[i]
		}
	}
	if released == nil || released.ReceiveCount != 2 {
		t.Fatalf("the released message came back as %+v, want receiveCount 2", released)
	}
	// Dead-letter it over the stream: it moves to the dead-letter queue with the reason.
	if res, err := s.DeadLetter(ctx, []client.DeadLetterEntry{{ReceiptHandle: released.ReceiptHandle, Reason: "stream test"}}); err != nil || res[0] != nil {
		t.Fatalf("dead-letter over the stream: %v %v", res, err)
	}
	moved := must(c.Receive(ctx, dlq.ID, client.ReceiveInput{MaxMessages: 10, WaitSeconds: client.Int(0)}))(t)
	if len(moved) != 1 || moved[0].MessageID != released.MessageID || moved[0].DeadLetter == nil || moved[0].DeadLetter.Reason != "stream test" {
		t.Fatalf("dead-letter queue holds %+v", moved)
	}

	// A waiting stream gets a message sent after it started waiting.
	if err := s.Credit(ctx, 1); err != nil {
		t.Fatal(err)
	}
	send(t, c, q.ID, "", "late")
	if late := next(ctx, t, s, 1); late[0].Body != "late" {
		t.Fatalf("waiting stream got %q", late[0].Body)
	}

	// Deleting the queue ends the stream with not_found.
	if err := c.DeleteQueue(ctx, q.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.Credit(ctx, 1); err != nil && !errors.Is(err, client.ErrNotFound) {
		t.Fatal(err)
	}
	for {
		if _, err := s.Next(ctx); err != nil {
			if !errors.Is(err, client.ErrNotFound) {
				t.Fatalf("stream of a deleted queue ended with %v, want not_found", err)
			}
			break
		}
	}

	streamFIFO(ctx, t, c)
	streamBadFrame(ctx, t, c)
}

// streamFIFO: a fifo group's next batch is not delivered while one of it is in flight, even
// with credit; other groups' are.
func streamFIFO(ctx context.Context, t *testing.T, c *client.Client) {
	q := must(c.CreateQueue(ctx, client.CreateQueueInput{Name: "stream.fifo", Type: client.FIFO}))(t)
	send(t, c, q.ID, "g1", "1a", "1b")
	send(t, c, q.ID, "g2", "2a")
	s := must(c.Stream(ctx, q.ID, client.StreamOptions{MaxMessages: 1, VisibilityTimeoutSeconds: client.Int(30)}))(t)
	defer s.Close()
	if err := s.Credit(ctx, 3); err != nil {
		t.Fatal(err)
	}
	var bodies []string
	for range 2 {
		bodies = append(bodies, next(ctx, t, s, 1)[0].Body)
	}
	slices.Sort(bodies)
	if !slices.Equal(bodies, []string{"1a", "2a"}) {
		t.Fatalf("fifo stream delivered %v first, want one of each group (1a, 2a)", bodies)
	}
	quiet, stop := context.WithTimeout(ctx, 300*time.Millisecond)
	defer stop()
	if extra, err := s.Next(quiet); err == nil {
		t.Fatalf("delivered %q while its group was in flight", extra[0].Body)
	}
}

// streamBadFrame: a malformed settlement is answered with a stream error naming the field.
func streamBadFrame(ctx context.Context, t *testing.T, c *client.Client) {
	q := must(c.CreateQueue(ctx, client.CreateQueueInput{Name: "stream-bad"}))(t)
	s := must(c.Stream(ctx, q.ID, client.StreamOptions{}))(t)
	defer s.Close()
	if err := s.Credit(ctx, 5000); err != nil {
		t.Fatal(err)
	}
	_, err := s.Next(ctx)
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Code != client.CodeInvalidArgument || ce.Field != "credit" {
		t.Fatalf("credit of 5000 ended the stream with %v, want invalid_argument on credit", err)
	}
}

func send(t *testing.T, c *client.Client, queue, group string, bodies ...string) {
	t.Helper()
	msgs := make([]client.SendMessage, len(bodies))
	for i, b := range bodies {
		msgs[i] = client.SendMessage{Body: b, GroupID: group}
	}
	r, err := c.SendBatch(t.Context(), queue, msgs)
	if err != nil || len(r.Failed) > 0 {
		t.Fatalf("send: %+v %v", r, err)
	}
}

// next reads batches until n messages came.
func next(ctx context.Context, t *testing.T, s *client.Stream, n int) []client.Message {
	t.Helper()
	var out []client.Message
	for len(out) < n {
		ms, err := s.Next(ctx)
		if err != nil {
			t.Fatalf("after %d of %d messages: %v", len(out), n, err)
		}
		out = append(out, ms...)
	}
	if len(out) > n {
		t.Fatalf("got %d messages, want %d", len(out), n)
	}
	return out
}

func must[T any](v T, err error) func(t *testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatal(fmt.Errorf("%T: %w", v, err))
		}
		return v
	}
}
