package tenancy

import (
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queueshq/queues/pkg/clock"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/testservers"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testservers.StopAll()
	os.Exit(code)
}

func wantPark(t *testing.T, p Parking, project ids.ID, max int64, want bool) func() {
	t.Helper()
	release, ok, err := p.Park(t.Context(), project, max, 30*time.Second)
	if err != nil || ok != want {
		t.Fatalf("Park = %v, %v; want %v", ok, err, want)
	}
	return release
}

func checkParking(t *testing.T, a, b Parking) {
	p, other := ids.New(), ids.New()
	r1 := wantPark(t, a, p, 2, true)
	r2 := wantPark(t, b, p, 2, true)
	wantPark(t, a, p, 2, false)
	wantPark(t, b, p, 2, false)
	wantPark(t, a, other, 2, true) // projects are apart
	wantPark(t, a, p, 0, false)
	r1()
	r1() // a second release frees nothing more
	r3 := wantPark(t, b, p, 2, true)
	wantPark(t, a, p, 2, false)
	r2()
	r3()
	wantPark(t, a, p, 2, true)
}

func TestLocalParking(t *testing.T) {
	l := NewLocalParking()
	checkParking(t, l, l)
}

// TestRedisParking: replicas share one count; the slots of a replica that died holding them
// free themselves when their hold ends.
func TestRedisParking(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: testservers.Redis(t)})
	defer rdb.Close()
	clk := clock.NewFake(time.Date(2026, 3, 14, 15, 0, 0, 0, time.UTC))
	a, b := NewRedisParking(rdb, clk, "a"), NewRedisParking(rdb, clk, "b")
	checkParking(t, a, b)

	p := ids.New()
	wantPark(t, a, p, 1, true) // never released: its replica was killed
	wantPark(t, b, p, 1, false)
	clk.Advance(29 * time.Second)
	wantPark(t, b, p, 1, false)
	clk.Advance(2 * time.Second)
	wantPark(t, b, p, 1, true)
	if ttl := rdb.PTTL(t.Context(), waitingKey(p)).Val(); ttl <= 0 || ttl > 31*time.Second {
		t.Fatalf("the waiting key's TTL is %v", ttl)
	}
}
