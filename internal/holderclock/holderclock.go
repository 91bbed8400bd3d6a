// Package holderclock hands a clock to a *machineid.Holder from outside
// package machineid: ringflake.New gives a Holder the generator's clock
// (ringflake.WithClock), so that the lease's marks are read in the time the
// generator issues in, and the tests of the stores give one a fake clock.
// It is internal, so that the clock has one public setting.
package holderclock

import "time"

// set is package machineid's setter, registered by its init.
var set func(src any, clock func() time.Time) bool

// Register makes f the setter. Package machineid calls it once, in its
// init, before anything can call Set.
func Register(f func(src any, clock func() time.Time) bool) { set = f }

// Set makes clock the clock src reads its marks from, if src is a
// *machineid.Holder, and reports whether it was; nil means time.Now. It is
// safe for concurrent use, and takes effect from the Holder's next call to
// its store.
func Set(src any, clock func() time.Time) bool {
	return set != nil && set(src, clock)
}
