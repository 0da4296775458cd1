package api

import (
	"github.com/labstack/echo/v4"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/meta"
)

// Group policies of fifo queues (engine/grouppolicy.go, docs/fifo.md "Group policies"): the
// queue settings groupPolicy, groupAffinitySeconds and maxGroupsPerConsumer, a message's
// endGroup, and the consumerId an exclusive queue's receives must name.

// applyGroupPolicy validates and applies the group policy settings present in o; each exists
// on fifo queues only.
func applyGroupPolicy(o *object, q *meta.Queue) error {
	fifo := q.Type == string(engine.FIFO)
	onlyFIFO := func(name string) error {
		return apierr.Invalid(name, "%s exists only on fifo queues", name)
	}
	if v, ok, err := o.str("groupPolicy"); err != nil {
		return err
	} else if ok {
		if v != string(engine.GroupSequenced) && v != string(engine.GroupExclusive) {
			return apierr.Invalid("groupPolicy", "must be %q or %q", engine.GroupSequenced, engine.GroupExclusive)
		}
		if !fifo {
			return onlyFIFO("groupPolicy")
		}
		q.GroupPolicy = v
	}
	for _, f := range []struct {
		name   string
		lo, hi int64
		dst    *int
	}{
		{"groupAffinitySeconds", engine.MinGroupAffinitySeconds, engine.MaxGroupAffinitySeconds, &q.GroupAffinitySeconds},
		{"maxGroupsPerConsumer", 1, engine.MaxGroupsPerConsumerHi, &q.MaxGroupsPerConsumer},
	} {
		v, ok, err := o.integer(f.name, f.lo, f.hi)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		if !fifo {
			return onlyFIFO(f.name)
		}
		*f.dst = int(v)
	}
	return nil
}

// groupPolicyOut shows a fifo queue's group policy settings (defaults filled in).
func groupPolicyOut(q meta.Queue, out *queueJSON) {
	if q.Type != string(engine.FIFO) {
		return
	}
	out.GroupPolicy = ptr(q.GroupPolicyOrDefault())
	out.GroupAffinitySeconds = ptr(int(q.GroupAffinityOrDefault().Seconds()))
	out.MaxGroupsPerConsumer = ptr(q.MaxGroupsPerConsumerOrDefault())
}

// parseEndGroup reads a message's endGroup (fifo queues only).
func parseEndGroup(o *object, m *engine.Message, fifo bool) *apierr.Error {
	v, ok, err := o.boolean("endGroup")
	if err != nil || !ok || !v {
		return err
	}
	if !fifo {
		return apierr.Invalid(o.path("endGroup"), "endGroup exists only on fifo queues")
	}
	m.EndGroup = true
	return nil
}

// boundOut is a group's consumerId as the listing shows it (null: not bound).
func boundOut(id string) *string {
	if id == "" {
		return nil
	}
	return &id
}

// streamConsumer reads a receive stream's consumerId query parameter (nil when absent): an
// exclusive queue's stream must name one, before the upgrade is answered.
func streamConsumer(c echo.Context, q meta.Queue) (*engine.ConsumerOf, error) {
	id := c.QueryParam("consumerId")
	if id == "" {
		return nil, needConsumer(q, engine.ReceiveRequest{})
	}
	if !engine.ValidConsumerID(id) {
		return nil, apierr.Invalid("consumerId", "must be 1 to %d characters from '!' to '~'", engine.MaxConsumerIDLen)
	}
	return &engine.ConsumerOf{ID: id}, nil
}
