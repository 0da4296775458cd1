package bench

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
)

// renice sets this process's nice value. Linux keeps one per thread, and a new thread takes
// its creator's: every thread there is now is set (the runtime's later threads inherit it).
func renice(nice int) error {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		// No /proc: the process-wide call is all there is.
		return syscall.Setpriority(syscall.PRIO_PROCESS, 0, nice)
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, nice); err != nil {
			return fmt.Errorf("nice %d: %w", nice, err)
		}
	}
	return nil
}
