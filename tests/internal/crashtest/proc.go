package crashtest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/testservers"
)

// Server is what a crash test supplies: the process under test and how to get a token for it.
type Server interface {
	// Command is one start of the server listening on listen (host:port): the queues binary
	// with its subcommand (Args[1], e.g. "api") and its environment. Start sets the rest.
	Command(listen string) *exec.Cmd
	// Token is a token with every scope for a new project's queue; url is the first
	// process's, ready to answer.
	Token(t *testing.T, hc *http.Client, url string) string
}

// Proc is one server child process.
type Proc struct {
	URL    string // http://127.0.0.1:port
	Log    string // the file holding its output
	cmd    *exec.Cmd
	exited chan struct{}
}

// Kill sends SIGKILL and waits for the process to be gone. It is safe to call more than once.
func (p *Proc) Kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// Start starts the server on a free port, with its output in logDir/name-attempt.log, and
// waits until GET /readyz answers 200. It returns the process and the time from start to
// ready. The process is killed when the test ends, and also dies with the test binary (parent
// death signal).
func Start(t *testing.T, hc *http.Client, srv Server, logDir, name string) (*Proc, time.Duration) {
	t.Helper()
	var lastErr error
	what := "queues"
	for attempt := range 3 { // the free port may be taken before the child binds it
		port, err := testservers.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		p := &Proc{
			URL:    "http://127.0.0.1:" + strconv.Itoa(port),
			Log:    filepath.Join(logDir, fmt.Sprintf("%s-%d.log", name, attempt)),
			exited: make(chan struct{}),
		}
		logf, err := os.Create(p.Log)
		if err != nil {
			t.Fatal(err)
		}
		p.cmd = srv.Command("127.0.0.1:" + strconv.Itoa(port))
		what = strings.Join(append([]string{"queues"}, p.cmd.Args[1:]...), " ")
		p.cmd.Stdout, p.cmd.Stderr = logf, logf
		p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		start := time.Now()
		if err := p.cmd.Start(); err != nil {
			logf.Close()
			t.Fatalf("start %s: %v", what, err)
		}
		go func() { _ = p.cmd.Wait(); logf.Close(); close(p.exited) }()
		t.Cleanup(p.Kill)
		err = testservers.WaitFor(t.Context(), 30*time.Second, func(ctx context.Context) error {
			select {
			case <-p.exited:
				return errExited
			default:
			}
			status, err := Call(ctx, hc, http.MethodGet, p.URL+"/readyz", "", nil, nil)
			if err == nil && status != http.StatusOK {
				err = fmt.Errorf("GET /readyz answered %d", status)
			}
			return err
		})
		if err == nil {
			return p, time.Since(start)
		}
		p.Kill()
		lastErr = fmt.Errorf("%w\n%s", err, TailOf(p.Log))
	}
	t.Fatalf("%s did not become ready: %v", what, lastErr)
	return nil, 0
}

var errExited = errors.New("the process exited")
