package bench

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// CPU per message per process: the generator reads the user and system CPU time of the
// processes it is told about (the API, Redis, the pusher, serve…) and of itself from
// /proc/<pid>/stat before and after each timed phase, and reports what each spent per
// message. On a 2-core machine shared by the generator, the service and Redis, throughput
// alone cannot say which process a change made cheaper; CPU per message can.

// SelfName is the name the generator's own CPU is reported under.
const SelfName = "bench"

// userHZ is the unit of /proc/<pid>/stat's utime and stime: USER_HZ, 100 on every Linux
// architecture the service runs on (it is part of the kernel's ABI, not CONFIG_HZ).
const userHZ = 100

// NamedPID is a process whose CPU the generator reports, by the name it is reported under.
type NamedPID struct {
	Name string
	PID  int
}

// ParseCPUPIDs reads "name=pid,name=pid" (as -cpu-pids takes it). Names are letters, digits
// and '-' (they become metric names); the generator's own name and repeated names are refused.
func ParseCPUPIDs(s string) ([]NamedPID, error) {
	var out []NamedPID
	seen := map[string]bool{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, pidText, ok := strings.Cut(item, "=")
		if !ok {
			return nil, fmt.Errorf("cpu-pids %q: want name=pid", item)
		}
		if !validProcName(name) {
			return nil, fmt.Errorf("cpu-pids %q: the name must be letters, digits and '-'", item)
		}
		if name == SelfName {
			return nil, fmt.Errorf("cpu-pids %q: %q is the generator's own name", item, SelfName)
		}
		if seen[name] {
			return nil, fmt.Errorf("cpu-pids: %q named twice", name)
		}
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid <= 0 {
			return nil, fmt.Errorf("cpu-pids %q: the pid must be a positive number", item)
		}
		seen[name] = true
		out = append(out, NamedPID{Name: name, PID: pid})
	}
	return out, nil
}

func validProcName(s string) bool {
	if s == "" || len(s) > 32 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return true
}

// readProcCPU returns the user + system CPU time that process pid (all its threads) has
// used, from <procRoot>/<pid>/stat.
func readProcCPU(procRoot string, pid int) (time.Duration, error) {
	b, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, err
	}
	return parseProcStat(b)
}

// parseProcStat reads utime and stime (fields 14 and 15, in USER_HZ ticks) from the text of
// a /proc/<pid>/stat. The command name (field 2, in parentheses) may hold spaces and
// parentheses itself, so the fields are counted from the last ')'.
func parseProcStat(b []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("proc stat: no command name")
	}
	fields := strings.Fields(string(b[i+1:]))
	// fields[0] is field 3 (state): utime is field 14, stime field 15.
	if len(fields) < 13 {
		return 0, fmt.Errorf("proc stat: %d fields after the name, want at least 13", len(fields))
	}
	utime, err1 := strconv.ParseUint(fields[11], 10, 64)
	stime, err2 := strconv.ParseUint(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("proc stat: utime %q, stime %q", fields[11], fields[12])
	}
	return time.Duration(utime+stime) * time.Second / userHZ, nil
}

// ProcessCPU is one process's CPU over one phase.
type ProcessCPU struct {
	Name    string  `json:"name"`
	PID     int     `json:"pid"`
	Seconds float64 `json:"seconds"`
	// USPerMsg is Seconds in microseconds divided by the phase's messages.
	USPerMsg float64 `json:"usPerMsg"`
	// Error says why the process could not be read (it ended, or this is not Linux).
	Error string `json:"error,omitempty"`
}

// cpuMeter reads the CPU of a fixed set of processes, the generator first.
type cpuMeter struct {
	procRoot string
	procs    []NamedPID
}

func newCPUMeter(procRoot string, pids []NamedPID) *cpuMeter {
	if procRoot == "" {
		procRoot = "/proc"
	}
	return &cpuMeter{procRoot: procRoot, procs: append([]NamedPID{{Name: SelfName, PID: os.Getpid()}}, pids...)}
}

// cpuSnapshot is every process's CPU time at one moment (an error for one that could not be
// read).
type cpuSnapshot struct {
	used []time.Duration
	errs []error
}

func (m *cpuMeter) snapshot() cpuSnapshot {
	s := cpuSnapshot{used: make([]time.Duration, len(m.procs)), errs: make([]error, len(m.procs))}
	for i, p := range m.procs {
		s.used[i], s.errs[i] = readProcCPU(m.procRoot, p.PID)
	}
	return s
}

// since reports each process's CPU between before and now, per message of msgs.
func (m *cpuMeter) since(before cpuSnapshot, msgs int64) []ProcessCPU {
	after := m.snapshot()
	out := make([]ProcessCPU, len(m.procs))
	for i, p := range m.procs {
		pc := ProcessCPU{Name: p.Name, PID: p.PID}
		switch {
		case before.errs[i] != nil:
			pc.Error = before.errs[i].Error()
		case after.errs[i] != nil:
			pc.Error = after.errs[i].Error()
		default:
			d := after.used[i] - before.used[i]
			pc.Seconds = d.Seconds()
			if msgs > 0 {
				pc.USPerMsg = float64(d.Microseconds()) / float64(msgs)
			}
		}
		out[i] = pc
	}
	return out
}
