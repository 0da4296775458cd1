// Package servekill kills `queues serve` (embedded mode: API and store in one process) with
// SIGKILL under a send/receive/ack load, restarts it on the same data directory, and checks
// what docs/durability.md promises across the crash: every acknowledged send (a 200 listing the
// message) is received afterwards, a message acknowledged with a 204 is never handed out
// again, and messages that were in flight at the kill come back at their visibility deadline
// (and not before). Unlike tests/killtest, the kill takes the storage down too: what survives
// is what the embedded store fsynced before answering.
//
// The load, history and checks are those of tests/killtest, in tests/internal/crashtest;
// only the process under test and its setup differ. The drain awaits returning messages with
// long polls, never with sleeps.
package servekill

import (
	"flag"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/queueshq/queues/tests/internal/crashtest"
)

// queuesBin is the queues binary TestMain builds once for the test binary.
var queuesBin string

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(crashtest.Main(m, "servekill", &queuesBin))
}

// stack is one data directory and the settings every `queues serve` child gets. It is the
// crashtest.Server of `queues serve`.
type stack struct {
	env  []string
	dir  string
	data string
}

func newStack(t *testing.T) *stack {
	t.Helper()
	s := &stack{dir: t.TempDir()}
	s.data = filepath.Join(s.dir, "data")
	s.env = append(s.env, "QUEUES_DATA_DIR="+s.data, "QUEUES_LOG_LEVEL=warn")
	return s
}

// environ is the child's environment: the test's, without any QUEUES_* setting of the
// machine, plus the stack's.
func (s *stack) environ(extra ...string) []string {
	return crashtest.Environ([]string{"QUEUES_"}, slices.Concat(s.env, extra)...)
}

// Command starts `queues serve`.
func (s *stack) Command(listen string) *exec.Cmd {
	cmd := exec.Command(queuesBin, "serve")
	cmd.Env = s.environ("QUEUES_LISTEN=" + listen)
	return cmd
}

// Token is the default project's token that the first start wrote.
func (s *stack) Token(t *testing.T, _ *http.Client, _ string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.data, "token"))
	if err != nil {
		t.Fatalf("the token file: %v", err)
	}
	return strings.TrimSpace(string(b))
}

func TestKillServeUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the queues binary under load")
	}
	st := newStack(t)
	crashtest.KillUnderLoad(t, st, st.dir, "serve")
}
