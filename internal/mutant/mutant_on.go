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

// yielder is the simulation's perturbation of the schedule, nil for none;
// written by SetYield while no world runs, read by Yield.
var yielder atomic.Pointer[func(Site)]

// Yield lets the simulation perturb the schedule at site: yield the
// processor, or (at a site that holds no lock) wait a little.
func Yield(site Site) {
	if f := yielder.Load(); f != nil {
		(*f)(site)
	}
}

// SetYield sets the perturbation Yield runs, nil for none, and reports
// that this build can.
func SetYield(f func(Site)) bool {
	if f == nil {
		yielder.Store(nil)
		return true
	}
	yielder.Store(&f)
	return true
}
