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

// defineHealth defines health, which probes a Queues process's health endpoint and exits 0 only on a 200: the
// container healthcheck for distroless images, which have no shell, curl or wget. The URL
// names the endpoint (…/healthz for liveness, …/readyz for readiness); a URL with no path
// probes /healthz.
func defineHealth(fs *pflag.FlagSet) operatorRun {
	timeout := fs.Duration("timeout", 3*time.Second, "how long to wait for the answer")
	quiet := fs.Bool("q", false, "print nothing on success")
	return func(ctx context.Context, args []string) error { return probeHealth(ctx, args, *timeout, *quiet) }
}

func probeHealth(ctx context.Context, args []string, timeout time.Duration, quiet bool) error {
	if len(args) != 1 {
		return errors.New("want exactly one URL (usage: queues health [--timeout 3s] [-q] <url>, e.g. http://127.0.0.1:8080/readyz)")
	}
	target, err := healthURL(args[0])
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
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
	if !quiet {
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
