package bench

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// writeStat writes a fake /proc/<pid>/stat under root, its command name comm and the given
// utime and stime ticks (fields 14 and 15).
func writeStat(t *testing.T, root string, pid int, comm, utime, stime string) {
	t.Helper()
	dir := filepath.Join(root, strconv.Itoa(pid))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// A real line's shape: pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt
	// majflt cmajflt utime stime cutime cstime priority nice threads …
	line := strconv.Itoa(pid) + " (" + comm + ") S 1 2 3 0 -1 4194560 100 0 0 0 " + utime + " " + stime + " 7 8 20 0 12 0 555 0"
	if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(line+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestReadProcCPU(t *testing.T) {
	root := t.TempDir()
	// A command name with spaces and parentheses: fields are counted from the last ')'.
	writeStat(t, root, 42, "queues (api) x", "1234", "566")
	got, err := readProcCPU(root, 42)
	if err != nil {
		t.Fatal(err)
	}
	if want := 18 * time.Second; got != want { // (1234 + 566) ticks of 1/100 s
		t.Fatalf("read %v, want %v", got, want)
	}
	if _, err := readProcCPU(root, 43); err == nil {
		t.Fatal("a missing process read without error")
	}
	for _, bad := range []string{"", "42 no name", "42 (x) S 1 2 3", "42 (x) S 1 2 3 0 -1 4194560 100 0 0 0 12a 5 7"} {
		if _, err := parseProcStat([]byte(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestCPUMeterPerMessage(t *testing.T) {
	root := t.TempDir()
	m := newCPUMeter(root, []NamedPID{{Name: "api", PID: 7}, {Name: "redis", PID: 8}, {Name: "gone", PID: 9}})
	m.procs[0].PID = 6 // the generator, faked too
	writeStat(t, root, 6, "queues", "100", "0")
	writeStat(t, root, 7, "queues", "200", "100")
	writeStat(t, root, 8, "redis-server", "50", "50")
	before := m.snapshot()
	writeStat(t, root, 6, "queues", "150", "0")   // +0.5 s
	writeStat(t, root, 7, "queues", "300", "200") // +2 s
	writeStat(t, root, 8, "redis-server", "75", "75")
	got := m.since(before, 50_000)
	want := []ProcessCPU{
		{Name: SelfName, PID: 6, Seconds: 0.5, USPerMsg: 10},
		{Name: "api", PID: 7, Seconds: 2, USPerMsg: 40},
		{Name: "redis", PID: 8, Seconds: 0.5, USPerMsg: 10},
	}
	for i, w := range want {
		if got[i] != w {
			t.Errorf("%d: %+v, want %+v", i, got[i], w)
		}
	}
	if got[3].Name != "gone" || got[3].Error == "" || got[3].USPerMsg != 0 {
		t.Errorf("a process that cannot be read: %+v", got[3])
	}
}

func TestParseCPUPIDs(t *testing.T) {
	got, err := ParseCPUPIDs(" api=12, redis=34,,pusher-1=5 ")
	if err != nil {
		t.Fatal(err)
	}
	want := []NamedPID{{"api", 12}, {"redis", 34}, {"pusher-1", 5}}
	if len(got) != len(want) {
		t.Fatalf("%+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if got, err := ParseCPUPIDs(""); err != nil || len(got) != 0 {
		t.Errorf("empty: %v %v", got, err)
	}
	for _, bad := range []string{"api", "api=", "api=x", "api=0", "api=-3", "a pi=3", "a_b=3", "bench=3", "api=1,api=2", "=4"} {
		if _, err := ParseCPUPIDs(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
