package enginetest

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
)

// testConflateConcurrent races patch sends of one key against receives
// (docs/lifecycle.md#conflation-and-delta-publish: a message received while a merge arrives is
// merged before the hand-out or not at all).
//
// Each writer sends its updates 1..updates in turn, update u as the patch
// {"u<w>.<u>": true, "w<w>": u}. Every delivered body must then hold, for each writer, a run
// of consecutive updates (every update is delivered exactly once, in one message, none half), with "w<w>" its last (the
// merge applied them in order); and a send answered merged must have been merged into the
// message that was still waiting under that id.
func testConflateConcurrent(t *testing.T, s *suite) {
	const writers, updates, receivers = 4, 60, 2
	q := s.queue()
	type sent struct {
		id     ids.ID
		merged bool
	}
	answers := make([][]sent, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for u := 1; u <= updates; u++ {
				body := fmt.Sprintf(`{"u%d.%d":true,"w%d":%d}`, w, u, w, u)
				res, err := s.e.Send(s.ctx, q, []engine.Message{{Body: body, Key: "K", Merge: engine.MergePatch}})
				if err != nil || res[0].Err != nil {
					t.Errorf("writer %d update %d: %v %+v", w, u, err, res)
					return
				}
				answers[w] = append(answers[w], sent{res[0].MessageID, res[0].Merged})
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	var mu sync.Mutex
	var got []engine.Received
	var rwg sync.WaitGroup
	for range receivers {
		rwg.Add(1)
		go func() {
			defer rwg.Done()
			for {
				finished := false
				select {
				case <-done:
					finished = true
				default:
				}
				res, err := s.e.Receive(s.ctx, q, engine.ReceiveRequest{Max: engine.MaxBatch, Visibility: time.Hour})
				if err != nil {
					t.Errorf("receive: %v", err)
					return
				}
				mu.Lock()
				got = append(got, res.Messages...)
				mu.Unlock()
				if len(res.Messages) > 0 {
					ds := make([]engine.Delivery, len(res.Messages))
					for i, m := range res.Messages {
						ds[i] = m.Delivery
					}
					if _, err := s.e.Ack(s.ctx, q, ds); err != nil {
						t.Errorf("ack: %v", err)
						return
					}
				}
				if finished && len(res.Messages) == 0 {
					return
				}
			}
		}()
	}
	rwg.Wait()
	if t.Failed() {
		return
	}
	// Which message holds each update, and each message's run per writer.
	holder := map[string]ids.ID{}
	for _, m := range got {
		var body map[string]any
		if err := json.Unmarshal([]byte(m.Body), &body); err != nil {
			t.Fatalf("body %q: %v", m.Body, err)
		}
		per := map[int][]int{}
		for k := range body {
			if !strings.HasPrefix(k, "u") {
				continue
			}
			wu := strings.SplitN(k[1:], ".", 2)
			w, _ := strconv.Atoi(wu[0])
			u, _ := strconv.Atoi(wu[1])
			if prev, dup := holder[k]; dup {
				t.Fatalf("update %s delivered twice (messages %s and %s)", k, prev, m.MessageID)
			}
			holder[k] = m.MessageID
			per[w] = append(per[w], u)
		}
		for w, us := range per {
			slices.Sort(us)
			for i := range us {
				if us[i] != us[0]+i {
					t.Fatalf("message %s holds writer %d's updates %v: not consecutive", m.MessageID, w, us)
				}
			}
			last := us[len(us)-1]
			if v, _ := body["w"+strconv.Itoa(w)].(float64); int(v) != last {
				t.Fatalf("message %s: w%d = %v, want %d (its last update: merged out of order)", m.MessageID, w, v, last)
			}
		}
	}
	merged := 0
	created := map[ids.ID]int{}
	for w := range writers {
		for u := 1; u <= updates; u++ {
			k := fmt.Sprintf("u%d.%d", w, u)
			id, ok := holder[k]
			if !ok {
				t.Fatalf("update %s never delivered", k)
			}
			a := answers[w][u-1]
			if a.id != id {
				t.Fatalf("update %s was answered %s (merged %v) but delivered in %s", k, a.id, a.merged, id)
			}
			if a.merged {
				merged++
			} else {
				created[id]++
			}
		}
	}
	for _, m := range got {
		if created[m.MessageID] != 1 {
			t.Fatalf("message %s: %d of its sends answered not merged, want exactly the one that stored it", m.MessageID, created[m.MessageID])
		}
	}
	t.Logf("conflation race: %d writers x %d patch sends, %d receivers: %d messages delivered, %d sends merged, every update delivered once, in order",
		writers, updates, receivers, len(got), merged)
}
