package localservers

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisServerBin is the redis-server binary StartRedis runs (looked up on PATH).
const RedisServerBin = "redis-server"

// startTimeout bounds how long a redis-server may take to answer PING, and a cluster to agree.
const startTimeout = 15 * time.Second

// StartRedis starts a fresh redis-server on a free 127.0.0.1 port with its own temporary
// directory, no persistence and maxmemory-policy noeviction, and waits until it answers PING.
// args are appended to the command line (so they override the defaults, e.g.
// "--maxmemory-policy", "allkeys-lru"). stop kills the server and removes its directory; it is
// safe to call more than once. It never touches a server it did not start.
func StartRedis(ctx context.Context, args ...string) (addr string, stop func(), err error) {
	// Another process may take the free port between FreePort and the server's bind; try again.
	for range 3 {
		addr, stop, err = startRedisOnce(ctx, args)
		if err == nil || ctx.Err() != nil {
			return addr, stop, err
		}
	}
	return "", nil, err
}

func startRedisOnce(ctx context.Context, args []string) (string, func(), error) {
	port, err := FreePort()
	if err != nil {
		return "", nil, err
	}
	dir, err := os.MkdirTemp("", "queues-redis-")
	if err != nil {
		return "", nil, err
	}
	full := append([]string{
		"--port", strconv.Itoa(port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--maxmemory-policy", "noeviction",
		"--dir", dir,
		"--daemonize", "no",
		"--logfile", filepath.Join(dir, "redis.log"),
	}, args...)
	cmd := exec.Command(RedisServerBin, full...)
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("start %s: %w", RedisServerBin, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			_ = cmd.Process.Kill()
			<-exited
			os.RemoveAll(dir)
		})
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	err = WaitFor(ctx, startTimeout, func(ctx context.Context) error {
		select {
		case <-exited:
			return errors.New("redis-server exited")
		default:
		}
		return ping(ctx, addr)
	})
	if err != nil {
		logTail, _ := os.ReadFile(filepath.Join(dir, "redis.log"))
		stop()
		return "", nil, fmt.Errorf("redis-server on %s: %w\n%s", addr, err, tail(string(logTail), 2000))
	}
	return addr, stop, nil
}

// ping sends one RESP PING and expects +PONG.
func ping(ctx context.Context, addr string) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(line) != "+PONG" {
		return fmt.Errorf("PING answered %q", strings.TrimSpace(line))
	}
	return nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// StartRedisCluster starts three redis-server masters in cluster mode, assigns them a third of
// the 16384 slots each, joins them with CLUSTER MEET and waits until every node reports
// cluster_state:ok and knows all three masters. It returns the seed addresses.
func StartRedisCluster(ctx context.Context) (addrs []string, stop func(), err error) {
	const n = 3
	var stops []func()
	var busPorts []int
	stop = func() {
		for _, s := range stops {
			s()
		}
	}
	for range n {
		busPort, err := FreePort()
		if err != nil {
			stop()
			return nil, nil, err
		}
		// The config file is relative to the server's own --dir.
		addr, s, err := StartRedis(ctx,
			"--cluster-enabled", "yes",
			"--cluster-config-file", "nodes.conf",
			"--cluster-port", strconv.Itoa(busPort),
			"--cluster-node-timeout", "5000",
		)
		if err != nil {
			stop()
			return nil, nil, err
		}
		stops = append(stops, s)
		addrs = append(addrs, addr)
		busPorts = append(busPorts, busPort)
	}
	if err := formCluster(ctx, addrs, busPorts); err != nil {
		stop()
		return nil, nil, err
	}
	return addrs, stop, nil
}

func formCluster(ctx context.Context, addrs []string, busPorts []int) error {
	clients := make([]*redis.Client, len(addrs))
	for i, a := range addrs {
		clients[i] = redis.NewClient(&redis.Options{Addr: a})
		defer clients[i].Close()
	}
	const slots = 16384
	per := slots / len(addrs)
	for i, c := range clients {
		lo, hi := i*per, (i+1)*per-1
		if i == len(clients)-1 {
			hi = slots - 1
		}
		if err := c.ClusterAddSlotsRange(ctx, lo, hi).Err(); err != nil {
			return fmt.Errorf("CLUSTER ADDSLOTSRANGE on %s: %w", addrs[i], err)
		}
	}
	for i, a := range addrs[1:] {
		host, port, _ := net.SplitHostPort(a)
		// The bus port is not port+10000 (it was picked free), so MEET must name it.
		if err := clients[0].Do(ctx, "CLUSTER", "MEET", host, port, busPorts[i+1]).Err(); err != nil {
			return fmt.Errorf("CLUSTER MEET %s: %w", a, err)
		}
	}
	return WaitFor(ctx, startTimeout, func(ctx context.Context) error {
		for i, c := range clients {
			info, err := c.ClusterInfo(ctx).Result()
			if err != nil {
				return err
			}
			if !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_known_nodes:"+strconv.Itoa(len(addrs))) {
				return fmt.Errorf("node %s not ready yet", addrs[i])
			}
		}
		return nil
	})
}
