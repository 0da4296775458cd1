package faults

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The soak's growth figures: one API replica and one pusher replica — the witnesses, last in
// their lists — are spared by every fault (stack.spared), so they live through the whole
// soak, and Redis with them. A watch samples their resident memory and goroutines (and
// Redis's used_memory and key count) idle before the load, every minute under it and idle
// after the drain: a leak shows as growth from one idle sample to the other, or as a rising
// series under a steady load.

// usage is one sample of a process.
type usage struct {
	at         time.Duration // since the soak started
	rss        int64         // bytes; -1 unreadable
	goroutines int           // -1 unreadable
}

func (u usage) String() string {
	return fmt.Sprintf("RSS %.1f MB, %d goroutines", float64(u.rss)/(1<<20), u.goroutines)
}

// rssOf is a process's resident set (VmRSS), in bytes; -1 when it cannot be read.
func rssOf(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return -1
}

// redisUsage is one sample of Redis: used_memory (bytes) and the number of keys.
type redisUsage struct {
	at         time.Duration
	used, keys int64
}

func (u redisUsage) String() string {
	return fmt.Sprintf("used_memory %.1f MB, %d keys", float64(u.used)/(1<<20), u.keys)
}

type watch struct {
	start  time.Time
	s      *stack
	procs  []*proc // the witnesses
	mu     sync.Mutex
	series map[string][]usage
	redis  []redisUsage
	stop   chan struct{}
	done   chan struct{}
}

func newWatch(s *stack, start time.Time) *watch {
	return &watch{start: start, s: s, procs: []*proc{s.apis[len(s.apis)-1], s.pushers[len(s.pushers)-1]},
		series: map[string][]usage{}, stop: make(chan struct{}), done: make(chan struct{})}
}

func (w *watch) sampleProc(p *proc) usage {
	return usage{at: time.Since(w.start), rss: rssOf(p.cmd.Process.Pid), goroutines: int(metric(p, "go_goroutines"))}
}

func (w *watch) sampleRedis() redisUsage {
	u := redisUsage{at: time.Since(w.start), used: -1, keys: -1}
	if info, err := w.s.redis.do("INFO", "memory"); err == nil {
		for _, line := range strings.Split(fmt.Sprint(info), "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
				u.used, _ = strconv.ParseInt(v, 10, 64)
			}
		}
	}
	if n, err := w.s.redis.do("DBSIZE"); err == nil {
		u.keys, _ = n.(int64)
	}
	return u
}

// idle samples the witnesses and Redis with no load running (before it, after the drain).
func (w *watch) idle() (map[string]usage, redisUsage) {
	out := map[string]usage{}
	for _, p := range w.procs {
		out[p.name] = w.sampleProc(p)
	}
	return out, w.sampleRedis()
}

// run samples every minute under the load until stopped, 15 s off the soak's clock so that
// a sample does not land on a fault (they come every 30 s from the start by default).
func (w *watch) run(t *testing.T) {
	go func() {
		defer close(w.done)
		next := time.NewTimer(time.Minute + 15*time.Second)
		defer next.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-next.C:
				next.Reset(time.Minute)
			}
			var parts []string
			w.mu.Lock()
			for _, p := range w.procs {
				u := w.sampleProc(p)
				w.series[p.name] = append(w.series[p.name], u)
				parts = append(parts, p.name+" "+u.String())
			}
			r := w.sampleRedis()
			w.redis = append(w.redis, r)
			w.mu.Unlock()
			t.Logf("%6.0fs witnesses: %s; redis %s", r.at.Seconds(), strings.Join(parts, "; "), r)
		}
	}()
}

func (w *watch) halt() { close(w.stop); <-w.done }

// idPart matches what varies from one key to another of a family: ids, numbers, partitions.
var idPart = regexp.MustCompile(`[0-9a-fA-F-]{8,}|:\d+`)

// keyFamilies counts Redis's keys by family (ids and numbers replaced by *), the biggest
// first: what is left after the drain, so a family that grows with the load shows.
func (w *watch) keyFamilies(top int) string {
	rdb := newClient(w.s.redis.addr())
	defer rdb.Close()
	counts := map[string]int{}
	iter := rdb.Scan(context.Background(), 0, "*", 1000).Iterator()
	for iter.Next(context.Background()) {
		counts[idPart.ReplaceAllString(iter.Val(), "*")]++
	}
	fams := make([]string, 0, len(counts))
	for k := range counts {
		fams = append(fams, k)
	}
	sort.Slice(fams, func(i, j int) bool {
		return counts[fams[i]] > counts[fams[j]] || counts[fams[i]] == counts[fams[j]] && fams[i] < fams[j]
	})
	var parts []string
	for _, k := range fams[:min(top, len(fams))] {
		parts = append(parts, fmt.Sprintf("%s %d", k, counts[k]))
	}
	return strings.Join(parts, ", ")
}

// awaitQuiet waits (up to 20 s) until the witnesses' goroutines are back within 10 of
// before: the drain's connections closed, its requests ended. It returns the sample either way.
func (w *watch) awaitQuiet(before map[string]usage) (map[string]usage, redisUsage) {
	w.s.hc.CloseIdleConnections()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		after, r := w.idle()
		quiet := true
		for name, u := range after {
			quiet = quiet && u.goroutines <= before[name].goroutines+10
		}
		if quiet || time.Now().After(deadline) {
			return after, r
		}
	}
}

// growth is the report's block on the witnesses: idle before → idle after, and the series
// under load from its second sample (after warm-up) to its last.
func (w *watch) growth(before, after map[string]usage, rb, ra redisUsage) string {
	var b strings.Builder
	b.WriteString("  growth of the witnesses (spared by every fault; sampled idle, then every minute under load):\n")
	for _, p := range w.procs {
		ser := w.series[p.name]
		fmt.Fprintf(&b, "    %-10s idle before: %s; idle after the drain: %s", p.name, before[p.name], after[p.name])
		if len(ser) >= 3 {
			first, last := ser[1], ser[len(ser)-1]
			maxRSS := first.rss
			for _, u := range ser[1:] {
				maxRSS = max(maxRSS, u.rss)
			}
			fmt.Fprintf(&b, "; under load, minute %d → %d: %s → %s (RSS max %.1f MB)",
				int(first.at.Minutes()), int(last.at.Minutes()), first, last, float64(maxRSS)/(1<<20))
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "    %-10s before the load: %s; after the drain: %s (by family: %s)", "redis", rb, ra, w.keyFamilies(12))
	if len(w.redis) >= 3 {
		maxUsed := int64(0)
		for _, u := range w.redis {
			maxUsed = max(maxUsed, u.used)
		}
		fmt.Fprintf(&b, "; max under load %.1f MB", float64(maxUsed)/(1<<20))
	}
	b.WriteString("\n")
	return b.String()
}
