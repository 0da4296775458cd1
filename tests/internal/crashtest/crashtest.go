// Package crashtest is what tests/killtest and tests/servekill share: they kill a `queues`
// server with SIGKILL under a send/receive/ack load, restart it on the same storage, and
// check what docs/durability.md promises across the crash: every acknowledged send (a 200 listing
// the message) is received afterwards, a message acknowledged with a 204 is never handed out
// again, and messages that were in flight at the kill come back at their visibility deadline
// (and not before).
//
// In the style of Jepsen's total-queue checker (test
// F2, docs/durability.md#the-fault-suite), the history records every operation's outcome as ok or
// unknown, and the checks only trust ok outcomes. The drain awaits returning messages with long
// polls, never with sleeps.
//
// What differs between the tests is a Server: how the process under test is started (its
// subcommand and environment) and how the test gets a token for it.
package crashtest

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/testservers"
)

// Load and bounds. The load phase ends (with the kill) at targetAcked acknowledged sends or
// after loadFor, whichever comes first; every loop is also bounded in iterations.
const (
	producers      = 4
	consumers      = 2
	drainers       = 3
	batch          = 10
	maxBatches     = 400 // per producer: 16,000 messages at most, far above targetAcked
	maxReceives    = 2000
	targetAcked    = 2000
	loadFor        = 4 * time.Second
	visibility     = 2 // seconds, the queue's visibilityTimeoutSeconds
	holdEvery      = 8 // a consumer leaves every 8th first delivery un-acked
	minHeld        = 20
	drainFor       = 45 * time.Second
	drainQuiet     = 3 * visibility * time.Second // an empty queue and no delivery for this long: the drain is over
	requestTimeout = 10 * time.Second
	timeFormat     = "2006-01-02T15:04:05.000Z"
)

// Main is the body of a crash test's TestMain (after flag.Parse): it builds the queues binary
// once into a temporary folder, sets *bin to its path and runs the tests. name prefixes the
// folder and the error messages.
func Main(m *testing.M, name string, bin *string) int {
	defer testservers.StopAll()
	if testing.Short() {
		return m.Run() // the test skips itself; no need to build
	}
	dir, err := os.MkdirTemp("", name+"-")
	if err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		return 1
	}
	defer os.RemoveAll(dir)
	root, err := ModuleRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		return 1
	}
	*bin = filepath.Join(dir, "queues")
	build := exec.Command("go", "build", "-o", *bin, "./services/queues")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: go build ./services/queues: %v\n%s", name, err, out)
		return 1
	}
	return m.Run()
}

// ModuleRoot walks up from the working directory to the folder holding go.mod.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// Environ is a child's environment: the test's, without any setting of the machine whose name
// starts with one of drop, plus settings.
func Environ(drop []string, settings ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !slices.ContainsFunc(drop, func(p string) bool { return strings.HasPrefix(kv, p) }) {
			env = append(env, kv)
		}
	}
	return append(env, settings...)
}

// NewHTTPClient is the client the test and its workers share; its idle connections are
// closed when the test ends.
func NewHTTPClient(t *testing.T) *http.Client {
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 32, MaxConnsPerHost: 64}}
	t.Cleanup(hc.CloseIdleConnections)
	return hc
}

// TailOf is the last 4000 bytes of the file at path (a process log).
func TailOf(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// firstN lists the first n of s, and how many more there are.
func firstN(s []string, n int) string {
	if len(s) > n {
		return strings.Join(s[:n], " ") + fmt.Sprintf(" … and %d more", len(s)-n)
	}
	return strings.Join(s, " ")
}
