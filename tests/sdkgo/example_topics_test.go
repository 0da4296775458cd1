package sdkgo

import (
	"context"
	"fmt"
	"log"
	"slices"

	"github.com/queueshq/queues/sdk/go/client"
)

// Publish once to a topic; each bound queue receives the messages its filter selects, with
// the published message id. The log keeps what was published, to be read from a sequence.
func Example_publish() {
	ctx := context.Background()
	c, err := client.FromEnv()
	if err != nil {
		log.Fatal(err)
	}
	if _, err := c.CreateTopic(ctx, client.CreateTopicInput{Name: "example-prices"}); err != nil {
		log.Fatal(err)
	}
	for _, q := range []string{"example-eu-prices", "example-all-prices"} {
		if _, err := c.CreateQueue(ctx, client.CreateQueueInput{Name: q}); err != nil {
			log.Fatal(err)
		}
	}
	if _, err := c.Bind(ctx, "example-eu-prices", client.BindInput{Topic: "example-prices", Filter: client.Attr("region", "eu")}); err != nil {
		log.Fatal(err)
	}
	if _, err := c.Bind(ctx, "example-all-prices", client.BindInput{Topic: "example-prices"}); err != nil {
		log.Fatal(err)
	}
	first, err := c.Publish(ctx, "example-prices", client.PublishMessage{Body: "eu 101.5", Attributes: map[string]string{"region": "eu"}})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := c.Publish(ctx, "example-prices", client.PublishMessage{Body: "us 99.0", Attributes: map[string]string{"region": "us"}}); err != nil {
		log.Fatal(err)
	}
	for _, q := range []string{"example-eu-prices", "example-all-prices"} {
		var bodies []string
		for len(bodies) < map[string]int{"example-eu-prices": 1, "example-all-prices": 2}[q] {
			// The fan-out copies a publish at once; a long-polling receive waits for it.
			msgs, err := c.Receive(ctx, q, client.ReceiveInput{MaxMessages: 10, WaitSeconds: client.Int(5)})
			if err != nil {
				log.Fatal(err)
			}
			for _, m := range msgs {
				bodies = append(bodies, m.Body)
				if m.Body == "eu 101.5" && m.MessageID != first.MessageID {
					log.Fatalf("a copy with another id: %s", m.MessageID)
				}
			}
		}
		slices.Sort(bodies)
		fmt.Println(q, bodies)
	}
	for e, err := range c.LogEntries(ctx, "example-prices", client.ReadLogInput{From: client.AtSequence(first.Sequence)}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(e.Sequence, e.Body)
	}
	// Output:
	// example-eu-prices [eu 101.5]
	// example-all-prices [eu 101.5 us 99.0]
	// 1 eu 101.5
	// 2 us 99.0
}
