package redisengine

import (
	"context"
	"fmt"
	"time"

	"github.com/queueshq/queues/pkg/engine"
)

// Replica clocks and deadlines.
//
// Visibility deadlines, delays, retention and fifo group locks are stamped with the clock of
// the replica that runs the script, and compared with the clock of whichever replica runs the
// next one. A replica whose clock runs ahead would see in-flight messages as due and
// redeliver them early (and unlock a fifo group while its batch is still out); one running
// behind would hold them late. So with Options.MaxClockSkew set, the engine compares its
// clock with Redis's (TIME) at start and every ClockCheckEvery, and while the difference
// exceeds the bound it refuses every operation that reads or stamps a time (503 at the API;
// the replica's readiness fails through ClockErr), until a later check finds the clock back
// in bounds. Redis's clock is the reference all replicas share. Acknowledgements, which
// compare no time, still work.

// Clock check defaults.
const (
	DefaultMaxClockSkew    = time.Second
	DefaultClockCheckEvery = 5 * time.Second
)

// checkClock measures the offset of the engine's clock from Redis's and records whether it is
// within bounds. The round trip's midpoint is taken as the moment Redis read its clock.
func (e *Engine) checkClock(ctx context.Context) error {
	before := e.clk.Now()
	t0 := time.Now()
	rt, err := e.rdb.Time(ctx).Result()
	if err != nil {
		return err // unknown: the last verdict stands
	}
	rtt := time.Since(t0)
	off := before.Add(rtt / 2).Sub(rt)
	var verdict error
	if off > e.opts.MaxClockSkew || -off > e.opts.MaxClockSkew {
		verdict = &engine.Failure{Err: engine.ErrUnavailable,
			Op: fmt.Sprintf("this replica's clock is %v off the store's (more than %v); it serves again once its clock is corrected", off.Round(time.Millisecond), e.opts.MaxClockSkew)}
		if e.ClockErr() == nil {
			e.log.Error("redisengine: clock skew beyond the bound; refusing to serve", "offset", off.String(), "bound", e.opts.MaxClockSkew.String())
		}
	} else if e.ClockErr() != nil {
		e.log.Info("redisengine: clock back within bounds; serving again", "offset", off.String())
	}
	e.clockErr.Store(&verdict)
	return nil
}

// ClockErr is non-nil while the engine's clock is off Redis's beyond Options.MaxClockSkew.
func (e *Engine) ClockErr() error {
	if p := e.clockErr.Load(); p != nil {
		return *p
	}
	return nil
}

// watchClock re-checks the clock until Close.
func (e *Engine) watchClock() {
	defer close(e.clockDone)
	t := time.NewTicker(e.opts.ClockCheckEvery)
	defer t.Stop()
	for {
		select {
		case <-e.clockStop:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), e.opts.ClockCheckEvery)
			if err := e.checkClock(ctx); err != nil {
				e.log.Warn("redisengine: reading the store's clock failed", "error", err)
			}
			cancel()
		}
	}
}
