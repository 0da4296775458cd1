package sdkgo

// The examples run against the real service TestMain starts (an API replica on Redis and
// DynamoDB Local), found through QUEUES_URL and QUEUES_TOKEN like any program using FromEnv.
// ExampleNewPushReceiver plays the pusher itself (signing with Sign) against an httptest
// server, because a real push needs the pusher fleet.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/queueshq/queues/sdk/go/client"
)

// Send a message, receive it and acknowledge it.
func Example() {
	ctx := context.Background()
	c, err := client.FromEnv() // QUEUES_URL and QUEUES_TOKEN
	if err != nil {
		log.Fatal(err)
	}
	if _, err := c.CreateQueue(ctx, client.CreateQueueInput{Name: "example-orders"}); err != nil && !client.IsConflict(err) {
		log.Fatal(err)
	}
	if _, err := c.Send(ctx, "example-orders", client.SendMessage{Body: "order 42"}); err != nil {
		log.Fatal(err)
	}
	msgs, err := c.Receive(ctx, "example-orders", client.ReceiveInput{MaxMessages: 10, WaitSeconds: client.Int(5)})
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range msgs {
		fmt.Println(m.Body, "received", m.ReceiveCount, "time(s)")
		if err := c.Ack(ctx, m.ReceiptHandle); err != nil {
			log.Fatal(err)
		}
	}
	// Output: order 42 received 1 time(s)
}

// A consumer: the handler's result settles each message (nil acknowledges, an error
// retries); it stops when the context ends.
func Example_consume() {
	c, _ := client.FromEnv()
	ctx, stop := context.WithCancel(context.Background())
	if _, err := c.CreateQueue(ctx, client.CreateQueueInput{Name: "example-jobs"}); err != nil && !client.IsConflict(err) {
		log.Fatal(err)
	}
	for _, b := range []string{"resize a.png", "resize b.png", "resize c.png"} {
		if _, err := c.Send(ctx, "example-jobs", client.SendMessage{Body: b}); err != nil {
			log.Fatal(err)
		}
	}

	var mu sync.Mutex
	var done []string
	err := c.Consume(ctx, "example-jobs", func(ctx context.Context, m *client.Message) error {
		mu.Lock()
		defer mu.Unlock()
		done = append(done, m.Body)
		if len(done) == 3 {
			stop() // a real consumer runs until it is told to stop
		}
		return nil
	}, client.ConsumeOptions{Concurrency: 32})
	if err != nil {
		log.Fatal(err)
	}
	slices.Sort(done)
	fmt.Println(strings.Join(done, "\n"))
	// Output:
	// resize a.png
	// resize b.png
	// resize c.png
}

// Settle with the vocabulary of docs/clients.md: Ack, Retry, RetryAfter and DeadLetter.
func Example_retryAfter() {
	handler := func(ctx context.Context, m *client.Message) error {
		switch {
		case m.Body == "":
			return client.DeadLetter("empty order") // no point retrying
		case m.Attributes["kind"] == "later":
			return client.RetryAfter(time.Minute) // visible again in a minute
		case m.ReceiveCount > 3:
			return client.Retry() // visible again now
		}
		return client.Ack() // the same as nil
	}
	o := client.OutcomeOf(handler(context.Background(), &client.Message{Body: "x", Attributes: map[string]string{"kind": "later"}}))
	fmt.Println(o.Kind, o.Delay)
	// Output: retry 1m0s
}

// A push endpoint: it verifies the signature, runs the handler per message and answers each
// message's outcome. Here the example signs a push itself, as the pusher would.
func Example_pushReceiver() {
	secret := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" // from CreateSubscription or RotateSecret
	receiver := client.NewPushReceiver(func(ctx context.Context, m *client.Message) error {
		if m.Body == "bad" {
			return client.DeadLetter("unparseable")
		}
		return nil
	}, secret)
	srv := httptest.NewServer(receiver) // in production: http.Handle("/queues", receiver)
	defer srv.Close()

	body := `{"subscription":"qsb_069tbd0000000000000000000","queue":{"id":"0193a5b3-1a2b-7c3d-8e4f-5a6b7c8d9e0f","name":"orders"},` +
		`"messages":[{"messageId":"m1","body":"good","receiptHandle":"h1"},{"messageId":"m2","body":"bad","receiptHandle":"h2"}]}`
	now := time.Now()
	sig, _ := client.Sign(secret, "att_1", now, []byte(body))
	req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
	req.Header.Set(client.HeaderWebhookID, "att_1")
	req.Header.Set(client.HeaderWebhookTimestamp, fmt.Sprint(now.Unix()))
	req.Header.Set(client.HeaderWebhookSignature, sig)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	fmt.Print(resp.StatusCode, " ", string(answer))
	// Output: 200 {"results":[{"messageId":"m1","outcome":"ack"},{"messageId":"m2","outcome":"dead-letter","reason":"unparseable"}]}
}

// Errors carry the API's code, message, field and status.
func Example_error() {
	c, _ := client.FromEnv()
	_, err := c.CreateQueue(context.Background(), client.CreateQueueInput{Name: "no spaces allowed"})
	var e *client.Error
	if errors.As(err, &e) {
		fmt.Println(e.StatusCode, e.Code, e.Field)
	}
	// Output: 400 invalid_argument name
}

func Example_isNotFound() {
	c, _ := client.FromEnv()
	_, err := c.GetQueue(context.Background(), "no-such-queue")
	fmt.Println(client.IsNotFound(err), errors.Is(err, client.ErrNotFound))
	// Output: true true
}
