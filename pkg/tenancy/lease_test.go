package tenancy

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queueshq/queues/pkg/clock"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/testservers"
)

// leasedPair is two replicas' leased parkings on one Redis, a third poll-by-poll one, and a
// fake clock. Their idle trims never fire on their own: the tests call trim.
func leasedPair(t *testing.T) (a, b *LeasedParking, exact *RedisParking, rdb *redis.Client, clk *clock.Fake) {
	rdb = redis.NewClient(&redis.Options{Addr: testservers.Redis(t)})
	t.Cleanup(func() { rdb.Close() })
	clk = clock.NewFake(time.Date(2026, 3, 14, 15, 0, 0, 0, time.UTC))
	a, b = NewLeasedParking(rdb, clk, "a"), NewLeasedParking(rdb, clk, "b")
	a.IdleReturn, b.IdleReturn = time.Hour, time.Hour
	return a, b, NewRedisParking(rdb, clk, "c"), rdb, clk
}

func trimNow(t *testing.T, p *LeasedParking, project ids.ID) {
	t.Helper()
	p.mu.Lock()
	l := p.leases[project]
	p.mu.Unlock()
	if l == nil {
		t.Fatal("no lease to trim")
	}
	p.trim(l)
}

// TestLeasedParkingSmallLimits: under 128 a lease would be one slot, so the leased parking
// parks poll by poll and behaves exactly as RedisParking.
func TestLeasedParkingSmallLimits(t *testing.T) {
	a, b, _, _, _ := leasedPair(t)
	checkParking(t, a, b)
}

// TestLeasedParkingHoldsTheLimit: across two replicas and a poll-by-poll one, no more polls
// park than the limit; one replica alone parks exactly the limit; spare slots a replica
// leased go back to the others when it trims.
func TestLeasedParkingHoldsTheLimit(t *testing.T) {
	a, b, c, _, _ := leasedPair(t)
	const limit = 128 // a block of 2
	p := ids.New()
	var ra []func()
	for range limit - 1 {
		ra = append(ra, wantPark(t, a, p, limit, true))
	}
	wantPark(t, b, p, limit, false) // a leased the last slot as its spare
	wantPark(t, c, p, limit, false)
	ra = append(ra, wantPark(t, a, p, limit, true)) // alone, a parks exactly the limit
	wantPark(t, a, p, limit, false)
	for _, r := range ra[:10] {
		r()
	}
	wantPark(t, b, p, limit, false) // a keeps what it just used until it trims
	trimNow(t, a, p)                // the most in use since the last trim: all of them
	wantPark(t, b, p, limit, false)
	trimNow(t, a, p) // now only the 118 in use
	rb := wantPark(t, b, p, limit, true)
	rc := wantPark(t, c, p, limit, true)
	for range 8 {
		wantPark(t, b, p, limit, true)
	}
	wantPark(t, a, p, limit, false)
	wantPark(t, c, p, limit, false)
	rb()
	rc()
	wantPark(t, c, p, limit, true) // c's slot was freed at once; b's is still b's
	wantPark(t, b, p, limit, true)
}

// TestLeasedParkingExpires: a replica killed holding a lease frees its slots when the lease
// expires, two holds after it was last taken or renewed; a live replica renews its lease
// before a poll could outlast it, and an idle one gives its lease back and forgets it.
func TestLeasedParkingExpires(t *testing.T) {
	a, b, _, rdb, clk := leasedPair(t)
	const limit, hold = 128, 30 * time.Second
	p := ids.New()
	for range limit {
		if _, ok, err := a.Park(t.Context(), p, limit, hold); !ok || err != nil {
			t.Fatalf("Park = %v, %v", ok, err)
		}
	}
	wantPark(t, b, p, limit, false)
	clk.Advance(2*hold - time.Second)
	wantPark(t, b, p, limit, false)
	clk.Advance(2 * time.Second)
	release := wantPark(t, b, p, limit, true) // a's lease expired
	release()
	trimNow(t, b, p) // down to the one used since the last trim
	trimNow(t, b, p) // nothing used since: the lease goes back and b forgets it
	if n := rdb.ZCard(t.Context(), waitingKey(p)).Val(); n != 0 {
		t.Fatalf("%d members after the trim", n)
	}
	if len(b.leases) != 0 {
		t.Fatalf("b still keeps %d leases", len(b.leases))
	}

	q := ids.New()
	r := wantPark(t, b, q, limit, true)
	first := rdb.ZScore(t.Context(), waitingKey(q), "b:lease").Val()
	clk.Advance(hold + time.Second)
	r2 := wantPark(t, b, q, limit, true) // within the lease's slots, but it expires too soon
	if renewed := rdb.ZScore(t.Context(), waitingKey(q), "b:lease").Val(); renewed <= first {
		t.Fatalf("the lease was not renewed: %v then %v", first, renewed)
	}
	r()
	r2()
}

// TestLeasedParkingCloseGivesBack: a replica that closes gives its spare slots back at once
// (the other replica parks without waiting for them to expire).
func TestLeasedParkingCloseGivesBack(t *testing.T) {
	a, b, _, rdb, _ := leasedPair(t)
	const limit = 128
	p := ids.New()
	var ra []func()
	for range limit {
		ra = append(ra, wantPark(t, a, p, limit, true))
	}
	for _, r := range ra {
		r()
	}
	wantPark(t, b, p, limit, false) // a still holds them: its trim has not run
	a.Close(t.Context())
	if n := rdb.ZCard(t.Context(), waitingKey(p)).Val(); n != 0 {
		t.Fatalf("%d members after Close", n)
	}
	wantPark(t, b, p, limit, true)
}
