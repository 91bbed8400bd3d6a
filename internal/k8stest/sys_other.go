//go:build !linux

package k8stest

import "syscall"

func sysProcAttr() *syscall.SysProcAttr { return nil }
