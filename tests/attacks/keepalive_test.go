package attacks

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/api"
	"github.com/queueshq/queues/services/queues/stack"
)

// X38: idle keep-alive connections. 500 clients each make one request on a kept-alive
// connection and then hold it open without a word. While they are held, other clients are
// served (a fresh connection's /healthz and an authenticated /v1 call); the server then closes
// every held connection itself (each client's read ends in EOF) at the idle timeout, and no
// goroutine is left.
//
// The production server is used with its idle timeout shortened from 120 s to 3 s so the
// suite need not wait two minutes, and its read timeout lengthened to 120 s: net/http falls
// back to ReadTimeout when IdleTimeout is unset, so only the idle timeout can close the
// connections within the 40 s bound (with IdleTimeout removed from ServeTimeouts this test
// fails). The bound is generous: it is the test's give-up point, not a latency claim.
func TestIdleKeepAlive(t *testing.T) {
	const conns = 500
	to := api.DefaultTimeouts
	to.Idle, to.Read = 3*time.Second, 120*time.Second
	base, _, stop, err := e.serveTimeouts(stack.Options{}, nil, to)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	_, tok := project(t)
	goroutines := runtime.NumGoroutine()
	addr := strings.TrimPrefix(base, "http://")

	closed := make(chan error, conns) // nil: the server closed it (EOF); else what else happened
	var opened sync.WaitGroup
	held := make(chan net.Conn, conns)
	sem := make(chan struct{}, 50) // open them 50 at a time, so all are held within seconds
	for range conns {
		opened.Add(1)
		sem <- struct{}{}
		go func() {
			defer opened.Done()
			defer func() { <-sem }()
			c, err := net.Dial("tcp", addr)
			if err != nil {
				closed <- err
				return
			}
			held <- c
			br := bufio.NewReader(c)
			if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
				closed <- err
				return
			}
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				closed <- err
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || resp.Close {
				closed <- fmt.Errorf("healthz answered %s (close %v); want 200, kept alive", resp.Status, resp.Close)
				return
			}
			go func() {
				// Idle now: the next thing this connection sees is the server's close.
				_, err := br.ReadByte()
				if err == io.EOF {
					err = nil
				} else if err == nil {
					err = errors.New("the server sent bytes on an idle connection")
				}
				closed <- err
			}()
		}()
	}
	opened.Wait()
	close(held)
	defer func() {
		for c := range held {
			c.Close()
		}
	}()

	// Other clients are served while the connections are held.
	stillHeld := conns - len(closed)
	callTo(t, base, "GET", "/healthz", "", nil, nil).is(t, 200, "", "")
	callTo(t, base, "GET", "/v1/queues", tok, nil, nil).is(t, 200, "", "")
	t.Logf("%d idle keep-alive connections held (%d goroutines); other clients served meanwhile", stillHeld, runtime.NumGoroutine())

	deadline := time.After(40 * time.Second)
	for i := range conns {
		select {
		case err := <-closed:
			if err != nil {
				t.Fatalf("connection %d: %v; want served once and then closed by the server", i, err)
			}
		case <-deadline:
			t.Fatalf("%d of %d idle connections still open after 40 s; want closed at the %v idle timeout", conns-i, conns, to.Idle)
		}
	}
	t.Logf("%d idle connections: all closed by the server", conns)
	waitGoroutines(t, goroutines+10)
}
