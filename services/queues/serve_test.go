package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/openapicheck"
)

// served is a running `queues serve` (runServe in this process).
type served struct {
	url, token string
	admin      string // the admin listener's metrics URL, when it serves
	stderr     func() string
	stop       func()
}

// startServe runs runServe with args and QUEUES_PUSH_ALLOW_PRIVATE=env ("" for unset) until
// stop, reading the URL and the token from its banner. It swaps os.Stdout and os.Stderr while
// it starts, so tests using it do not run in parallel.
func startServe(t *testing.T, env string, args ...string) *served {
	t.Helper()
	t.Setenv("QUEUES_PUSH_ALLOW_PRIVATE", env)
	// The admin listener's default port may be taken by another process on the machine, and
	// serve warns then; the tests read serve's warnings, so it serves none.
	t.Setenv("QUEUES_ADMIN_LISTEN", "off")
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var logs bytes.Buffer
	logsDone := make(chan struct{})
	go func() {
		defer close(logsDone)
		buf := make([]byte, 4096)
		for {
			n, err := errR.Read(buf)
			mu.Lock()
			logs.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	oldOut, oldErr := os.Stdout, os.Stderr
	os.Stdout, os.Stderr = outW, errW
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	args = append([]string{"-data-dir", t.TempDir(), "-listen", "127.0.0.1:0", "-shutdown-grace", "2s"}, args...)
	go func() { errc <- runServe(ctx, args); outW.Close() }()
	s := &served{}
	sc := bufio.NewScanner(outR)
	for sc.Scan() {
		line := sc.Text()
		if u, ok := strings.CutPrefix(line, "Queues (embedded) is running at "); ok {
			s.url = u
		}
		if tok, ok := strings.CutPrefix(line, "token    "); ok {
			s.token = tok
		}
		if m, ok := strings.CutPrefix(line, "metrics  "); ok {
			s.admin, _, _ = strings.Cut(m, " ")
		}
		if strings.HasPrefix(line, "ready in") {
			break
		}
	}
	os.Stdout, os.Stderr = oldOut, oldErr
	go func() { _, _ = io.Copy(io.Discard, outR) }()
	if s.url == "" || s.token == "" {
		cancel()
		t.Fatalf("serve did not start: %v", <-errc)
	}
	s.stderr = func() string { mu.Lock(); defer mu.Unlock(); return logs.String() }
	s.stop = func() {
		cancel()
		select {
		case err := <-errc:
			if err != nil {
				t.Errorf("serve returned %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop within 30 s")
		}
		errW.Close()
		<-logsDone
	}
	return s
}

// subscribe creates a queue and tries a subscription to a loopback plain-http endpoint; it
// returns the status and the error's field.
func (s *served) subscribe(t *testing.T) (int, string) {
	t.Helper()
	hc := openapicheck.NewChecker(t, s.url).Client()
	do := func(method, path string, in any) (int, []byte) {
		b, _ := json.Marshal(in)
		req, _ := http.NewRequest(method, s.url+path, bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+s.token)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, raw
	}
	if st, raw := do(http.MethodPost, "/v1/queues", map[string]any{"name": "q"}); st != http.StatusCreated {
		t.Fatalf("create queue: %d %s", st, raw)
	}
	st, raw := do(http.MethodPost, "/v1/queues/q/subscription", map[string]any{"endpoint": "http://127.0.0.1:9/hook"})
	var e struct {
		Error struct {
			Details struct {
				Field string `json:"field"`
			} `json:"details"`
		} `json:"error"`
	}
	_ = json.Unmarshal(raw, &e)
	return st, e.Error.Details.Field
}

// TestServePushPrivate: serve allows plain http and loopback push endpoints by default, with
// a warning; QUEUES_PUSH_ALLOW_PRIVATE=false refuses them; the flag wins over the variable; a
// value that is not a boolean stops serve at once.
func TestServePushPrivate(t *testing.T) {
	s := startServe(t, "")
	st, _ := s.subscribe(t)
	s.stop()
	if st != http.StatusCreated {
		t.Fatalf("default: subscription to a loopback http endpoint answered %d, want 201", st)
	}
	if logs := s.stderr(); !strings.Contains(logs, `"level":"WARN"`) || !strings.Contains(logs, "QUEUES_PUSH_ALLOW_PRIVATE=false") {
		t.Fatalf("default: no warning logged:\n%s", logs)
	}

	s = startServe(t, "false")
	st, field := s.subscribe(t)
	s.stop()
	if st != http.StatusBadRequest || field != "endpoint" {
		t.Fatalf("QUEUES_PUSH_ALLOW_PRIVATE=false: answered %d (field %q), want 400 on endpoint", st, field)
	}
	if logs := s.stderr(); strings.Contains(logs, `"level":"WARN"`) {
		t.Fatalf("QUEUES_PUSH_ALLOW_PRIVATE=false: a warning was logged:\n%s", logs)
	}

	s = startServe(t, "false", "-push-allow-private=true")
	st, _ = s.subscribe(t)
	s.stop()
	if st != http.StatusCreated {
		t.Fatalf("-push-allow-private=true over the variable: answered %d, want 201", st)
	}

	t.Setenv("QUEUES_PUSH_ALLOW_PRIVATE", "maybe")
	if err := runServe(context.Background(), []string{"-data-dir", t.TempDir(), "-listen", "127.0.0.1:0"}); err == nil ||
		!strings.Contains(err.Error(), "QUEUES_PUSH_ALLOW_PRIVATE") {
		t.Fatalf("QUEUES_PUSH_ALLOW_PRIVATE=maybe: %v", err)
	}
}
