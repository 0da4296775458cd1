package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestHealth(t *testing.T) {
	var ready atomic.Bool
	ready.Store(true)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/healthz":
			_, _ = w.Write([]byte(`{"status":"ok"}`))
		case r.URL.Path == "/readyz" && ready.Load():
			_, _ = w.Write([]byte(`{"status":"ready"}`))
		case r.URL.Path == "/readyz":
			w.WriteHeader(http.StatusServiceUnavailable)
		case r.URL.Path == "/moved":
			http.Redirect(w, r, "/healthz", http.StatusFound)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	for _, u := range []string{srv.URL, srv.URL + "/", srv.URL + "/healthz", srv.URL + "/readyz"} {
		if out := stdout(t, func() error { return runHealth(ctx, []string{u}) }); !strings.Contains(out, "ok") {
			t.Errorf("%s printed %q", u, out)
		}
	}
	ready.Store(false)
	for _, u := range []string{srv.URL + "/readyz", srv.URL + "/moved", srv.URL + "/nothing"} {
		if err := runHealth(ctx, []string{"-q", u}); err == nil {
			t.Errorf("%s: healthy, want an error", u)
		}
	}
	for _, bad := range [][]string{nil, {"a", "b"}, {"ftp://x/healthz"}, {"127.0.0.1:8080"}} {
		if err := runHealth(ctx, bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	// Nothing listening: an error.
	dead := httptest.NewServer(http.NotFoundHandler())
	addr := dead.URL
	dead.Close()
	if err := runHealth(ctx, []string{"-timeout", "2s", addr + "/healthz"}); err == nil {
		t.Error("a closed port was healthy")
	}
}

func TestPusherReadyz(t *testing.T) {
	var redisDown atomic.Bool
	deps := map[string]func(context.Context) error{
		"redis": func(context.Context) error {
			if redisDown.Load() {
				return errors.New("dial tcp 10.0.0.7:6379: connection refused")
			}
			return nil
		},
		"metadata": func(context.Context) error { return nil },
	}
	srv := httptest.NewServer(pusherHandler(prometheus.NewRegistry(), deps))
	defer srv.Close()
	ctx := context.Background()
	for _, p := range []string{"/healthz", "/readyz", "/metrics"} {
		if err := runHealth(ctx, []string{"-q", srv.URL + p}); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	redisDown.Store(true)
	res, err := http.Get(srv.URL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" {
		t.Fatalf("readyz with Redis down: %d %s", res.StatusCode, body)
	}
	if !strings.Contains(string(body), `"redis"`) || strings.Contains(string(body), "10.0.0.7") || strings.Contains(string(body), "metadata") {
		t.Errorf("readyz body %s: want the failing dependency named, nothing else", body)
	}
	if err := runHealth(ctx, []string{"-q", srv.URL + "/healthz"}); err != nil {
		t.Errorf("liveness must not follow a dependency: %v", err)
	}
}
