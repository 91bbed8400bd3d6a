//go:build ringflake_mutant

package mutant

import "sync/atomic"

// active is the mutant switched on, "" for none; written by Set before a
// simulation starts, read by the hooks.
var active atomic.Pointer[string]

// On reports whether the mutant name is switched on.
func On(name string) bool {
	p := active.Load()
	return p != nil && *p == name
}

// Set switches the mutant name on, "" for none, and reports that this build
// can.
func Set(name string) bool {
	active.Store(&name)
	return true
}
