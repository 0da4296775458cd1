package faults

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queueshq/queues/pkg/testservers"
)

// redisProc is a redis-server this suite starts, kills with SIGKILL, pauses and restarts on
// the same port and data directory.
type redisProc struct {
	t    *testing.T
	dir  string
	port int
	args []string
	cmd  *exec.Cmd
	done chan struct{}
}

// startRedis starts a redis-server with AOF on in a fresh directory; args override.
func startRedis(t *testing.T, args ...string) *redisProc {
	t.Helper()
	port, err := testservers.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	r := &redisProc{t: t, dir: t.TempDir(), port: port, args: args}
	r.start()
	t.Cleanup(func() { r.kill() })
	return r
}

func (r *redisProc) addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(r.port)) }

func (r *redisProc) start() {
	r.t.Helper()
	full := append([]string{
		"--port", strconv.Itoa(r.port), "--bind", "127.0.0.1", "--save", "",
		"--appendonly", "yes", "--appendfsync", "everysec", "--maxmemory-policy", "noeviction",
		"--dir", r.dir, "--daemonize", "no", "--logfile", filepath.Join(r.dir, "redis.log"),
	}, r.args...)
	r.cmd = exec.Command(testservers.RedisServerBin, full...)
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := r.cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	r.done = make(chan struct{})
	go func(c *exec.Cmd, done chan struct{}) { _ = c.Wait(); close(done) }(r.cmd, r.done)
	rdb := redis.NewClient(&redis.Options{Addr: r.addr(), MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer rdb.Close()
	ctx := context.Background()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		select {
		case <-r.done:
			log, _ := os.ReadFile(filepath.Join(r.dir, "redis.log"))
			r.t.Fatalf("redis-server exited:\n%s", log)
		default:
		}
		if err := rdb.Ping(ctx).Err(); err == nil {
			return // answers PING only once the AOF is loaded
		} else if time.Now().After(deadline) {
			r.t.Fatalf("redis-server on %s: %v", r.addr(), err)
		}
	}
}

// kill sends SIGKILL (the process dies; the OS keeps what it already wrote).
func (r *redisProc) kill() {
	if r.cmd == nil || r.cmd.Process == nil {
		return
	}
	select {
	case <-r.done:
		return
	default:
	}
	_ = r.cmd.Process.Signal(syscall.SIGKILL)
	<-r.done
}

func (r *redisProc) signal(s syscall.Signal) {
	if err := r.cmd.Process.Signal(s); err != nil {
		r.t.Fatalf("signal %v: %v", s, err)
	}
}

// exited reports whether the server exited by itself.
func (r *redisProc) exited() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// do runs one command on the server directly.
func (r *redisProc) do(args ...any) (any, error) {
	rdb := redis.NewClient(&redis.Options{Addr: r.addr(), MaxRetries: -1})
	defer rdb.Close()
	return rdb.Do(context.Background(), args...).Result()
}

// postponedWrites counts, in its log (kept across restarts), the times Redis under
// appendfsync everysec held its AOF buffer 2 s behind a slow background fsync before writing
// it anyway — the answered writes in its memory only meanwhile. Shorter holds are not logged.
func (r *redisProc) postponedWrites() int {
	b, _ := os.ReadFile(filepath.Join(r.dir, "redis.log"))
	return strings.Count(string(b), "Asynchronous AOF fsync is taking too long")
}

func (r *redisProc) String() string { return fmt.Sprintf("redis-server %s", r.addr()) }

func itoa(n int) string { return strconv.Itoa(n) }

// startRedisIn starts a redis-server whose data directory is dir.
func startRedisIn(t *testing.T, dir string, args ...string) *redisProc {
	t.Helper()
	port, err := testservers.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	r := &redisProc{t: t, dir: dir, port: port, args: args}
	r.start()
	t.Cleanup(func() { r.kill() })
	return r
}

// awaitReplica waits until primary has a replica in sync (online).
func awaitReplica(t *testing.T, primary *redisProc) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		v, err := primary.do("INFO", "replication")
		if s, _ := v.(string); err == nil && strings.Contains(s, "connected_slaves:1") && strings.Contains(s, "state=online") {
			return
		}
	}
	t.Fatalf("%s has no replica online", primary)
}

func runCmd(name string, args ...string) ([]byte, error) {
	return exec.Command(name, args...).CombinedOutput()
}
