package attacks

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/queueshq/queues/pkg/api"
	"github.com/queueshq/queues/pkg/receipt"
	"github.com/queueshq/queues/pkg/signingkeys"
	"github.com/queueshq/queues/services/queues/stack"
)

func ackHandle(t testing.TB, base, h string) answer {
	t.Helper()
	return callTo(t, base, "POST", "/v1/receipts/ack", "", map[string]any{"receiptHandle": h}, nil)
}

// X15, X16: tampered handles — one bit flipped anywhere, truncated, extended, re-encoded,
// re-signed with a key of the same id, pointed at another queue — are 400
// receipt_handle_invalid naming the field, with no Redis command sent; the message stays in
// flight and the genuine handle still works.
func TestTamperedHandles(t *testing.T) {
	_, tok := project(t)
	h := queueWithMessage(t, tok, "x15", nil)
	raw, err := base64.RawURLEncoding.DecodeString(h)
	if err != nil {
		t.Fatalf("handles are base64url: %v", err)
	}
	var forged []string
	for i := 0; i < len(raw); i++ {
		for _, bit := range []byte{0x01, 0x80} {
			b := append([]byte(nil), raw...)
			b[i] ^= bit
			forged = append(forged, base64.RawURLEncoding.EncodeToString(b))
		}
	}
	forged = append(forged, h[:len(h)-1], h[:len(h)/2], h+"A", h+"AAAA", h+"==",
		base64.StdEncoding.EncodeToString(raw), strings.ToUpper(h), "", strings.Repeat("A", 10_000), "\u0000"+h)
	// Re-signed: the same delivery, or another queue's, under a key with our key's id.
	d, err := receipt.NewSigner(e.ring).Verify(h, "receiptHandle")
	if err != nil {
		t.Fatal(err)
	}
	attacker, _ := signingkeys.Generate(e.ring.Signing().ID)
	other := d
	other.Queue[0] ^= 1
	forged = append(forged, receipt.NewSigner(attacker).Sign(d), receipt.NewSigner(attacker).Sign(other))

	before := e.commands.count()
	for i, f := range forged {
		// Single and batch form; each counts once against this source's forged-handle budget,
		// which is why the test stays below its burst (200).
		if i%2 == 0 {
			ackHandle(t, e.base, f).is(t, 400, "receipt_handle_invalid", "receiptHandle")
			continue
		}
		a := call(t, "POST", "/v1/receipts/visibility", "", map[string]any{"entries": []any{map[string]any{"receiptHandle": f, "visibilityTimeoutSeconds": 5}}})
		a.is(t, 200, "", "")
		if !strings.Contains(string(a.raw), `"code":"receipt_handle_invalid"`) || !strings.Contains(string(a.raw), `"field":"entries[0].receiptHandle"`) {
			t.Fatalf("batch entry with a forged handle: %s", a.raw)
		}
	}
	if n := e.commands.count() - before; n != 0 {
		t.Errorf("%d forged handles cost %d Redis commands; want none", len(forged), n)
	}
	t.Logf("%d forged handles: all 400, %d Redis commands", len(forged), e.commands.count()-before)
	ackHandle(t, e.base, h).is(t, 204, "", "")
}

// X17: a handle is stale after its ack, and after the message is received again; stale
// answers are 410 and change nothing.
func TestStaleHandles(t *testing.T) {
	_, tok := project(t)
	h := queueWithMessage(t, tok, "x17", nil)
	ackHandle(t, e.base, h).is(t, 204, "", "")
	ackHandle(t, e.base, h).is(t, 410, "receipt_handle_stale", "")
	old := queueWithMessage(t, tok, "x17b", nil)
	call(t, "POST", "/v1/receipts/visibility", "", map[string]any{"receiptHandle": old, "visibilityTimeoutSeconds": 0}).is(t, 204, "", "")
	r := call(t, "POST", "/v1/queues/x17b/receive", tok, map[string]any{"waitSeconds": 0})
	ms, _ := r.body["messages"].([]any)
	if len(ms) != 1 {
		t.Fatalf("redelivery: %s", r.raw)
	}
	for _, path := range []string{"/v1/receipts/ack", "/v1/receipts/dead-letter"} {
		call(t, "POST", path, "", map[string]any{"receiptHandle": old}).is(t, 410, "receipt_handle_stale", "")
	}
	call(t, "POST", "/v1/receipts/visibility", "", map[string]any{"receiptHandle": old, "visibilityTimeoutSeconds": 0}).is(t, 410, "receipt_handle_stale", "")
	if c := call(t, "GET", "/v1/queues/x17b", tok, nil).body["counts"].(map[string]any); c["inFlight"] != float64(1) {
		t.Errorf("a stale handle changed the queue: %v", c)
	}
}

// X18: visibility outside 0–43,200 s, or not an integer, is 400 naming the field.
func TestVisibilityBounds(t *testing.T) {
	_, tok := project(t)
	h := queueWithMessage(t, tok, "x18", nil)
	for _, v := range []string{"43201", "-1", "1e9", "1.5", `"60"`, "null", "99999999999999999999999"} {
		body := fmt.Sprintf(`{"receiptHandle":%q,"visibilityTimeoutSeconds":%s}`, h, v)
		call(t, "POST", "/v1/receipts/visibility", "", body).is(t, 400, "invalid_argument", "visibilityTimeoutSeconds")
	}
	ackHandle(t, e.base, h).is(t, 204, "", "")
}

// The forged-handle flood: one source sending 2,000 forged handles gets 400s up to its burst,
// then 429 rate_limited with Retry-After — costing no storage and bounded memory. Its own
// replica, so the budget it spends is not the other tests'.
func TestForgedHandleFlood(t *testing.T) {
	base, _, stop, err := e.serve(stack.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	cmds := e.commands.count()
	bad, limited := 0, 0
	batch := make([]string, 100)
	for i := range batch {
		batch[i] = fmt.Sprintf("forged-%d", i)
	}
	for range 20 {
		a := callTo(t, base, "POST", "/v1/receipts/ack", "", map[string]any{"receiptHandles": batch}, nil)
		switch a.status {
		case 200:
			bad += strings.Count(string(a.raw), "receipt_handle_invalid")
		case 429:
			a.is(t, 429, "rate_limited", "")
			if a.header.Get("Retry-After") == "" {
				t.Fatal("429 without Retry-After")
			}
			limited++
		default:
			t.Fatalf("flood answer %d: %s", a.status, a.raw)
		}
	}
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	t.Logf("2,000 forged handles in 20 batches: %d answered invalid, %d batches refused 429; %d Redis commands; heap %+d KiB",
		bad, limited, e.commands.count()-cmds, (int64(after.HeapAlloc)-int64(before.HeapAlloc))>>10)
	if bad > 300 || limited < 15 {
		t.Fatalf("%d forged handles checked, %d batches limited; want at most the burst (200, plus one batch) checked", bad, limited)
	}
	// A genuine handle from another source would still work; from this one it waits: the
	// limit is per source, and valid handles never charge it (TestTamperedHandles acks one).
}

// Issue 31: one address's forgeries do not switch off settlements from that address (behind a
// load balancer every client shares it). After 700 forged handles from 127.0.0.1 the source
// is over its budget: its forgeries are refused 429, but a valid handle from the same
// address is served, alone or in a batch beside forgeries. Its own replica, so the budget it
// spends is not the other tests'.
func TestForgedFloodSparesValidHandles(t *testing.T) {
	base, _, stop, err := e.serve(stack.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	_, tok := project(t)
	h1 := queueWithMessage(t, tok, "i31-flood-a", nil)
	h2 := queueWithMessage(t, tok, "i31-flood-b", nil)
	batch := make([]string, 100)
	for i := range batch {
		batch[i] = fmt.Sprintf("forged-%d", i)
	}
	limited := 0
	for range 7 {
		if a := callTo(t, base, "POST", "/v1/receipts/ack", "", map[string]any{"receiptHandles": batch}, nil); a.status == 429 {
			limited++
		}
	}
	a := ackHandle(t, base, "forged-single")
	a.is(t, 429, "rate_limited", "")
	if limited == 0 {
		t.Fatal("700 forged handles never reached the source's budget")
	}
	// The valid handle from the same address, single form: served.
	ackHandle(t, base, h1).is(t, 204, "", "")
	// And in a batch beside forgeries: the valid entry is served, the forgery refused.
	b := callTo(t, base, "POST", "/v1/receipts/ack", "", map[string]any{"receiptHandles": []string{h2, "forged-x"}}, nil)
	b.is(t, 200, "", "")
	if !strings.Contains(string(b.raw), `{"index":0}`) || !strings.Contains(string(b.raw), `"code":"rate_limited"`) {
		t.Fatalf("mixed batch over budget: %s", b.raw)
	}
	ackHandle(t, base, h2).is(t, 410, "receipt_handle_stale", "")
	t.Logf("700 forged handles from one address (%d batches refused 429): the valid single ack 204, the valid batch entry acked", limited)
}

// Issue 31, behind a load balancer: with QUEUES_TRUSTED_PROXIES naming the proxy (here the
// loopback peer every request comes from), each client's forged-handle budget is its own
// X-Forwarded-For address. One client floods forgeries — writing the other's address into the
// left of its X-Forwarded-For, as any client can — and is refused 429; the other client, behind
// the same peer, has its valid ack served and its own forgery answered 400, not 429.
func TestTrustedProxyForwardedFor(t *testing.T) {
	trusted, err := api.ParseTrustedProxies("127.0.0.0/8")
	if err != nil {
		t.Fatal(err)
	}
	base, _, stop, err := e.serve(stack.Options{TrustedProxies: trusted})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	_, tok := project(t)
	h := queueWithMessage(t, tok, "i31-xff", nil)
	via := func(xff string) http.Header { return http.Header{"X-Forwarded-For": {xff}} }
	forger, honest := via("203.0.113.20, 203.0.113.10"), via("203.0.113.20")
	batch := make([]string, 100)
	for i := range batch {
		batch[i] = fmt.Sprintf("forged-%d", i)
	}
	for range 7 {
		callTo(t, base, "POST", "/v1/receipts/ack", "", map[string]any{"receiptHandles": batch}, forger)
	}
	callTo(t, base, "POST", "/v1/receipts/ack", "", map[string]any{"receiptHandle": "forged"}, forger).is(t, 429, "rate_limited", "")
	callTo(t, base, "POST", "/v1/receipts/ack", "", map[string]any{"receiptHandle": "forged"}, honest).is(t, 400, "receipt_handle_invalid", "receiptHandle")
	callTo(t, base, "POST", "/v1/receipts/ack", "", map[string]any{"receiptHandle": h}, honest).is(t, 204, "", "")
	// Without the proxy trusted, X-Forwarded-For is the caller's own text and chooses nothing:
	// the shared replica's budget for 127.0.0.1 is untouched by this test's forgeries.
}

// Issue 31: a stale handle — well-formed, signed, no longer current — needs no credential, so
// anyone who once saw it may present it again and again. The first time costs its storage
// check; after that the replica remembers it stale: no Redis command, none of the owning
// project's budget, and each presentation charged to the source's forged-handle budget (410,
// then 429). Its own replica, so the budget it spends is not the other tests'.
func TestStaleHandleStorm(t *testing.T) {
	base, _, stop, err := e.serve(stack.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	_, tok := project(t)
	h := queueWithMessage(t, tok, "i31-stale", nil)
	ackHandle(t, base, h).is(t, 204, "", "")
	const storm = 600
	before := serverCommands(t)
	gone, limited := 0, 0
	for range storm {
		a := ackHandle(t, base, h)
		switch {
		case a.status == 410 && a.code() == "receipt_handle_stale":
			gone++
		case a.status == 429 && a.code() == "rate_limited":
			limited++
		default:
			t.Fatalf("stale handle: %d %s", a.status, a.raw)
		}
	}
	cmds := serverCommands(t) - before - 1 // the first INFO
	t.Logf("%d presentations of one stale handle: %d answered 410, %d refused 429; %d Redis commands", storm, gone, limited, cmds)
	if cmds > 20 {
		t.Fatalf("%d presentations of a stale handle cost %d Redis commands; want the first check only", storm, cmds)
	}
	if limited == 0 {
		t.Fatal("stale handles were not charged to the source's budget")
	}
}

// serverCommands is how many commands the Redis server has run (INFO commandstats): what a
// call costs there, whichever client of the replica sent it.
func serverCommands(t testing.TB) int64 {
	t.Helper()
	info, err := e.rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, line := range strings.Split(info, "\n") {
		if _, rest, ok := strings.Cut(line, ":calls="); ok && strings.HasPrefix(line, "cmdstat_") {
			c, _, _ := strings.Cut(rest, ",")
			v, err := strconv.ParseInt(c, 10, 64)
			if err != nil {
				t.Fatalf("commandstats line %q", line)
			}
			n += v
		}
	}
	return n
}
