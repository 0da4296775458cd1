package pusher

import (
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
)

// UsageCounter counts a project's use (the tenancy meter).
type UsageCounter interface {
	Add(project ids.ID, c meta.Counters)
}

// meter counts one push attempt of batch to the subscription's project: the attempt, the
// messages delivered and their payload bytes (body and attributes, as the size limit counts).
func (p *Pusher) meter(project ids.ID, batch []engine.Received) {
	if p.cfg.Usage == nil {
		return
	}
	c := meta.Counters{PushAttempts: 1, MessagesDelivered: int64(len(batch))}
	for _, m := range batch {
		c.BytesOut += engine.PayloadBytes(m.Body, m.Attributes)
	}
	p.cfg.Usage.Add(project, c)
}
