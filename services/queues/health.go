package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/spf13/pflag"
)

// runHealth probes a Queues process's health endpoint and exits 0 only on a 200: the
// container healthcheck for distroless images, which have no shell, curl or wget. The URL
// names the endpoint (…/healthz for liveness, …/readyz for readiness); a URL with no path
// probes /healthz.
func runHealth(ctx context.Context, args []string) error {
	fs := pflag.NewFlagSet("health", pflag.ContinueOnError)
	timeout := fs.Duration("timeout", 3*time.Second, "how long to wait for the answer")
	quiet := fs.Bool("q", false, "print nothing on success")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: queues health [-timeout 3s] [-q] <url>   e.g. http://127.0.0.1:8080/readyz")
		fs.PrintDefaults()
	}
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return errors.New("want exactly one URL")
	}
	target, err := healthURL(fs.Arg(0))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return err
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", target, err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 512))
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %d: %s", target, res.StatusCode, body)
	}
	if !*quiet {
		fmt.Printf("%s: ok\n", target)
	}
	return nil
}

// healthURL checks the probe's URL and fills in /healthz when it has no path.
func healthURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%q: want an http(s) URL such as http://127.0.0.1:8080/readyz", raw)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/healthz"
	}
	return u.String(), nil
}
