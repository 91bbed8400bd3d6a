//go:build !linux

package pgtest

import "syscall"

// dieWithParent does nothing where the kernel has no parent-death signal.
func dieWithParent(*syscall.SysProcAttr) {}

// children returns nothing where there is no /proc to read: signals then
// reach the postmaster's process group only.
func children(int) []int { return nil }
