package pgtest

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// dieWithParent makes the kernel kill the postmaster when the test process
// dies, so a crashed test leaves no server behind; its backends then exit
// by themselves.
func dieWithParent(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }

// children returns the process IDs of pid's children, from /proc. The
// postmaster's children each start a session of their own, so a signal to
// the postmaster's process group does not reach them.
func children(pid int) []int {
	dirs, _ := os.ReadDir("/proc")
	var kids []int
	for _, d := range dirs {
		child, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + d.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may hold spaces and parentheses.
		i := strings.LastIndexByte(string(stat), ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(stat[i+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			kids = append(kids, child)
		}
	}
	return kids
}
