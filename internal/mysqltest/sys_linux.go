package mysqltest

import "syscall"

// dieWithParent makes the kernel kill the server when the test process
// dies, so a crashed test leaves no server behind.
func dieWithParent(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
