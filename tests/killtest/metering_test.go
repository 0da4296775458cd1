package killtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queueshq/queues/tests/internal/crashtest"
)

// Metering crash test parameters. With this many projects a flush is as many conditional
// DynamoDB updates, so a flush takes a good part of the period and the kill, at a random
// moment of the load, usually lands in one.
const (
	meterProjects = 12
	meterEvery    = 250 * time.Millisecond
	meterLoadMin  = 1500 * time.Millisecond
	meterLoadMax  = 3 * time.Second
)

type meterTenant struct {
	project, token string
	mu             sync.Mutex
	answered       []time.Time // when each acknowledged send's answer arrived
}

// TestKillAPIMidFlushMetering kills `queues api` with SIGKILL under a send load on many
// projects while its usage meter flushes every 250 ms, restarts it, and compares each
// project's metered messagesSent with the sends answered 200: never more (no count applied
// twice, none counted that the client was not told), and short by at most the sends answered
// in the last two flush periods before the kill (the interval not flushed yet and the flush in
// progress, whose updates the kill may cut).
func TestKillAPIMidFlushMetering(t *testing.T) {
	if testing.Short() {
		t.Skip("starts redis-server, DynamoDB Local and the queues binary, and runs load")
	}
	st := newStack(t)
	st.env = append(st.env, "QUEUES_USAGE_FLUSH_EVERY="+meterEvery.String())
	hc := crashtest.NewHTTPClient(t)
	p1, _ := crashtest.Start(t, hc, st, st.dir, "meter1")
	ctx := t.Context()
	tenants := make([]*meterTenant, meterProjects)
	for i := range tenants {
		tenants[i] = newMeterTenant(t, hc, st, p1.URL, i)
	}

	loadCtx, stopLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, tn := range tenants {
		wg.Add(1)
		go func() { defer wg.Done(); tn.load(loadCtx, hc, p1.URL) }()
	}
	time.Sleep(meterLoadMin + rand.N(meterLoadMax-meterLoadMin)) // the load runs until the kill, at a random moment
	killedAt := time.Now()
	p1.Kill()
	stopLoad()
	wg.Wait()

	p2, _ := crashtest.Start(t, hc, st, st.dir, "meter2")
	var answered, metered, window, maxShort int
	for _, tn := range tenants {
		got := tn.metered(t, hc, st, p2.URL)
		a, w := tn.counts(killedAt.Add(-2 * meterEvery))
		answered, metered, window = answered+a, metered+got, window+w
		maxShort = max(maxShort, a-got)
		if got > a {
			t.Errorf("project %s: metered %d messagesSent, more than the %d sends answered", tn.project, got, a)
		}
		if a-got > w {
			t.Errorf("project %s: metered %d messagesSent of %d answered: short by %d, more than the %d answered in the last two flush periods",
				tn.project, got, a, a-got, w)
		}
	}
	if answered < 500 {
		t.Fatalf("only %d sends answered before the kill: the load did not run\n%s", answered, crashtest.TailOf(p1.Log))
	}
	t.Logf("figures: %d projects, flush every %v; sends answered %d, metered %d, short by %d (the most in one project %d); answered in the last two flush periods before the kill %d",
		meterProjects, meterEvery, answered, metered, answered-metered, maxShort, window)
}

func newMeterTenant(t *testing.T, hc *http.Client, st *stack, url string, i int) *meterTenant {
	t.Helper()
	ctx := t.Context()
	var proj struct{ ID string }
	if _, err := crashtest.Call(ctx, hc, http.MethodPost, url+"/v1/projects", st.operatorToken(), map[string]any{"name": fmt.Sprintf("meter-%d", i)}, &proj); err != nil {
		t.Fatal(err)
	}
	var tok struct{ Token string }
	if _, err := crashtest.Call(ctx, hc, http.MethodPost, url+"/v1/projects/"+proj.ID+"/tokens", st.operatorToken(),
		map[string]any{"name": "meter", "scopes": []string{"*"}}, &tok); err != nil {
		t.Fatal(err)
	}
	if _, err := crashtest.Call(ctx, hc, http.MethodPost, url+"/v1/queues", tok.Token, map[string]any{"name": "q"}, &struct{}{}); err != nil {
		t.Fatal(err)
	}
	return &meterTenant{project: proj.ID, token: tok.Token}
}

// load sends batches of 5 until ctx ends (or the server is gone), recording each message an
// answer acknowledged.
func (tn *meterTenant) load(ctx context.Context, hc *http.Client, url string) {
	msgs := make([]map[string]any, 5)
	for i := range msgs {
		msgs[i] = map[string]any{"body": strings.Repeat("m", 100)}
	}
	for ctx.Err() == nil {
		var ans struct {
			Messages []struct{ MessageID string } `json:"messages"`
		}
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		status, err := crashtest.Call(rctx, hc, http.MethodPost, url+"/v1/queues/q/messages", tn.token, map[string]any{"messages": msgs}, &ans)
		cancel()
		if err != nil || status != http.StatusOK {
			if ctx.Err() == nil {
				time.Sleep(5 * time.Millisecond) // the kill: the next call fails too until ctx ends
			}
			continue
		}
		now := time.Now()
		tn.mu.Lock()
		for range ans.Messages {
			tn.answered = append(tn.answered, now)
		}
		tn.mu.Unlock()
	}
}

// counts is how many sends were answered, and how many of them after since.
func (tn *meterTenant) counts(since time.Time) (all, after int) {
	tn.mu.Lock()
	defer tn.mu.Unlock()
	for _, at := range tn.answered {
		if at.After(since) {
			after++
		}
	}
	return len(tn.answered), after
}

// metered sums the project's messagesSent over the last day, as the operator reads it.
func (tn *meterTenant) metered(t *testing.T, hc *http.Client, st *stack, url string) int {
	t.Helper()
	var u struct {
		Usage []struct{ MessagesSent int } `json:"usage"`
	}
	if _, err := crashtest.Call(t.Context(), hc, http.MethodGet, url+"/v1/projects/"+tn.project+"/usage", st.operatorToken(), nil, &u); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, h := range u.Usage {
		n += h.MessagesSent
	}
	return n
}
