package killtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/queueshq/queues/pkg/testservers"
	"github.com/queueshq/queues/tests/internal/crashtest"
)

// Metering crash test parameters. With this many projects a flush is as many conditional
// DynamoDB updates (a few at a time); the test kills when it sees a flush half applied.
const (
	meterProjects = 12
	meterEvery    = 250 * time.Millisecond
	// meterLoadMin is how many sends must be answered before the kill may come (a run with
	// fewer says nothing); meterLoadWait bounds the wait for them on a busy machine, and the
	// kill comes at most meterLoadMax after them.
	meterLoadMin  = 1000
	meterLoadWait = 2 * time.Minute
	meterLoadMax  = 1500 * time.Millisecond
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
// after the project's last flush took its snapshot (bounded by the readings the test took,
// see unflushedSince — a bound by the clock failed on a busy machine, where a flush takes
// longer than its period). The kill comes when the
// test sees the projects' hour items at different flush sequences (a flush half applied), and
// the items read after the kill tell whether it did cut one; a run whose kill fell between
// flushes is repeated on new projects, up to four runs.
func TestKillAPIMidFlushMetering(t *testing.T) {
	if testing.Short() {
		t.Skip("starts redis-server, DynamoDB Local and the queues binary, and runs load")
	}
	st := newStack(t)
	st.env = append(st.env, "QUEUES_USAGE_FLUSH_EVERY="+meterEvery.String())
	hc := crashtest.NewHTTPClient(t)
	ddb, err := testservers.DynamoClient(t.Context(), testservers.DynamoDB(t))
	if err != nil {
		t.Fatal(err)
	}
	p1, _ := crashtest.Start(t, hc, st, st.dir, "meter0")
	// The kill lands at a random moment; a run whose kill fell between two flushes is run
	// again (on new projects), a few times at most, so that the kill cuts a flush.
	for attempt := 1; ; attempt++ {
		var mid bool
		p1, mid = meterRun(t, hc, ddb, st, p1, attempt)
		if mid || attempt == 4 || t.Failed() {
			return
		}
	}
}

// meterRun is one load and kill on p1, checked on its restart, which it returns; mid is
// whether the kill cut a flush (the projects' hour items hold different flush sequences).
func meterRun(t *testing.T, hc *http.Client, ddb *dynamodb.Client, st *stack, p1 *crashtest.Proc, attempt int) (*crashtest.Proc, bool) {
	t.Helper()
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
	seen := watchFlush(t, ddb, st, tenants)
	p1.Kill()
	stopLoad()
	wg.Wait()

	seqs := flushSeqs(t, ddb, st, tenants)
	p2, _ := crashtest.Start(t, hc, st, st.dir, fmt.Sprintf("meter%d", attempt))
	var answered, metered, window, maxShort int
	for i, tn := range tenants {
		got := tn.metered(t, hc, st, p2.URL)
		a, w := tn.counts(seen.unflushedSince(seqs[i]))
		answered, metered, window = answered+a, metered+got, window+w
		maxShort = max(maxShort, a-got)
		if got > a {
			t.Errorf("project %s: metered %d messagesSent, more than the %d sends answered", tn.project, got, a)
		}
		if a-got > w {
			t.Errorf("project %s: metered %d messagesSent of %d answered: short by %d, more than the %d answered after its last flush began",
				tn.project, got, a, a-got, w)
		}
	}
	if answered < 500 {
		t.Fatalf("only %d sends answered before the kill: the load did not run\n%s", answered, crashtest.TailOf(p1.Log))
	}
	lo, hi := slices.Min(seqs), slices.Max(seqs)
	t.Logf("run %d figures: %d projects, flush every %v; sends answered %d, metered %d, short by %d (the most in one project %d); answered after each project's last flush began %d; "+
		"flush sequences in the hour items at the kill %d–%d (mid-flush: %v)",
		attempt, meterProjects, meterEvery, answered, metered, answered-metered, maxShort, window, lo, hi, lo != hi)
	return p2, lo != hi
}

// flushObs is one reading of the tenants' flush sequences: the lowest and highest, and when
// the reading began.
type flushObs struct {
	at       time.Time
	min, max int64
}

// flushHistory is every reading watchFlush took before the kill, oldest first.
type flushHistory []flushObs

// unflushedSince bounds when the last flush that reached a project (sequence s) took its
// snapshot: the flush before it (s-1) had written no item when a reading began that saw
// every sequence at s-2 or below, so it had not finished then, and flush s started after it
// finished. Sends answered after that reading are the most a crash may lose (the zero time
// when no such reading exists: all of them).
func (h flushHistory) unflushedSince(s int64) time.Time {
	var since time.Time
	for _, o := range h {
		if o.max <= s-2 {
			since = o.at
		}
	}
	return since
}

// watchFlush reads the tenants' flush sequences over and over from the start of the load and
// returns the readings when the kill should come: once meterLoadMin sends have been answered,
// as soon as a reading sees different sequences (a flush half applied), or at a random moment
// within meterLoadMax after that.
func watchFlush(t *testing.T, ddb *dynamodb.Client, st *stack, tenants []*meterTenant) flushHistory {
	t.Helper()
	var h flushHistory
	giveUp := time.Now().Add(meterLoadWait)
	var until time.Time // set once the load has run long enough
	for {
		at := time.Now()
		seqs := flushSeqs(t, ddb, st, tenants)
		o := flushObs{at: at, min: slices.Min(seqs), max: slices.Max(seqs)}
		h = append(h, o)
		if until.IsZero() {
			if answeredAll(tenants) >= meterLoadMin {
				until = time.Now().Add(rand.N(meterLoadMax))
			} else if at.After(giveUp) {
				t.Fatalf("only %d sends answered in %v: the load did not run", answeredAll(tenants), meterLoadWait)
			}
			continue
		}
		if o.min != o.max || at.After(until) || t.Failed() {
			return h
		}
	}
}

// answeredAll is how many sends the tenants have had answered together.
func answeredAll(tenants []*meterTenant) int {
	total := 0
	for _, tn := range tenants {
		a, _ := tn.counts(time.Time{})
		total += a
	}
	return total
}

// flushSeqs reads, for each tenant, the highest flush sequence its hour items record (the
// killed replica's f_<replica> attribute; the tenants are new, so no other replica wrote them).
func flushSeqs(t *testing.T, ddb *dynamodb.Client, st *stack, tenants []*meterTenant) []int64 {
	t.Helper()
	table := ""
	for _, kv := range st.env {
		if v, ok := strings.CutPrefix(kv, "QUEUES_DYNAMODB_TABLE="); ok {
			table = v
		}
	}
	out := make([]int64, len(tenants))
	var wg sync.WaitGroup
	for i, tn := range tenants {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = flushSeq(t, ddb, table, tn)
		}()
	}
	wg.Wait()
	return out
}

func flushSeq(t *testing.T, ddb *dynamodb.Client, table string, tn *meterTenant) int64 {
	{
		res, err := ddb.Query(t.Context(), &dynamodb.QueryInput{
			TableName: aws.String(table), ConsistentRead: aws.Bool(true),
			KeyConditionExpression: aws.String("pk = :pk AND begins_with(sk, :u)"),
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":pk": &types.AttributeValueMemberS{Value: "P#" + tn.project}, ":u": &types.AttributeValueMemberS{Value: "U#"},
			},
		})
		if err != nil {
			t.Error(err)
			return 0
		}
		var best int64
		for _, item := range res.Items {
			for name, v := range item {
				if n, ok := v.(*types.AttributeValueMemberN); ok && strings.HasPrefix(name, "f_") {
					if x, err := strconv.ParseInt(n.Value, 10, 64); err == nil {
						best = max(best, x)
					}
				}
			}
		}
		return best
	}
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
