package sqslegacy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// standalone is the `queues serve` target started when no targets are given.
var standalone *target

func TestMain(m *testing.M) {
	code := 0
	if os.Getenv("QUEUES_SQSLEGACY_TARGETS") == "" {
		tg, stop, err := startServe()
		if err != nil {
			fmt.Fprintln(os.Stderr, "sqslegacy:", err)
			os.Exit(1)
		}
		standalone = &tg
		code = m.Run()
		stop()
	} else {
		code = m.Run()
	}
	os.Exit(code)
}

func serveTarget(t *testing.T) target {
	t.Helper()
	if standalone == nil {
		t.Fatal("no target")
	}
	return *standalone
}

// startServe builds this repository's queues command, starts `queues serve` on a free port
// with a temporary data directory, and makes a project and token on it.
func startServe() (target, func(), error) {
	dir, err := os.MkdirTemp("", "sqslegacy-")
	if err != nil {
		return target{}, nil, err
	}
	fail := func(err error) (target, func(), error) { os.RemoveAll(dir); return target{}, nil, err }
	bin := filepath.Join(dir, "queues")
	build := exec.Command("go", "build", "-o", bin, "./services/queues")
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		return fail(fmt.Errorf("building queues: %v\n%s", err, out))
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fail(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	const op = "legacy-operator"
	cmd := exec.Command(bin, "serve", "-listen", addr, "-data-dir", filepath.Join(dir, "data"), "-operator-token", op, "-log-level", "error")
	cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
	if err := cmd.Start(); err != nil {
		return fail(err)
	}
	stop := func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); os.RemoveAll(dir) }
	url := "http://" + addr
	for deadline := time.Now().Add(30 * time.Second); ; {
		resp, err := http.Get(url + "/healthz")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			stop()
			return target{}, nil, fmt.Errorf("queues serve did not answer: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	var p struct{ ID, Slug string }
	var tok struct {
		Slug               string `json:"slug"`
		Token              string `json:"token"`
		SQSSecretAccessKey string `json:"sqsSecretAccessKey"`
	}
	err = post(url+"/v1/projects", op, map[string]any{"name": "legacy"}, &p)
	if err == nil {
		err = post(url+"/v1/projects/"+p.ID+"/tokens", op, map[string]any{"name": "legacy", "scopes": []string{"*"}}, &tok)
	}
	if err != nil {
		stop()
		return target{}, nil, err
	}
	return target{Name: "serve", URL: url, Project: p.Slug, Key: tok.Slug, Secret: tok.SQSSecretAccessKey, Bearer: tok.Token}, stop, nil
}

func post(url, bearer string, body, out any) error {
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", url, bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+bearer)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 201 {
		return fmt.Errorf("POST %s: %d", url, resp.StatusCode)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}
