package api

import (
	"context"
	"sync"
	"time"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/auth"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
)

// What bounds a receive stream once it is open (docs/streaming.md, docs/security.md): its
// token is checked again every second and before each batch, so a revoked or expired token
// ends it within the 5 s revocation promise (the metadata cache's 4 s TTL plus one check); a
// stream that holds no credit and hears nothing from its consumer for a minute ends; and
// each replica holds a bounded number of streams, per project and in all.

const (
	// DefaultStreamsPerProject is how many receive streams one project may hold open on one
	// replica (QUEUES_STREAM_MAX_PER_PROJECT).
	DefaultStreamsPerProject = 256
	// DefaultStreamsPerReplica is how many receive streams one replica holds open in all
	// (QUEUES_STREAM_MAX_PER_REPLICA).
	DefaultStreamsPerReplica = 2048
	// DefaultStreamIdle is how long a stream may hold no credit and receive no frame before
	// it is closed: a consumer that takes nothing still costs its goroutines.
	DefaultStreamIdle = time.Minute

	// streamCheckEvery is how often an open stream re-checks its token and its idleness. With
	// the metadata cache's TTL (metacache.DefaultTTL, 4 s) a revocation ends the stream
	// within 5 s; no batch is written after the cached record shows it (admitted).
	streamCheckEvery = time.Second
	// streamAuthGrace is how long a stream lives on while its token cannot be checked (the
	// metadata store unreachable and the record no longer cached). Meanwhile it writes no
	// batch; past it the stream ends with unavailable.
	streamAuthGrace = 10 * time.Second
	// streamCapRetry is the Retry-After of a stream refused by a cap.
	streamCapRetry = 5 * time.Second

	// Stream limit names (details.limit of the 429).
	limitStreamsPerProject = "streamsPerProject"
	limitStreamsPerReplica = "streamsPerReplica"
)

// codeIdle ends a stream that held no credit and sent no frame for StreamLimits.Idle. It is a
// stream frame's code only, never an HTTP answer's.
const codeIdle apierr.Code = "idle"

// StreamLimits bound the receive streams of one replica. Zero fields take the defaults.
type StreamLimits struct {
	// PerProject bounds one project's open streams on this replica.
	PerProject int
	// PerReplica bounds this replica's open streams.
	PerReplica int
	// Idle is how long a stream may hold no credit and receive no frame before it closes.
	Idle time.Duration
}

func (l StreamLimits) withDefaults() StreamLimits {
	if l.PerProject <= 0 {
		l.PerProject = DefaultStreamsPerProject
	}
	if l.PerReplica <= 0 {
		l.PerReplica = DefaultStreamsPerReplica
	}
	if l.Idle <= 0 {
		l.Idle = DefaultStreamIdle
	}
	return l
}

// streamSlots counts the open streams of a replica, in all and per project.
type streamSlots struct {
	mu        sync.Mutex
	total     int
	byProject map[ids.ID]int
}

// acquireStream takes a slot for one stream of project, or refuses with 429 rate_limited
// naming the cap in details.limit. The caller calls release once the stream ends.
func (s *Server) acquireStream(project ids.ID) (release func(), err error) {
	l, c := s.cfg.Streams, &s.streams
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.byProject[project] >= l.PerProject:
		return nil, streamCapError(limitStreamsPerProject, l.PerProject, "the project")
	case c.total >= l.PerReplica:
		return nil, streamCapError(limitStreamsPerReplica, l.PerReplica, "this server")
	}
	if c.byProject == nil {
		c.byProject = map[ids.ID]int{}
	}
	c.byProject[project]++
	c.total++
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.total--
			if c.byProject[project]--; c.byProject[project] <= 0 {
				delete(c.byProject, project)
			}
		})
	}, nil
}

func streamCapError(limit string, n int, whose string) *apierr.Error {
	e := apierr.New(apierr.RateLimited, "%s holds the most receive streams allowed here (%d); close one or retry later", whose, n)
	e.Details = map[string]any{"limit": limit}
	return e.WithRetryAfter(streamCapRetry)
}

// openStreams reports the streams open on this replica (tests and metrics).
func (s *Server) openStreams() int {
	s.streams.mu.Lock()
	defer s.streams.mu.Unlock()
	return s.streams.total
}

// streamGuard is what a stream keeps to re-check itself.
type streamGuard struct {
	p auth.Principal
	// verified is when the token was last found live (guarded by stream.mu).
	verified time.Time
	// active is when the consumer last sent a frame or a batch was last written (stream.mu).
	active time.Time
}

// ticks returns the stream's check ticker: every streamCheckEvery of the wall clock, or the
// channel a test drives (Server.streamTicks).
func (s *Server) ticks() (<-chan time.Time, func()) {
	if s.streamTicks != nil {
		return s.streamTicks(), func() {}
	}
	t := time.NewTicker(streamCheckEvery)
	return t.C, t.Stop
}

// guard re-checks the stream every tick until it ends: a dead token or a minute idle ends it
// with an error frame.
func (st *stream) guard(ctx context.Context, cancel context.CancelFunc) {
	c, stop := st.s.ticks()
	defer stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-c:
		}
		_, err := st.verify(ctx)
		if err == nil {
			err = st.idle()
		}
		if err != nil {
			st.fail(ctx, err)
			cancel()
			return
		}
		st.checked()
	}
}

// checked signals a test that one check passed (nil outside tests).
func (st *stream) checked() {
	if st.s.streamChecked != nil {
		st.s.streamChecked()
	}
}

// touch records the consumer's (or the stream's own) activity.
func (st *stream) touch() {
	now := st.s.cfg.Clock.Now()
	st.mu.Lock()
	st.g.active = now
	st.mu.Unlock()
}

// idle is the stream's end when it has held no credit (none granted and none being used by a
// receive) and seen no frame or batch for the idle limit.
func (st *stream) idle() error {
	limit := st.s.cfg.Streams.Idle
	now := st.s.cfg.Clock.Now()
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.credit > 0 || st.out > 0 || now.Sub(st.g.active) < limit {
		return nil
	}
	if st.sends {
		return &apierr.Error{Code: codeIdle, Message: "the stream sent no frame for " + limit.String() + "; open another to send again"}
	}
	return &apierr.Error{Code: codeIdle, Message: "the stream held no credit and sent no frame for " + limit.String() + "; grant credit to keep it open"}
}

// verify checks the stream's token through the authentication path (tokenLive). live: the
// token was found live now. fatal: the stream must end with it — the token is revoked,
// expired or unknown (unauthenticated), or it could not be checked for streamAuthGrace
// (unavailable). A failed check within the grace is neither.
func (st *stream) verify(ctx context.Context) (live bool, fatal error) {
	s := st.s
	vctx, cancel := context.WithTimeout(ctx, s.cfg.StorageTimeout)
	err := s.tokenLive(vctx, st.g.p)
	cancel()
	now := s.cfg.Clock.Now()
	st.mu.Lock()
	defer st.mu.Unlock()
	switch {
	case err == nil:
		st.g.verified = now
		return true, nil
	case asAPI(err).Code == apierr.Unauthenticated:
		return false, err
	case now.Sub(st.g.verified) >= streamAuthGrace:
		return false, apierr.New(apierr.Unavailable, "the stream's token could not be checked")
	}
	return false, nil
}

// admitted is the token check a fetcher makes before it receives and again before it writes
// what it received, so no batch goes out once the token's record shows it revoked or expired.
// When it is not admitted, msgs (received, not written) are given back first; end: the
// stream ended (an error frame was sent), else the fetcher waits a moment and tries again —
// it does not receive while the token cannot be checked, so messages are not taken and
// cancelled in a loop.
func (st *stream) admitted(ctx context.Context, cancel context.CancelFunc, msgs []engine.Received) (ok, end bool) {
	live, fatal := st.verify(ctx)
	if live {
		return true, false
	}
	if fatal != nil {
		st.stop() // no other fetcher takes the credit, or the messages, given back
	}
	st.giveBack(ctx, msgs)
	if fatal != nil {
		st.fail(ctx, fatal)
		cancel()
		return false, true
	}
	return false, !sleepCtx(ctx, streamIdleRetry)
}

// giveBack returns received messages that were never written, so they are visible again at
// once instead of after their visibility timeout, and not counted as a receive (Cancel,
// docs/delivery-options.md#at-most-once-queues). At-most-once deliveries (no visibility deadline)
// are gone and stay so.
func (st *stream) giveBack(ctx context.Context, msgs []engine.Received) {
	ds := make([]engine.Delivery, 0, len(msgs))
	for _, m := range msgs {
		if !m.VisibilityDeadline.IsZero() {
			ds = append(ds, m.Delivery)
		}
	}
	if len(ds) == 0 {
		return
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), st.s.cfg.StorageTimeout)
	defer cancel()
	_, _ = st.s.Cancel(cctx, ds)
}
