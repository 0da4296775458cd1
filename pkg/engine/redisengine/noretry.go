package redisengine

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queueshq/queues/pkg/apierr"
)

// Scripts run at most once per call.
//
// go-redis re-sends a command after a dropped connection or a read timeout (MaxRetries,
// default 3; a Cluster client also retries on another node, up to MaxRedirects). For a
// script whose reply was lost that runs it a second time: a send stores its messages twice, a
// receive claims a second batch while the first stays claimed by nobody. So the engine talks
// to Redis through its own client built from the given one's options with MaxRetries -1, and
// on a Cluster each node's client also hides a lost reply from the cluster client's retry
// loop. A call whose reply was lost fails (503 at the API: its outcome is unknown to the
// caller, who may retry — at least once, never silently twice); a receive's claim whose reply
// was lost comes back at its visibility deadline like any unsettled delivery. Errors that
// mean the command did not run (dial errors, LOADING, READONLY, TRYAGAIN, MOVED, …) are
// still retried by go-redis, and the engine's read-only operations (counts, browse, groups)
// retry themselves after a lost reply (idempotent).

// withoutRetries returns a client like rdb that never re-sends a command whose reply may have
// been lost, and whether the engine owns it (and closes it). A Client already built with
// MaxRetries -1 is used as is (with its hooks); a client type it cannot copy is returned as is.
func withoutRetries(rdb redis.UniversalClient) (redis.UniversalClient, bool) {
	switch c := rdb.(type) {
	case *redis.Client:
		if c.Options().MaxRetries <= 0 { // NewClient stores -1 as 0: no retries
			return c, false
		}
		o := *c.Options()
		// NewClient stores its push-notification processor in the options: the copy gets its own.
		o.MaxRetries, o.PushNotificationProcessor = -1, nil
		if o.MaintNotificationsConfig != nil {
			mc := *o.MaintNotificationsConfig
			o.MaintNotificationsConfig = &mc
		}
		return redis.NewClient(&o), true
	case *redis.ClusterClient:
		o := *c.Options()
		o.MaxRetries, o.PushNotificationProcessor = -1, nil
		cc := redis.NewClusterClient(&o)
		cc.OnNewNode(func(n *redis.Client) { n.AddHook(lostReplyHook{}) })
		return cc, true
	}
	return rdb, false
}

// lostReply replaces an error after which a script's outcome is unknown, so that no retry
// loop recognises it as retryable (it does not unwrap to the network error).
type lostReply struct{ msg string }

func (e *lostReply) Error() string { return "redisengine: reply lost, outcome unknown: " + e.msg }

// replyLost reports whether err may have come after the command ran: the connection broke or
// timed out after the command was (perhaps) written. A failed dial is not such an error.
func replyLost(err error) bool {
	if err == nil {
		return false
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return false
	}
	var ne net.Error
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.As(err, &ne)
}

// lostReplyHook, on a cluster node's client, masks a lost reply to a script.
type lostReplyHook struct{}

func (lostReplyHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (lostReplyHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if isScript(cmd) && replyLost(err) {
			err = &lostReply{msg: err.Error()}
			cmd.SetErr(err)
		}
		return err
	}
}

func (lostReplyHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		if !replyLost(err) {
			return err
		}
		scripts := false
		for _, c := range cmds {
			scripts = scripts || isScript(c)
		}
		if !scripts {
			return err
		}
		masked := &lostReply{msg: err.Error()}
		for _, c := range cmds {
			if replyLost(c.Err()) {
				c.SetErr(masked)
			}
		}
		return masked
	}
}

func isScript(cmd redis.Cmder) bool {
	switch cmd.Name() {
	case "eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro":
		return true
	}
	return false
}

// readRetries is how many more times a read-only operation runs after a lost reply.
const readRetries = 2

// idempotent runs a read-only operation, again after a lost reply or a broken connection
// (the engine's client does not retry by itself).
func idempotent[T any](ctx context.Context, f func() (T, error)) (T, error) {
	v, err := f()
	for i := 0; i < readRetries && err != nil && ctx.Err() == nil && apierr.CodeOf(err) == apierr.Unavailable; i++ {
		t := time.NewTimer(time.Duration(i+1) * 50 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return v, err
		case <-t.C:
		}
		v, err = f()
	}
	return v, err
}
