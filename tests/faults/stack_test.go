package faults

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	mrand "math/rand/v2"
	"net/http"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/signingkeys"
	"github.com/queueshq/queues/pkg/testservers"
	"github.com/queueshq/queues/pkg/testservers/tcpproxy"
	"github.com/queueshq/queues/tests/internal/crashtest"
)

// stack is the service as deployed: API replicas and pusher replicas (the queues binary, as
// child processes) on one redis-server (appendfsync always, so that a kill of Redis loses
// nothing acknowledged) and a DynamoDB Local table. The test talks to it over HTTP only.
type stack struct {
	t     *testing.T
	redis *redisProc
	env   []string
	op    string // the operator token
	hc    *http.Client

	mu      sync.Mutex
	apis    []*proc
	pushers []*proc
	seq     int // names the processes started
	// proxied, when set, is the Redis address each API replica reaches through a proxy of
	// its own (proxies): a test holds one replica's replies (topics_test.go).
	proxied string
	proxies map[*proc]*tcpproxy.Proxy
	// spared is how many replicas at the end of apis and of pushers no fault of the soak
	// touches: the witnesses whose memory and goroutines it follows (soakwatch_test.go).
	spared int
}

// pick is a random index of list that a fault may touch (the spared witnesses left out).
func (s *stack) pick(list []*proc) int { return mrand.IntN(len(list) - s.spared) }

func hexToken(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// newStack starts Redis (in redisDir when not empty: a lossy disk) and migrates a fresh
// table; then apis API replicas and pushers pusher replicas.
func newStack(t *testing.T, redisDir string, apis, pushers int) *stack {
	t.Helper()
	queuesBin(t) // build before starting anything that waits
	var r *redisProc
	if redisDir != "" {
		r = startRedisIn(t, redisDir, "--appendfsync", "always")
	} else {
		r = startRedis(t, "--appendfsync", "always")
	}
	s := newStackOn(t, []string{"QUEUES_REDIS_URL=redis://" + r.addr()}, apis, pushers)
	s.redis = r
	return s
}

// newStackOn is newStack on a Redis the caller started (a proxy before a primary, a
// cluster's seeds), named by redisEnv (QUEUES_REDIS_URL and the like); s.redis stays nil.
func newStackOn(t *testing.T, redisEnv []string, apis, pushers int) *stack {
	t.Helper()
	queuesBin(t)
	ring, err := signingkeys.Generate("k1")
	if err != nil {
		t.Fatal(err)
	}
	s := &stack{t: t, op: "op_" + hexToken(16),
		hc: &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
	t.Cleanup(s.hc.CloseIdleConnections)
	s.env = append(redisEnv,
		"QUEUES_DYNAMODB_ENDPOINT="+testservers.DynamoDB(t),
		"QUEUES_DYNAMODB_TABLE="+testservers.TableName("faults"),
		"QUEUES_OPERATOR_TOKEN="+s.op,
		"QUEUES_SIGNING_KEYS="+ring.String(),
		"QUEUES_LOG_LEVEL=warn",
		"QUEUES_ADMIN_LISTEN=off",
		"QUEUES_PUSH_ALLOW_PRIVATE=true",
		`QUEUES_DEFAULT_LIMITS={"requestsPerSecond":10000000}`,
		"AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local", "AWS_REGION=us-east-1", "AWS_EC2_METADATA_DISABLED=true")
	cmd := exec.Command(queuesBin(t), "migrate")
	cmd.Env = crashtest.Environ([]string{"QUEUES_", "AWS_"}, s.env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("queues migrate: %v\n%s", err, out)
	}
	for range apis {
		s.apis = append(s.apis, s.startAPI())
	}
	for range pushers {
		s.pushers = append(s.pushers, s.startPusher())
	}
	return s
}

func (s *stack) name(kind string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	return fmt.Sprintf("%s-%d", kind, s.seq)
}

func freeAddr(t *testing.T) string {
	port, err := testservers.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return "127.0.0.1:" + strconv.Itoa(port)
}

// startAPI starts one `queues api` replica (not yet in s.apis), its admin listener (metrics)
// on a port of its own.
func (s *stack) startAPI() *proc {
	addr, admin := freeAddr(s.t), freeAddr(s.t)
	env := append(append([]string(nil), s.env...), "QUEUES_LISTEN="+addr, "QUEUES_ADMIN_LISTEN="+admin)
	var px *tcpproxy.Proxy
	if s.proxied != "" {
		var err error
		if px, err = tcpproxy.Start(s.proxied); err != nil {
			s.t.Fatal(err)
		}
		s.t.Cleanup(px.Close)
		env = append(env, "QUEUES_REDIS_URL=redis://"+px.Addr()) // the last setting counts
	}
	p := startProc(s.t, s.name("api"), "http://"+addr+"/readyz", env, "api")
	p.metrics = "http://" + admin + "/metrics"
	if px != nil {
		s.mu.Lock()
		if s.proxies == nil {
			s.proxies = map[*proc]*tcpproxy.Proxy{}
		}
		s.proxies[p] = px
		s.mu.Unlock()
	}
	return p
}

// startPusher starts one `queues pusher` replica (not yet in s.pushers).
func (s *stack) startPusher() *proc {
	addr := freeAddr(s.t)
	p := startProc(s.t, s.name("pusher"), "http://"+addr+"/readyz", append(s.env, "QUEUES_PUSHER_LISTEN="+addr), "pusher")
	p.metrics = "http://" + addr + "/metrics"
	return p
}

// url is a live API replica's base URL, chosen at random (a load balancer).
func (s *stack) url() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.apis[mrand.IntN(len(s.apis))]
	return a.ready[:len(a.ready)-len("/readyz")]
}

// replace starts a new replica in place of the i-th of list, then stops the old one
// gracefully (SIGTERM): a rolling restart's step.
func (s *stack) replace(list *[]*proc, i int, start func() *proc) {
	fresh := start()
	s.mu.Lock()
	old := (*list)[i]
	(*list)[i] = fresh
	s.mu.Unlock()
	old.stop()
}

// killAndRestart kills the i-th of list with SIGKILL and starts another in its place.
func (s *stack) killAndRestart(list *[]*proc, i int, start func() *proc) {
	s.mu.Lock()
	old := (*list)[i]
	s.mu.Unlock()
	old.kill()
	fresh := start()
	s.mu.Lock()
	(*list)[i] = fresh
	s.mu.Unlock()
}

// project creates a project and a token with every scope in it.
func (s *stack) project() string {
	s.t.Helper()
	var proj struct{ ID string }
	if _, err := crashtest.Call(s.t.Context(), s.hc, http.MethodPost, s.url()+"/v1/projects", s.op, map[string]any{"name": "faults"}, &proj); err != nil {
		s.t.Fatal(err)
	}
	var tok struct{ Token string }
	if _, err := crashtest.Call(s.t.Context(), s.hc, http.MethodPost, s.url()+"/v1/projects/"+proj.ID+"/tokens", s.op,
		map[string]any{"name": "faults", "scopes": []string{"*"}}, &tok); err != nil {
		s.t.Fatal(err)
	}
	return tok.Token
}
