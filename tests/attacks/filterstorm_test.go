package attacks

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestFilteredReceiveSendStorm (issue 31, cost table "filtered receive under a send storm"):
// a tenant parks many filtered long polls on a queue and then floods it with messages none of
// them selects. Before wake filtering every send woke every parked receive, each of which ran
// a filtered receive script again (up to 1,000 candidates each); now a send wakes only the
// receives whose filter could match it, so the storm costs its sends' own Redis commands and
// signals no parked receive. A matching send still reaches one of them at once.
func TestFilteredReceiveSendStorm(t *testing.T) {
	_, tok := project(t)
	call(t, "POST", "/v1/queues", tok, map[string]any{"name": "storm"}).is(t, 201, "", "")
	call(t, "POST", "/v1/queues", tok, map[string]any{"name": "storm-fence"}).is(t, 201, "", "")
	const parked, sends = 100, 50
	eng := e.replica.Engine
	before := eng.Watchers()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan string, parked+1)
	var wg sync.WaitGroup
	poll := func(queue string, body map[string]any) {
		defer wg.Done()
		data, _ := json.Marshal(body)
		req, _ := http.NewRequestWithContext(ctx, "POST", e.base+"/v1/queues/"+queue+"/receive", bytes.NewReader(data))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return // cancelled at the end
		}
		defer resp.Body.Close()
		var out struct {
			Messages []struct {
				Body string `json:"body"`
			} `json:"messages"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&out)
		for _, m := range out.Messages {
			got <- m.Body
		}
	}
	filtered := map[string]any{"waitSeconds": 20, "filter": map[string]any{"attributes": map[string]any{"color": "blue"}}}
	for range parked {
		wg.Add(1)
		go poll("storm", filtered)
	}
	wg.Add(1)
	go poll("storm-fence", map[string]any{"waitSeconds": 20})
	for eng.Watchers() < before+parked+1 {
		time.Sleep(5 * time.Millisecond) // parking has no event to await from outside
	}

	signals, commands := eng.FilteredSignals(), redisCalls(t)
	body := strings.Repeat("r", 64<<10)
	for range sends {
		call(t, "POST", "/v1/queues/storm/messages", tok, map[string]any{"messages": []any{
			map[string]any{"body": body, "attributes": map[string]any{"color": "red"}}}}).is(t, 200, "", "")
	}
	// The fence: wake-ups travel in order on one subscription, so once this send's wake-up
	// returned the fence's receive, the storm's wake-ups were all handled.
	call(t, "POST", "/v1/queues/storm-fence/messages", tok, map[string]any{"messages": []any{map[string]any{"body": "fence"}}}).is(t, 200, "", "")
	if b := next(t, got); b != "fence" {
		t.Fatalf("first answer %q, want the fence", b)
	}
	woke := eng.FilteredSignals() - signals
	perSend := float64(redisCalls(t)-commands) / float64(sends+1)
	t.Logf("%d parked filtered receives, %d non-matching sends: %d wake-ups of filtered receives, %.1f Redis commands per send",
		parked, sends, woke, perSend)
	if woke != 0 {
		t.Errorf("non-matching sends signalled parked filtered receives %d times, want 0", woke)
	}
	if perSend > 40 {
		t.Errorf("%.1f Redis commands per send during the storm, want at most 40 (the send's own)", perSend)
	}
	if n := eng.Watchers(); n < before+parked {
		t.Errorf("%d receives parked after the storm, want %d still parked", n-before, parked)
	}

	call(t, "POST", "/v1/queues/storm/messages", tok, map[string]any{"messages": []any{
		map[string]any{"body": "wanted", "attributes": map[string]any{"color": "blue"}}}}).is(t, 200, "", "")
	if b := next(t, got); b != "wanted" {
		t.Fatalf("a parked filtered receive got %q, want the matching message", b)
	}
	cancel()
	wg.Wait()
}

// next is the next message body a parked receive answered. Before wake filtering the fence
// was not answered within minutes: Redis was busy with the storm's 5,000 re-scans.
func next(t *testing.T, got <-chan string) string {
	t.Helper()
	select {
	case b := <-got:
		return b
	case <-time.After(60 * time.Second):
		t.Fatal("no parked receive answered within 60 s")
		return ""
	}
}

// redisCalls is how many commands Redis ran in all, scripts' own included (INFO
// commandstats): the replica's engine has its own client, which no hook of ours sees.
func redisCalls(t *testing.T) int64 {
	t.Helper()
	info, err := e.rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, line := range strings.Split(info, "\n") {
		_, rest, ok := strings.Cut(line, ":calls=")
		if !ok {
			continue
		}
		calls, _, _ := strings.Cut(rest, ",")
		c, _ := strconv.ParseInt(calls, 10, 64)
		n += c
	}
	return n
}
