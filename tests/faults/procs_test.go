package faults

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/testservers"
	"github.com/queueshq/queues/tests/internal/crashtest"
)

// The tests of whole processes (F5, F8 of queues serve, F16, F20) run the real queues
// binary, built once per test binary on first use: the tests of the engine alone do not pay
// for the build.
var (
	binOnce sync.Once
	binDir  string
	binPath string
	binErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	testservers.StopAll()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// queuesBin builds the queues binary (once) and returns its path.
func queuesBin(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "faults-bin-")
		if binErr != nil {
			return
		}
		root, err := crashtest.ModuleRoot()
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(binDir, "queues")
		build := exec.Command("go", "build", "-o", binPath, "./services/queues")
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build ./services/queues: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// proc is one child process of the queues binary (api, pusher or serve): started, checked
// ready on its /readyz, stopped gracefully (SIGTERM), killed (SIGKILL) or paused (SIGSTOP).
type proc struct {
	t     *testing.T
	name  string
	ready string // its /readyz URL
	// metrics is its /metrics URL (Go runtime and process collectors among them).
	metrics string
	log     string
	cmd     *exec.Cmd
	exited  chan struct{}
}

// startProc starts `queues args…` with env and waits until ready answers 200. The process
// dies with the test binary (parent death signal) and is killed when the test ends.
func startProc(t *testing.T, name, ready string, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{t: t, name: name, ready: ready, log: filepath.Join(t.TempDir(), name+".log"), exited: make(chan struct{})}
	logf, err := os.Create(p.log)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(queuesBin(t), args...)
	p.cmd.Env = crashtest.Environ([]string{"QUEUES_", "AWS_"}, env...)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() { _ = p.cmd.Wait(); logf.Close(); close(p.exited) }()
	t.Cleanup(p.kill)
	hc := &http.Client{Timeout: 2 * time.Second}
	err = testservers.WaitFor(context.Background(), 60*time.Second, func(ctx context.Context) error {
		select {
		case <-p.exited:
			return fmt.Errorf("%s exited", name)
		default:
		}
		st, err := crashtest.Call(ctx, hc, http.MethodGet, ready, "", nil, nil)
		if err == nil && st != http.StatusOK {
			err = fmt.Errorf("%s answered %d", ready, st)
		}
		return err
	})
	if err != nil {
		p.kill()
		t.Fatalf("%s did not become ready: %v\n%s", name, err, crashtest.TailOf(p.log))
	}
	return p
}

// kill sends SIGKILL (after SIGCONT, in case it is stopped) and waits for the exit.
func (p *proc) kill() {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// stop is the graceful stop of a deploy: SIGTERM, then the process's own drain; SIGKILL if it
// has not exited within a minute.
func (p *proc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(time.Minute):
		p.t.Errorf("%s did not stop within a minute of SIGTERM:\n%s", p.name, crashtest.TailOf(p.log))
		p.kill()
	}
}

func (p *proc) signal(s syscall.Signal) {
	if err := p.cmd.Process.Signal(s); err != nil {
		p.t.Fatalf("signal %v to %s: %v", s, p.name, err)
	}
}
