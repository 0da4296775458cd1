package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/queueshq/queues/sdk/go/client"
)

// TestCLIVersion: `queues version` prints the SDK's version (text and JSON), needs no
// service, and the client commands name the CLI and the SDK, with that version, in their
// User-Agent.
func TestCLIVersion(t *testing.T) {
	run := func(env map[string]string, args ...string) (string, int) {
		var out, errb bytes.Buffer
		code := execute(context.Background(), args, cliIO{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, getenv: func(k string) string { return env[k] }})
		return out.String() + errb.String(), code
	}
	v := client.Version()
	out, code := run(nil, "version")
	if code != exitOK || !strings.HasPrefix(out, "queues "+v+" (go") {
		t.Fatalf("queues version: exit %d, %q; want queues %s (go…)", code, out, v)
	}
	out, code = run(nil, "version", "--json")
	var info versionInfo
	if code != exitOK || json.Unmarshal([]byte(out), &info) != nil || info.Version != v || info.UserAgent != cliUserAgent() {
		t.Fatalf("queues version --json: exit %d, %q", code, out)
	}
	if _, code = run(nil, "version", "extra"); code != exitUsage {
		t.Fatalf("queues version extra: exit %d, want %d", code, exitUsage)
	}

	uas := make(chan string, 1)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		uas <- r.Header.Get("User-Agent")
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"queues":[]}`))
	}))
	defer hs.Close()
	if out, code = run(map[string]string{client.EnvURL: hs.URL, client.EnvToken: "t"}, "queue", "list"); code != exitOK {
		t.Fatalf("queue list: exit %d: %s", code, out)
	}
	if got, want := <-uas, "queues-cli/"+v+" queues-go/"+v; got != want {
		t.Fatalf("User-Agent %q, want %q", got, want)
	}
}
