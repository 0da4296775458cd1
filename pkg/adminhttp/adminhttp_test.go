package adminhttp

import (
	"io"
	"log/slog"
	"net"
	"testing"
)

// A taken default address is skipped (the process still runs); a taken explicit one fails.
func TestStartTakenAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	s, err := Start(ln.Addr().String(), false, NewRegistry(), log)
	if err != nil || s.Addr() != "" {
		t.Fatalf("default address taken: %v, serving on %q; want skipped", err, s.Addr())
	}
	if _, err := Start(ln.Addr().String(), true, NewRegistry(), log); err == nil {
		t.Fatal("explicit address taken: no error")
	}
	s, err = Start("127.0.0.1:0", true, NewRegistry(), log)
	if err != nil || s.Addr() == "" {
		t.Fatalf("free address: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}
