//go:build !ringflake_mutant

// Package mutant switches on the deliberately broken variants of the engine
// that internal/leasesim must catch. In this build, every release build, On
// is the constant false, so each hook's branch is compiled away and the
// broken code is in no binary; only a build with the tag ringflake_mutant
// can switch one on, and only a test of internal/leasesim does.
package mutant

import "time"

// On reports whether the mutant name is switched on: never, in this build.
func On(name string) bool { return false }

// Set switches the mutant name on (none for ""), and reports whether this
// build can: it cannot without the tag ringflake_mutant.
func Set(name string) bool { return name == "" }

// Yield marks a point where the simulation may perturb the schedule
// (internal/leasesim): nothing in this build, where it is an empty
// function that the compiler removes.
func Yield(site Site) {}

// SetYield sets the perturbation Yield runs, and reports whether this
// build can: it cannot without the tag ringflake_mutant.
func SetYield(f func(Site)) bool { return f == nil }

// Delay returns how long a timer the engine sets for d runs: d in this
// build, where it is inlined away.
func Delay(d time.Duration) time.Duration { return d }

// SetDelay sets the function Delay runs, and reports whether this build
// can: it cannot without the tag ringflake_mutant.
func SetDelay(f func(time.Duration) time.Duration) bool { return f == nil }
