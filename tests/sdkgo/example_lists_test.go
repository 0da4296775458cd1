package sdkgo

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/queueshq/queues/sdk/go/client"
)

// Iterate over every visible message of a queue, 2 a page; break would read no further page.
func ExampleClient_BrowseAll() {
	ctx := context.Background()
	c, err := client.FromEnv()
	if err != nil {
		log.Fatal(err)
	}
	if _, err := c.CreateQueue(ctx, client.CreateQueueInput{Name: "example-browse"}); err != nil && !client.IsConflict(err) {
		log.Fatal(err)
	}
	for _, body := range []string{"a", "b", "c"} {
		if _, err := c.Send(ctx, "example-browse", client.SendMessage{Body: body}); err != nil {
			log.Fatal(err)
		}
	}
	n := 0
	for m, err := range c.BrowseAll(ctx, "example-browse", client.BrowseInput{State: client.StateVisible, Page: client.Page{Limit: 2}}) {
		if err != nil {
			log.Fatal(err)
		}
		n++
		_ = m.MessageID
	}
	fmt.Println(n, "messages")
	// Output: 3 messages
}

// A failed call's error is the typed error of its code's family, which is also the *Error.
func Example_typedErrors() {
	c, _ := client.FromEnv()
	_, err := c.GetQueue(context.Background(), "no-such-queue")
	var nf *client.NotFoundError
	var e *client.Error
	fmt.Println(errors.As(err, &nf), nf.StatusCode, errors.As(err, &e), e.Code)
	// Output: true 404 true not_found
}
