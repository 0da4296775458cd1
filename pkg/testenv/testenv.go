// Package testenv starts the real components tests run against: redis-server instances (single
// and a 3-master cluster) and DynamoDB Local, each on a free localhost port, and stops them when
// the test binary ends. A server named in the environment (set by the test command, which
// starts one DynamoDB Local for every package) is used instead of starting another.
package testenv

import (
	"context"
	"fmt"
	"net"
	"time"
)

// FreePort asks the kernel for a free TCP port on 127.0.0.1.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// WaitFor calls check until it returns nil or timeout passes, and returns its last error.
// Servers that are starting give no event to wait on; polling their readiness is the event.
func WaitFor(ctx context.Context, timeout time.Duration, check func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	var err error
	for {
		if err = check(ctx); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not ready after %s: %w", timeout, err)
		case <-t.C:
		}
	}
}
