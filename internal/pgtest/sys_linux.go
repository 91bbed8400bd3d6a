package pgtest

import "syscall"

// dieWithParent makes the kernel kill the postmaster when the test process
// dies, so a crashed test leaves no server behind; its backends then exit
// by themselves.
func dieWithParent(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
