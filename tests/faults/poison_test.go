package faults

import (
	"context"
	"fmt"
	"hash/fnv"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/clock"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/engine/embeddedengine"
	"github.com/queueshq/queues/pkg/engine/redisengine"
	"github.com/queueshq/queues/pkg/ids"
)

// F36: poison messages in fifo groups (issue 36, docs/fifo.md). Producers send numbered
// messages to fifo groups; consumers process each batch in order, and a message poisoned at
// random (by a hash of its body, in its first life only) is nacked until it is dead-lettered
// (or dead-lettered at once), the rest of the batch given back unprocessed; a redriver moves
// the dead-letter queue back into the queue all along, interleaved with the sends. The
// checker: a message processed while an earlier one of its group was never processed is an
// order violation; a sent message never processed is lost. Under park and parkGroup neither
// may happen; under continue (the control run) the checker must find violations.
func TestF36PoisonOrder(t *testing.T) {
	r := startRedis(t)
	engines := map[string]func(t *testing.T) engine.Engine{
		"redis": func(t *testing.T) engine.Engine { return newEngine(t, r.addr(), clock.Real{}, redisengine.Options{}) },
		"embedded": func(t *testing.T) engine.Engine {
			e, err := embeddedengine.Open(filepath.Join(t.TempDir(), "q.db"), clock.Real{}, embeddedengine.Options{NoSync: true, Logger: quiet()})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = e.Close() })
			return e
		},
	}
	for name, open := range engines {
		for _, policy := range []engine.PoisonPolicy{engine.PoisonPark, engine.PoisonParkGroup, engine.PoisonContinue} {
			t.Run(name+"/"+string(policy), func(t *testing.T) {
				f := runPoisonLoad(t, open(t), policy)
				t.Logf("F36 %s %s: %s", name, policy, f)
				if policy == engine.PoisonContinue {
					if f.violations == 0 {
						t.Fatalf("the control run (continue) found no order violation: the checker cannot fail")
					}
					return
				}
				if f.violations > 0 || f.lost > 0 || f.poisoned == 0 || f.parkedLeft > 0 {
					t.Fatalf("F36 %s %s: %s", name, policy, f)
				}
			})
		}
	}
}

// poisonFigures is one poison run's outcome.
type poisonFigures struct {
	sent, processed, poisoned, redriven, violations, lost, duplicates, parkedLeft int
}

func (f poisonFigures) String() string {
	return fmt.Sprintf("sent %d, processed %d, poisoned %d, moved back %d, order violations %d, lost %d, processed twice %d, groups left parked %d",
		f.sent, f.processed, f.poisoned, f.redriven, f.violations, f.lost, f.duplicates, f.parkedLeft)
}

// poisonLog is the history of one run: per group, the counters processed and the next one
// due.
type poisonLog struct {
	mu         sync.Mutex
	sent       map[string]int          // group -> highest counter sent
	done       map[string]map[int]bool // group -> counters processed
	next       map[string]int          // group -> lowest counter not processed yet
	violations int
	duplicates int
	poisoned   int
}

func (l *poisonLog) process(g string, c int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done[g] == nil {
		l.done[g] = map[int]bool{}
		l.next[g] = 1
	}
	if l.done[g][c] {
		l.duplicates++
		return
	}
	if c != l.next[g] {
		l.violations++ // an earlier message of the group was never processed
	}
	l.done[g][c] = true
	for l.done[g][l.next[g]] {
		l.next[g]++
	}
}

// poisoned tells whether a delivery is of a poison message: one body in eight, in its first
// life only (a message moved back has delivery attempts beyond maxReceiveCount).
func poisoned(m engine.Received) bool {
	h := fnv.New32a()
	h.Write([]byte(m.Body))
	return h.Sum32()%8 == 0 && m.Delivery.Attempt <= 2
}

func runPoisonLoad(t *testing.T, e engine.Engine, policy engine.PoisonPolicy) poisonFigures {
	ctx := context.Background()
	dlq := engine.Queue{ID: ids.New(), Type: engine.FIFO, VisibilityTimeout: 30 * time.Second, Retention: time.Hour}
	q := engine.Queue{ID: ids.New(), Type: engine.FIFO, VisibilityTimeout: 30 * time.Second, Retention: time.Hour,
		OnDeadLetter: policy, Redrive: &engine.Redrive{DeadLetter: &dlq, MaxReceiveCount: 2}}
	for _, x := range []engine.Queue{dlq, q} {
		if err := e.CreateQueue(ctx, x); err != nil {
			t.Fatal(err)
		}
	}
	l := &poisonLog{sent: map[string]int{}, done: map[string]map[int]bool{}, next: map[string]int{}}
	groups, sends := 6, 60
	if full() {
		groups, sends = 20, 400
	}
	var stopRecv atomic.Bool
	var wg, producers sync.WaitGroup
	for p := range groups {
		producers.Add(1)
		go func() { // one producer per group: its sends are in order
			defer producers.Done()
			g := "g" + strconv.Itoa(p)
			for c := 1; c <= sends; c++ {
				n := 1 + c%3 // batches of one to three
				var msgs []engine.Message
				for j := 0; j < n && c+j <= sends; j++ {
					msgs = append(msgs, engine.Message{Body: fmt.Sprintf("%s-%d", g, c+j), GroupID: g})
				}
				if _, err := e.Send(ctx, q, msgs); err != nil {
					t.Errorf("send: %v", err)
					return
				}
				c += len(msgs) - 1
				l.mu.Lock()
				l.sent[g] = c
				l.mu.Unlock()
			}
		}()
	}
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stopRecv.Load() {
				if !poisonConsume(ctx, t, e, q, l) {
					time.Sleep(5 * time.Millisecond)
				}
			}
		}()
	}
	var moved atomic.Int64
	wg.Add(1)
	go func() { // the redriver: the dead-letter queue back into q, all along
		defer wg.Done()
		for tag := 0; !stopRecv.Load(); tag++ {
			moved.Add(int64(moveAllBack(ctx, t, e, dlq, q, "r"+strconv.Itoa(tag))))
			time.Sleep(20 * time.Millisecond)
		}
	}()
	producers.Wait()
	deadline := time.Now().Add(60 * time.Second)
	for !poisonDone(l, groups, sends) {
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	stopRecv.Store(true)
	wg.Wait()
	f := poisonFigures{redriven: int(moved.Load()), violations: l.violations, duplicates: l.duplicates, poisoned: l.poisoned}
	for g, last := range l.sent {
		f.sent += last
		for c := 1; c <= last; c++ {
			if l.done[g][c] {
				f.processed++
			} else {
				f.lost++
			}
		}
	}
	page, err := e.Groups(ctx, q, 1000, "", engine.GroupParked)
	if err != nil {
		t.Fatal(err)
	}
	f.parkedLeft = len(page.Groups)
	return f
}

func poisonDone(l *poisonLog, groups, sends int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.next) < groups {
		return false
	}
	for _, n := range l.next {
		if n <= sends {
			return false
		}
	}
	return true
}

// poisonConsume receives one batch and processes it in order, as an ordered consumer does:
// at a poison message it nacks it (gives it back at once, or dead-letters it) and gives back
// the rest of the batch unprocessed. It answers whether it received anything.
func poisonConsume(ctx context.Context, t *testing.T, e engine.Engine, q engine.Queue, l *poisonLog) bool {
	res, err := e.Receive(ctx, q, engine.ReceiveRequest{Max: 5, Visibility: 30 * time.Second})
	if err != nil {
		t.Errorf("receive: %v", err)
		return false
	}
	for i, m := range res.Messages {
		if poisoned(m) {
			l.mu.Lock()
			l.poisoned++
			l.mu.Unlock()
			var back []engine.VisibilityChange
			if m.Delivery.Attempt%2 == 0 { // half of them dead-lettered by the consumer
				_, _ = e.DeadLetter(ctx, q, []engine.DeadLetterRequest{{Delivery: m.Delivery, Reason: "poison"}})
			} else {
				back = append(back, engine.VisibilityChange{Delivery: m.Delivery})
			}
			for _, r := range res.Messages[i+1:] {
				if r.GroupID == m.GroupID {
					back = append(back, engine.VisibilityChange{Delivery: r.Delivery})
				}
			}
			_, _ = e.ChangeVisibility(ctx, q, back) // stale when they followed it (parkGroup)
			skipGroup(res.Messages[i+1:], m.GroupID)
			continue
		}
		if m.Body == "" {
			continue // given back above
		}
		g, c, _ := strings.Cut(m.Body, "-")
		n, _ := strconv.Atoi(c)
		l.process(g, n)
		if _, err := e.Ack(ctx, q, []engine.Delivery{m.Delivery}); err != nil {
			t.Errorf("ack: %v", err)
		}
	}
	return len(res.Messages) > 0
}

// skipGroup blanks the rest of a batch's messages of group g: given back, not processed.
func skipGroup(rest []engine.Received, g string) {
	for i := range rest {
		if rest[i].GroupID == g {
			rest[i].Body = ""
		}
	}
}

// moveAllBack runs a move of everything visible in from back into to, as a move task does.
func moveAllBack(ctx context.Context, t *testing.T, e engine.Engine, from, to engine.Queue, tag string) int {
	n, cursor := 0, ""
	for {
		res, err := e.MoveBatch(ctx, from, engine.MoveRequest{Tag: tag, Cursor: cursor, Limit: 3,
			Choose: func(engine.BrowsedMessage) (*engine.Queue, bool) { return &to, false }})
		if err != nil {
			t.Errorf("move: %v", err)
			return n
		}
		n += res.Moved
		if cursor = res.NextCursor; cursor == "" {
			_ = e.ForgetMoved(ctx, from, tag)
			return n
		}
	}
}
