// Package holderseed seeds the random choices of a *machineid.Holder, the
// jitter of its waits for a free machine ID, from outside package machineid:
// the lease simulation (internal/leasesim) draws every choice of a world
// from its seed, so that a failing seed replays. It is internal, so that
// nothing outside the module can make Holders choose alike.
package holderseed

// set is package machineid's setter, registered by its init.
var set func(src any, seed uint64) bool

// Register makes f the setter. Package machineid calls it once, in its
// init, before anything can call Set.
func Register(f func(src any, seed uint64) bool) { set = f }

// Set makes src, if it is a *machineid.Holder that has not called its store
// yet, draw its random choices from seed, and reports whether it was one.
func Set(src any, seed uint64) bool {
	return set != nil && set(src, seed)
}
