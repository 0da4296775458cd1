// Package adminhttp is the operator's private listener (QUEUES_ADMIN_LISTEN): Prometheus
// metrics, with the Go runtime and process collectors, and net/http/pprof. It is kept off the
// public port because both describe the process to whoever asks — request rates, queue
// activity, memory, goroutine stacks — and pprof's CPU profile and trace cost CPU on demand.
package adminhttp

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// DefaultListen is the admin listener's default address: loopback only.
const DefaultListen = "127.0.0.1:9090"

// NewRegistry returns a registry holding the Go runtime and process collectors.
func NewRegistry() *prometheus.Registry {
	r := prometheus.NewRegistry()
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return r
}

// Handler serves /metrics from g, /healthz, and the pprof profiles under /debug/pprof/.
func Handler(g prometheus.Gatherer) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"ok"}`))
	})
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// Server is a running admin listener.
type Server struct {
	srv *http.Server
	ln  net.Listener
}

// Addr is the address it serves on ("" when not serving).
func (s *Server) Addr() string {
	if s == nil || s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// Close stops it.
func (s *Server) Close() error {
	if s == nil || s.srv == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return s.srv.Shutdown(ctx)
}

// Start serves Handler(g) on addr in the background. An explicitly configured address that
// cannot be bound is an error. The default address, when taken (another queues process on the
// same host, as in tests), is skipped with a warning: the service runs without its admin
// listener rather than not at all. addr "off" disables it; "" is the default.
func Start(addr string, explicit bool, g prometheus.Gatherer, log *slog.Logger) (*Server, error) {
	if addr == "off" {
		return &Server{}, nil
	}
	if addr == "" { // set but empty: the default, never every interface on a random port
		addr, explicit = DefaultListen, false
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		if explicit {
			return nil, err
		}
		log.Warn("the admin listener (metrics, pprof) is not serving: its default address is taken; set QUEUES_ADMIN_LISTEN",
			"addr", addr, "err", err)
		return &Server{}, nil
	}
	srv := &http.Server{
		Handler:           Handler(g),
		ReadHeaderTimeout: 5 * time.Second,
		// pprof's profile and trace run for ?seconds= (30 by default).
		WriteTimeout:   90 * time.Second,
		IdleTimeout:    120 * time.Second,
		MaxHeaderBytes: 64 << 10,
	}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("the admin listener stopped", "err", err)
		}
	}()
	log.Info("admin listener (metrics, pprof)", "url", "http://"+ln.Addr().String()+"/metrics")
	return &Server{srv: srv, ln: ln}, nil
}
