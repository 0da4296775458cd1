package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

// PhasePublish publishes Count messages to a topic bound to Bindings queues while consumers
// drain every bound queue, then measures publish → delivery one message at a time (below
// capacity): see publish.
const PhasePublish = "publish"

// MaxBindings bounds Config.Bindings (a topic's bindings, docs/topics.md).
const MaxBindings = 100

func topicPath(name string) string { return "/v1/topics/" + url.PathEscape(name) }

func (c *client) createTopic(ctx context.Context, name, typ string) error {
	body, _ := json.Marshal(map[string]any{"name": name, "type": typ})
	return c.do(ctx, http.MethodPost, "/v1/topics", body, true, nil)
}

func (c *client) bind(ctx context.Context, queue, topic string) error {
	body, _ := json.Marshal(map[string]any{"topic": topic})
	return c.do(ctx, http.MethodPost, queuePath(queue)+"/sources", body, true, nil)
}

func (c *client) deleteTopic(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodDelete, topicPath(name), nil, true, nil)
}

// newTopic creates the phase's topic and its bound queues.
func (r *runner) newTopic(ctx context.Context, i int) (string, []string, error) {
	topic := fmt.Sprintf("%s-%s-%d-%s", r.cfg.Prefix, r.run, i, PhasePublish)
	if r.cfg.QueueType == "fifo" {
		topic += ".fifo"
	}
	if err := r.c.createTopic(ctx, topic, r.cfg.QueueType); err != nil {
		return "", nil, fmt.Errorf("creating topic %s: %w", topic, err)
	}
	r.topics = append(r.topics, topic)
	queues := make([]string, r.cfg.Bindings)
	for j := range queues {
		q, err := r.newQueue(ctx, fmt.Sprintf("%s-b%d", PhasePublish, j), i)
		if err != nil {
			return "", nil, err
		}
		if err := r.c.bind(ctx, q, topic); err != nil {
			return "", nil, fmt.Errorf("binding %s to %s: %w", q, topic, err)
		}
		queues[j] = q
	}
	return topic, queues, nil
}

// publish measures a topic's fan-out: producers publish Count messages while each bound
// queue has its own consumers; MsgsPerSec is the publish rate (published over the
// producers' time), CopiesPerSec the copies delivered over the time to the last one, and
// EndToEnd publish → delivery at that load. Receivable is publish → delivery of Wakeups
// messages published one at a time, each awaited in every bound queue: the latency below
// capacity. Lost and Duplicates count copies, per bound queue, summed.
func (r *runner) publish(ctx context.Context, i int) (*PhaseReport, error) {
	topic, queues, err := r.newTopic(ctx, i)
	if err != nil {
		return nil, err
	}
	pub, sts, elapsed, copiesEnd, err := r.publishLoad(ctx, topic, queues)
	if err != nil {
		return nil, err
	}
	complete := pub.sent.Load() == int64(r.cfg.Count)
	pr := pub.report(PhasePublish, topic, pub.sent.Load(), elapsed, complete, r.c.throttled.get())
	pr.Bindings = len(queues)
	mergeCopies(pr, sts, copiesEnd, r.cfg.Count)
	wake, err := r.publishWakeups(ctx, topic, queues)
	if err != nil {
		return nil, fmt.Errorf("one at a time: %w", err)
	}
	pr.Receivable = wake
	return pr, nil
}

// publishLoad runs the producers and the bound queues' consumers; it returns the producers'
// stats, each queue's, the publishing time and the time to the last copy delivered.
func (r *runner) publishLoad(ctx context.Context, topic string, queues []string) (*stats, []*stats, time.Duration, time.Duration, error) {
	pub := newStats(r.cfg.Count)
	sts := make([]*stats, len(queues))
	np, nc := r.cfg.workers(PhasePublish)
	pctx, g, cancel := r.phaseCtx(ctx)
	defer cancel()
	start := time.Now()
	stop := r.progress(PhasePublish, pub, start)
	defer stop()
	var end atomic.Int64
	left := atomic.Int64{}
	left.Store(int64(len(queues)))
	cctx, stopConsumers := context.WithCancel(pctx)
	defer stopConsumers()
	for j, q := range queues {
		sts[j] = newStats(r.cfg.Count)
		var once sync.Once
		r.rawConsumers(cctx, g, sts[j], q, max(nc/len(queues), 1), r.cfg.Count, func() {
			once.Do(func() {
				if left.Add(-1) == 0 {
					end.CompareAndSwap(0, int64(time.Since(start)))
					stopConsumers()
				}
			})
		})
	}
	gp := &group{cancel: cancel}
	r.producersTo(pctx, gp, pub, topicPath(topic)+"/messages", np, r.cfg.Count)
	gp.wg.Wait()
	elapsed := time.Since(start)
	g.wg.Wait()
	if gp.err != nil {
		return nil, nil, 0, 0, gp.err
	}
	if g.err != nil {
		return nil, nil, 0, 0, g.err
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, 0, 0, err
	}
	copiesEnd := time.Duration(end.Load())
	if copiesEnd == 0 {
		copiesEnd = time.Since(start)
	}
	return pub, sts, elapsed, copiesEnd, nil
}

// mergeCopies adds the bound queues' deliveries to pr: copies, their rate, duplicates and
// losses, the consumers' requests and the publish → delivery latency.
func mergeCopies(pr *PhaseReport, sts []*stats, copiesEnd time.Duration, count int) {
	all := newStats(0)
	lost := int64(0)
	for _, st := range sts {
		pr.Copies += st.delivered.Load()
		pr.Received += st.received.Load()
		pr.Acked += st.acked.Load()
		pr.Duplicates += st.dups.Load()
		pr.Requests += st.requests.Load()
		lost += int64(count) - st.delivered.Load()
		all.e2e.Merge(st.e2e)
		all.all.Merge(st.all)
		for k, h := range st.routes {
			if all.routes[k] == nil {
				all.routes[k] = newHist()
			}
			all.routes[k].Merge(h)
		}
	}
	if pr.Complete && lost == 0 {
		pr.Lost = 0
	} else if pr.Complete {
		pr.Lost = lost
	}
	if copiesEnd > 0 {
		pr.CopiesPerSec = float64(pr.Copies) / copiesEnd.Seconds()
	}
	if all.e2e.TotalCount() > 0 {
		l := summary(all.e2e)
		pr.EndToEnd = &l
	}
	for k, h := range all.routes {
		if h.TotalCount() > 0 { // the consumers' receive and ack; the publishes are pr's own
			pr.ByRoute[k] = summary(h)
		}
	}
}

// publishWakeups publishes Wakeups messages one at a time, each once the previous one was
// delivered from every bound queue, with one consumer long-polling each queue; it returns
// publish → delivery over every copy.
func (r *runner) publishWakeups(ctx context.Context, topic string, queues []string) (*Latency, error) {
	n := r.cfg.Wakeups
	pctx, g, cancel := r.phaseCtx(ctx)
	defer cancel()
	got := make(chan int, len(queues)*4)
	sts := make([]*stats, len(queues))
	for j, q := range queues {
		sts[j] = newStats(n)
		cs := &consumer{r: r}
		st := sts[j]
		g.go_(pctx, func(ctx context.Context) error {
			for st.delivered.Load() < int64(n) && ctx.Err() == nil {
				k, err := cs.once(ctx, st, q, 1, 20, routeWait)
				if err != nil {
					return err
				}
				if k > 0 {
					select {
					case got <- k:
					case <-ctx.Done():
					}
				}
			}
			return nil
		})
	}
	pub := newStats(n)
	s := r.newSender(0)
	for k := range n {
		if err := s.sendTo(pctx, pub, topicPath(topic)+"/messages", int64(k), 1); err != nil {
			cancel()
			g.wg.Wait()
			return nil, err
		}
		for left := len(queues); left > 0; {
			select {
			case d := <-got:
				left -= d
			case <-pctx.Done():
				g.wg.Wait()
				if g.err != nil {
					return nil, g.err
				}
				return nil, fmt.Errorf("message %d of %d not delivered everywhere within %s", k+1, n, r.cfg.Duration)
			}
		}
	}
	cancel()
	g.wg.Wait()
	h := newHist()
	for _, st := range sts {
		h.Merge(st.e2e)
	}
	l := summary(h)
	return &l, nil
}
