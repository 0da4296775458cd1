package pusher

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"time"

	"github.com/queueshq/queues/pkg/endpoint"
)

// ClientOptions configure the outbound HTTP client.
type ClientOptions struct {
	// AllowPrivate lets pushes reach loopback and private addresses (development, tests).
	AllowPrivate bool
	// RootCAs, when not nil, replaces the system's roots (tests trust their own CA).
	RootCAs *x509.CertPool
	// Resolver, when not nil, resolves endpoint names instead of the system's resolver. The
	// address check applies to whatever it answers, on every connection.
	Resolver *net.Resolver
}

// NewHTTPClient returns the client pushes go through: connections are reused and speak HTTP/2
// where the endpoint offers it; every dialled address passes endpoint.CheckAddr (unless AllowPrivate);
// no proxy from the environment: HTTPS_PROXY and the like are ignored, because through a proxy
// the dialled address is the proxy's and the check would never see the endpoint's (egress
// filtering belongs in the dialer here, or in the network); redirects are not followed (a
// 3xx is an answer like any other status); TLS 1.2 at least, certificates verified.
// Per-request timeouts come from the request's context.
func NewHTTPClient(o ClientOptions) *http.Client {
	d := newDialer(o)
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

// newDialer is the pushes' dialer: every address it connects to, after resolution, passes
// endpoint.DialControl unless private endpoints are allowed.
func newDialer(o ClientOptions) *net.Dialer {
	d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second, Resolver: o.Resolver}
	if !o.AllowPrivate {
		d.Control = endpoint.DialControl
	}
	return d
}
