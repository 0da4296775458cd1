package redisengine

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
)

// CreateQueue needs no storage: a queue's keys appear with its first message.
func (e *Engine) CreateQueue(ctx context.Context, q engine.Queue) error {
	if q.Type != engine.Standard && q.Type != engine.FIFO {
		return engine.ErrBadQueueType
	}
	return nil
}

// laneKey names the lane of an operation ('s' send, 'r' receive, 'a' ack) on one partition;
// a and b are the operation's own parameters that calls sharing a script call must agree on.
func laneKey(op byte, q ids.ID, p int, a, b int64) string {
	k := make([]byte, 0, 64)
	k = append(k, op, '|')
	k = append(k, q[:]...)
	k = strconv.AppendInt(append(k, '|'), int64(p), 10)
	k = strconv.AppendInt(append(k, '|'), a, 10)
	k = strconv.AppendInt(append(k, '|'), b, 10)
	return string(k)
}

var errBadReply = fmt.Errorf("unexpected script reply")

func orBad(err error) error {
	if err == nil {
		return errBadReply
	}
	return err
}

// cmp keeps the first error.
func cmp(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// flag is a boolean script argument: 1 or 0.
func flag(b bool) int {
	if b {
		return 1
	}
	return 0
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func timeOrZero(ms int64) (t time.Time) {
	if ms > 0 {
		t = fromMs(ms)
	}
	return t
}
