package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/service"
)

// Consumers and fairness (docs/delivery-options.md#consumers-backlogs-and-fairness). A receive may
// name consumerId and maxBacklog; the engine keeps the consumer's holdings (engine/consumers.go),
// and its receipt handles carry the consumer's tag so that every settlement through /v1/receipts
// (or the SQS door) tells the engine which holdings to change (heldSettled). The queue setting
// fairness decides between long polls parked on the queue at the same moment (fairness.go).

// Fairness settings (service.FairnessFast, …).
const (
	FairnessFast         = service.FairnessFast
	FairnessRoundRobin   = service.FairnessRoundRobin
	FairnessProportional = service.FairnessProportional
)

// fairnessOf is the queue's fairness as answered ("fast" when never set).
func fairnessOf(q meta.Queue) string { return service.FairnessOf(q) }

// applyFairness takes the fairness setting from o when present.
func applyFairness(o *object, q *meta.Queue) error {
	v, ok, err := o.str("fairness")
	if err != nil {
		return err
	}
	if !ok {
		return nil
	}
	switch v {
	case FairnessFast, FairnessRoundRobin, FairnessProportional:
		q.Fairness = v
		return nil
	}
	return apierr.Invalid("fairness", "must be %q, %q or %q", FairnessFast, FairnessRoundRobin, FairnessProportional)
}

// consumerOf reads a receive's consumerId and maxBacklog (nil when it names no consumer). A
// maxBacklog without a consumerId has nobody to bound: 400 naming maxBacklog.
func consumerOf(o *object) (*engine.ConsumerOf, error) {
	id, hasID, err := o.str("consumerId")
	if err != nil {
		return nil, err
	}
	bound, hasBound, err := o.integer("maxBacklog", 1, engine.MaxBacklogHi)
	if err != nil {
		return nil, err
	}
	switch {
	case hasID && !engine.ValidConsumerID(id):
		return nil, apierr.Invalid("consumerId", "must be 1 to %d characters from '!' to '~'", engine.MaxConsumerIDLen)
	case hasBound && !hasID:
		return nil, apierr.Invalid("maxBacklog", "needs a consumerId: the backlog bound is that consumer's")
	case !hasID:
		return nil, nil
	}
	return &engine.ConsumerOf{ID: id, MaxBacklog: int(bound)}, nil
}

func deliveriesOf(rs []engine.DeadLetterRequest) []engine.Delivery {
	ds := make([]engine.Delivery, len(rs))
	for i, r := range rs {
		ds[i] = r.Delivery
	}
	return ds
}

type consumerJSON struct {
	ConsumerID string `json:"consumerId"`
	InFlight   int    `json:"inFlight"`
	MaxBacklog *int   `json:"maxBacklog"`
	LastSeenAt string `json:"lastSeenAt"`
}

// listConsumers answers GET /v1/queues/{queue}/consumers: the consumers seen in the last
// five minutes, in consumerId order.
func (s *Server) listConsumers(c echo.Context) error {
	_, eq, err := s.target(c)
	if err != nil {
		return err
	}
	page, err := pageParams(c, 100, engine.MaxConsumersPage)
	if err != nil {
		return err
	}
	ctx, cancel := s.storageCtx(c)
	defer cancel()
	res, err := s.cfg.Engine.ListConsumers(ctx, eq, page.Limit, page.Cursor)
	if err != nil {
		return err
	}
	out := make([]consumerJSON, len(res.Consumers))
	for i, st := range res.Consumers {
		out[i] = consumerJSON{ConsumerID: st.ID, InFlight: st.InFlight, LastSeenAt: formatTime(st.LastSeen)}
		if st.MaxBacklog > 0 {
			b := st.MaxBacklog
			out[i].MaxBacklog = &b
		}
	}
	return c.JSON(http.StatusOK, map[string]any{"consumers": out, "nextCursor": cursorOut(res.NextCursor)})
}
