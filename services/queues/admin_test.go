package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// `queues serve` serves metrics (with the Go and process collectors) and pprof on the admin
// listener, and neither on the public port.
func TestServeAdminListener(t *testing.T) {
	s := startServe(t, "", "-admin-listen", "127.0.0.1:0")
	defer s.stop()
	if s.admin == "" {
		t.Fatal("serve printed no admin listener address")
	}
	if code, _ := get(t, s.url+"/healthz"); code != 200 {
		t.Fatalf("healthz: %d", code)
	}
	code, body := get(t, s.admin)
	if code != 200 {
		t.Fatalf("admin /metrics: %d", code)
	}
	for _, want := range []string{"queues_http_requests_total", "go_goroutines", "process_resident_memory_bytes"} {
		if !strings.Contains(body, want) {
			t.Errorf("admin /metrics lacks %s", want)
		}
	}
	base := strings.TrimSuffix(s.admin, "/metrics")
	if code, body := get(t, base+"/debug/pprof/"); code != 200 || !strings.Contains(body, "goroutine") {
		t.Errorf("admin pprof index: %d", code)
	}
	for _, path := range []string{"/metrics", "/debug/pprof/", "/debug/pprof/heap"} {
		if code, _ := get(t, s.url+path); code != 404 {
			t.Errorf("public %s: %d; want 404", path, code)
		}
	}
}
