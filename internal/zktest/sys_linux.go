package zktest

import "syscall"

// sysProcAttr makes the kernel kill a server when the test process dies,
// so a crashed test leaves no servers behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
