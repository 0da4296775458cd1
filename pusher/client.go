package pusher

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"time"
)

// ClientOptions configure the outbound HTTP client.
type ClientOptions struct {
	// AllowPrivate lets pushes reach loopback and private addresses (development, tests).
	AllowPrivate bool
	// RootCAs, when not nil, replaces the system's roots (tests trust their own CA).
	RootCAs *x509.CertPool
}

// NewHTTPClient returns the client pushes go through: connections are reused and speak HTTP/2
// where the endpoint offers it; every dialled address passes CheckAddr (unless AllowPrivate);
// no proxy from the environment (it would bypass the check); redirects are not followed (a
// 3xx is an answer like any other status); TLS 1.2 at least, certificates verified.
// Per-request timeouts come from the request's context.
func NewHTTPClient(o ClientOptions) *http.Client {
	d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	if !o.AllowPrivate {
		d.Control = dialControl
	}
	tr := &http.Transport{
		Proxy:                  nil,
		DialContext:            d.DialContext,
		ForceAttemptHTTP2:      true,
		TLSClientConfig:        &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: o.RootCAs},
		TLSHandshakeTimeout:    10 * time.Second,
		MaxIdleConns:           1024,
		MaxIdleConnsPerHost:    128,
		IdleConnTimeout:        90 * time.Second,
		MaxResponseHeaderBytes: 64 << 10,
		ExpectContinueTimeout:  0,
	}
	return &http.Client{
		Transport:     tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
