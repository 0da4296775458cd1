package fanout

import (
	"context"

	"github.com/queueshq/queues/pkg/engine"
)

// Notifying is e, whose successful publishes also tell r (Runner.Published). The composition
// roots give it to the API as its topic engine, so the replica that answers a publish takes
// an idle topic's lease at once rather than at the next poll.
func Notifying(e engine.Topics, r *Runner) engine.Topics {
	return notifying{Topics: e, r: r}
}

type notifying struct {
	engine.Topics
	r *Runner
}

// Publish publishes, and on success tells the runner (a failed publish appended nothing).
func (n notifying) Publish(ctx context.Context, t engine.Topic, msgs []engine.PublishMessage) ([]engine.PublishResult, error) {
	res, err := n.Topics.Publish(ctx, t, msgs)
	if err == nil {
		n.r.Published(t.ID)
	}
	return res, err
}
