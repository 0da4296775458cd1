// Package localservers starts the real servers a development stack and the tests run on this
// machine: redis-server instances (single and a 3-master cluster) and DynamoDB Local, each on a
// free localhost port, installed into a cache folder where needed. `queues dev` uses it, and
// pkg/testservers wraps it for tests; it imports no testing code so the binary links none.
package localservers

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
