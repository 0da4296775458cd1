package pusher_test

import (
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/meta"
)

// BenchmarkPushThroughput measures messages pushed and acknowledged per second to a local
// httptest endpoint answering 204 (maxInFlight 10, batches of 10 and 100): a backlog of b.N
// messages drains. Then it measures the send → endpoint latency of 200 messages sent one at a
// time to the idle subscription (p50, p99):
//
//	go test ./pusher -run '^$' -bench PushThroughput -benchtime 20000x
func BenchmarkPushThroughput(b *testing.B) {
	for _, batch := range []int{10, 100} {
		b.Run(fmt.Sprint("batch", batch), func(b *testing.B) { benchPush(b, batch) })
	}
}

func benchPush(b *testing.B, batch int) {
	e := newEnv(b)
	var mu sync.Mutex
	pushedN := 0
	total := b.N
	drained := make(chan struct{})
	arrived := make(chan time.Time, 16)
	ep := newEndpoint(b, false, func(w http.ResponseWriter, p pushed) {
		now := time.Now()
		mu.Lock()
		before := pushedN
		pushedN += len(p.body.Messages)
		if before < total && pushedN >= total {
			close(drained)
		}
		mu.Unlock()
		if before >= total {
			arrived <- now
		}
		w.WriteHeader(204)
	})
	go func() {
		for range ep.got {
		}
	}()
	q := e.queue("standard", nil)
	sub := e.subscribe(q, ep.URL, func(s *meta.Subscription) { s.BatchSize = batch; s.Paused = true })
	p := e.pusher(nil)
	e.applied(q, func(meta.Subscription) bool { return true })
	go func() { // no more waiting on events: keep the pusher from blocking on a full channel
		for range e.events {
		}
	}()
	msgs := make([]engine.Message, total)
	for i := range msgs {
		msgs[i] = engine.Message{Body: "m"}
	}
	e.sendMsgs(q, msgs)
	b.ResetTimer()
	start := time.Now()
	e.update(p, sub, func(s *meta.Subscription) { s.Paused = false })
	<-drained
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(total)/elapsed.Seconds(), "msgs/s")
	lat := make([]time.Duration, 0, 200)
	for range 200 {
		at := time.Now()
		e.send(q, "latency")
		lat = append(lat, (<-arrived).Sub(at))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}
