// Package killtest kills the API tier with SIGKILL under load and checks what docs/durability.md
// promises across the crash: every acknowledged send (a 200 listing the message) is received
// afterwards, a message acknowledged with a 204 is never handed out again, and messages that
// were in flight at the kill come back at their visibility deadline (and not before).
//
// The test runs the real `queues api` binary as a child process on a redis-server with AOF
// (appendfsync always) and DynamoDB Local, in the style of Jepsen's total-queue checker
// (test F2, docs/durability.md#the-fault-suite): the history records every operation's
// outcome as ok or unknown, and the checks only trust ok outcomes. The load, history and
// checks are in tests/internal/crashtest, shared with tests/servekill.
package killtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/signingkeys"
	"github.com/queueshq/queues/pkg/testservers"
	"github.com/queueshq/queues/tests/internal/crashtest"
)

// queuesBin is the queues binary TestMain builds once for the test binary.
var queuesBin string

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(crashtest.Main(m, "killtest", &queuesBin))
}

// stack is one Redis, one DynamoDB table and the settings every `queues` child gets. It is
// the crashtest.Server of `queues api`.
type stack struct {
	env []string
	dir string
}

func newStack(t *testing.T) *stack {
	t.Helper()
	ctx := t.Context()
	raddr, stopRedis, err := testservers.StartRedis(ctx, "--appendonly", "yes", "--appendfsync", "always")
	if err != nil {
		t.Fatalf("redis-server: %v", err)
	}
	t.Cleanup(stopRedis)
	ring, err := signingkeys.Generate("k1")
	if err != nil {
		t.Fatal(err)
	}
	s := &stack{dir: t.TempDir()}
	s.env = append(s.env, "QUEUES_REDIS_URL=redis://"+raddr,
		"QUEUES_DYNAMODB_ENDPOINT="+testservers.DynamoDB(t),
		"QUEUES_DYNAMODB_TABLE="+testservers.TableName("killtest"),
		"QUEUES_OPERATOR_TOKEN=op_"+randomHex(16),
		"QUEUES_SIGNING_KEYS="+ring.String(),
		"QUEUES_LOG_LEVEL=warn",
		// DynamoDB Local takes any credentials; with these the SDK never asks EC2's IMDS.
		"AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local", "AWS_REGION=us-east-1", "AWS_EC2_METADATA_DISABLED=true")
	mctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(mctx, queuesBin, "migrate")
	cmd.Env = s.environ()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("queues migrate: %v\n%s", err, out)
	}
	return s
}

// environ is the child's environment: the test's, without any QUEUES_* or AWS_* setting of
// the machine, plus the stack's. The children only talk to DynamoDB Local; the machine's AWS
// settings would only get in the way (AWS_CA_BUNDLE, for one, makes the binary's DynamoDB client fail to
// build: "unable to add custom RootCAs HTTPClient").
func (s *stack) environ(extra ...string) []string {
	return crashtest.Environ([]string{"QUEUES_", "AWS_"}, slices.Concat(s.env, extra)...)
}

// Command starts `queues api`.
func (s *stack) Command(listen string) *exec.Cmd {
	cmd := exec.Command(queuesBin, "api")
	cmd.Env = s.environ("QUEUES_LISTEN=" + listen)
	return cmd
}

// Token creates a project and a token with every scope in it, with the operator token.
func (s *stack) Token(t *testing.T, hc *http.Client, url string) string {
	t.Helper()
	ctx := t.Context()
	var proj struct{ ID string }
	if _, err := crashtest.Call(ctx, hc, http.MethodPost, url+"/v1/projects", s.operatorToken(), map[string]any{"name": "killtest"}, &proj); err != nil {
		t.Fatal(err)
	}
	var tok struct{ Token string }
	if _, err := crashtest.Call(ctx, hc, http.MethodPost, url+"/v1/projects/"+proj.ID+"/tokens", s.operatorToken(),
		map[string]any{"name": "killtest", "scopes": []string{"*"}}, &tok); err != nil {
		t.Fatal(err)
	}
	return tok.Token
}

func (s *stack) operatorToken() string {
	for _, kv := range s.env {
		if v, ok := strings.CutPrefix(kv, "QUEUES_OPERATOR_TOKEN="); ok {
			return v
		}
	}
	return ""
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func TestKillAPIUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("starts redis-server, DynamoDB Local and the queues binary, and runs load")
	}
	st := newStack(t)
	crashtest.KillUnderLoad(t, st, st.dir, "API")
}
