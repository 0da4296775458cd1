package api

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// Drainable is a server's handler together with the way to make its waiting receives answer.
type Drainable interface {
	Handler() http.Handler
	// Drain makes waiting receives answer now (the first step of a graceful shutdown).
	Drain()
}

// MaxHeaderBytes bounds a request's header block (net/http allows 4 KiB of slack on top).
const MaxHeaderBytes = 64 << 10

// Timeouts are the server's connection deadlines.
type Timeouts struct {
	// ReadHeader bounds a request's header block (slowloris: X35).
	ReadHeader time.Duration
	// Read bounds a whole request, body included (a body without end: X37).
	Read time.Duration
	// Write bounds a request's handling and answer.
	Write time.Duration
	// Idle closes a kept-alive connection with no request in progress (X38).
	Idle time.Duration
}

// DefaultTimeouts are production's: a long poll waits up to 20 s and then still answers
// within Write; an idle keep-alive connection holds a goroutine and a descriptor, so it is
// closed after two minutes (longer than the idle timeouts clients' pools use).
var DefaultTimeouts = Timeouts{ReadHeader: 5 * time.Second, Read: 30 * time.Second, Write: 60 * time.Second, Idle: 120 * time.Second}

// Serve serves HTTP on ln until ctx ends, then shuts down gracefully: waiting receives answer,
// requests in progress finish (up to grace), and new connections are refused. The API tier
// (services/queues/stack) and serve (services/queues/embedded) both run this, with DefaultTimeouts.
func Serve(ctx context.Context, ln net.Listener, d Drainable, grace time.Duration, log *slog.Logger) error {
	return ServeTimeouts(ctx, ln, d, DefaultTimeouts, grace, log)
}

// ServeTimeouts is Serve with other connection deadlines (tests shorten them to see them fire).
func ServeTimeouts(ctx context.Context, ln net.Listener, d Drainable, to Timeouts, grace time.Duration, log *slog.Logger) error {
	srv := &http.Server{
		Handler:           d.Handler(),
		ReadHeaderTimeout: to.ReadHeader,
		ReadTimeout:       to.Read,
		WriteTimeout:      to.Write,
		IdleTimeout:       to.Idle,
		// Go's default is 1 MB of headers per request; above this net/http answers 431.
		MaxHeaderBytes: MaxHeaderBytes,
		ErrorLog:       slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down: draining long polls and finishing requests", "grace", grace)
	d.Drain()
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	err := srv.Shutdown(sctx)
	if e := <-errc; !errors.Is(e, http.ErrServerClosed) && err == nil {
		err = e
	}
	return err
}
