package ringflake

import (
	"math"
	"sync/atomic"
	"time"
)

// wallResync is how often the default clock re-reads the wall clock.
const wallResync = time.Millisecond

// wallClock is the default clock: wall-clock time read cheaply. A full
// time.Now reads both the wall and the monotonic clock (about 50-65 ns); a
// monotonic-only read (time.Since) costs about half. wallClock adds to a
// monotonic reading the offset between the two clocks, and re-reads the wall
// clock at most every wallResync to refresh that offset.
//
// The trade-off: a step of the wall clock is seen up to wallResync late.
// Until then IDs follow the monotonic clock, which never goes back, so the
// delay costs no uniqueness; the step then reaches the ring like any other.
type wallClock struct {
	base   time.Time    // a reading with a monotonic part; written once by newWallClock
	offset atomic.Int64 // wall ns since Unix epoch minus monotonic ns since base; written by resync
	next   atomic.Int64 // monotonic ns since base at which to resync; advanced by CAS in resync
}

func newWallClock() *wallClock {
	c := &wallClock{base: time.Now()}
	c.offset.Store(c.base.UnixNano())
	c.next.Store(int64(wallResync))
	return c
}

// unixNano returns wall-clock nanoseconds since the Unix epoch.
// Generator.fast has its own copy of these lines (the compiler will not
// inline them); a change here belongs there too.
func (c *wallClock) unixNano() int64 {
	m := int64(time.Since(c.base))
	if m >= c.next.Load() {
		c.resync(m)
	}
	return m + c.offset.Load()
}

// resync refreshes the offset. Only the caller whose CAS moves next forward
// reads the wall clock, so a crowd arriving at the same instant pays for one
// time.Now between them; the others keep the previous offset, which is at
// most one interval old.
//
// time.Now reads the wall clock and then the monotonic clock; a thread
// descheduled between the two would compute an offset that is too small,
// which looks like a step back. A monotonic reading taken just before
// bounds that error by now's monotonic part minus it, so a resync that took
// longer than resyncSkew is dropped and the next caller tries again.
//
// The error only ever makes the offset too small, so an offset that comes
// out below the current one by no more than resyncSkew is noise, not a
// step back, and is not stored: otherwise one goroutine could read a time
// up to resyncSkew earlier than its previous reading, across a tick
// boundary, and get an ID lower than its last one from a clock that never
// went back. A real step back by less than resyncSkew is ignored with it;
// IDs then run at most resyncSkew ahead of the wall clock.
func (c *wallClock) resync(m int64) {
	n := c.next.Load()
	if m < n || !c.next.CompareAndSwap(n, m+int64(wallResync)) {
		return
	}
	before := int64(time.Since(c.base))
	now := time.Now()
	mono := int64(now.Sub(c.base))
	if mono-before > int64(resyncSkew) {
		c.next.CompareAndSwap(m+int64(wallResync), mono) // let the next caller try again
		return
	}
	// A CAS, not a load and a store: two resyncs may overlap (one
	// descheduled for a whole wallResync), and the later-stored offset
	// must still be one that acceptOffset let replace the one before it.
	off := now.UnixNano() - mono
	for {
		old := c.offset.Load()
		if !acceptOffset(old, off) || c.offset.CompareAndSwap(old, off) {
			return
		}
	}
}

// acceptOffset reports whether a resync's offset off replaces old: a later
// one always does, an earlier one only if it is earlier by more than the
// measurement's error bound, that is, a real step back.
func acceptOffset(old, off int64) bool {
	return off >= old || off < old-int64(resyncSkew)
}

// resyncSkew is the largest uncertainty a resync accepts in the offset.
const resyncSkew = 20 * time.Microsecond

// reading is one clock reading: the injected clock's time, or the default
// clock's Unix nanoseconds, which become a time.Time only if an error needs
// one.
type reading struct {
	t    time.Time
	ns   int64
	wall bool
}

func (r reading) time() time.Time {
	if r.wall {
		return time.Unix(0, r.ns).UTC()
	}
	return r.t
}

// read reads the clock once and returns the reading and its offset from the
// epoch, saturating like time.Time.Sub.
func (g *Generator) read() (reading, time.Duration) {
	if g.wall == nil {
		t := g.clock()
		return reading{t: t}, t.Sub(g.layout.Epoch)
	}
	ns := g.wall.unixNano()
	return reading{ns: ns, wall: true}, subSat(ns, g.epochNano)
}

// subSat returns a-b, saturated to the int64 range.
func subSat(a, b int64) time.Duration {
	d := a - b
	if (a >= 0) != (b >= 0) && (d >= 0) != (a >= 0) {
		if a >= 0 {
			return math.MaxInt64
		}
		return math.MinInt64
	}
	return time.Duration(d)
}
