package localservers

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the kernel kill the server if the process that started it dies, so a
// killed test binary leaves no redis-server behind.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
