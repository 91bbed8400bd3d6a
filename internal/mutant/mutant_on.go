//go:build ringflake_mutant

package mutant

import (
	"sync/atomic"
	"time"
)

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

// delayer is the simulation's lengthening of the engine's timers, nil for
// none; written by SetDelay while no world runs, read by Delay.
var delayer atomic.Pointer[func(time.Duration) time.Duration]

// Delay returns how long a timer the engine sets for d runs: the
// simulation lengthens it by a few nanoseconds, so that no two timers
// fire at the same instant of virtual time, where testing/synctest fires
// them in a random order (see internal/leasesim's delay).
func Delay(d time.Duration) time.Duration {
	if f := delayer.Load(); f != nil {
		return (*f)(d)
	}
	return d
}

// SetDelay sets the function Delay runs, nil for none, and reports that
// this build can.
func SetDelay(f func(time.Duration) time.Duration) bool {
	if f == nil {
		delayer.Store(nil)
		return true
	}
	delayer.Store(&f)
	return true
}
