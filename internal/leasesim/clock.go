package leasesim

import (
	"sync"
	"sync/atomic"
	"time"
)

// quantum is the step in which the simulated wall clocks read. It is above
// the generator's precise-sleep threshold (2 ms), so that every wait for a
// tick is a plain timer, which virtual time can advance: the precise sleep
// yields the processor until the clock shows the tick, and in virtual time
// no clock moves while a goroutine runs. Readings still fall inside ticks
// (four to a 10 ms tick), not only on their starts.
const quantum = 2500 * time.Microsecond

// clock is one host's wall clock: the virtual time plus an offset that
// steps back and forth, read in steps of quantum from the epoch. A pause
// makes the next reading block for its length and then return the time it
// read before, as a goroutine stopped by a GC pause or SIGSTOP between its
// reading and its use of it would. The generator and the Holder read the
// same clock (ringflake.WithClock hands it over). Safe for concurrent use.
type clock struct {
	epoch  time.Time    // the layout's epoch; readings are quantum steps from it
	offset atomic.Int64 // ns ahead of the virtual time; written by the world's clock driver
	pause  atomic.Int64 // ns the next reading blocks for; 0 for none
	moved  atomic.Int64 // virtual Unix ns of the latest step of offset
	p      *proc        // whose clock, for the record of pauses

	mu     sync.Mutex // protects paused
	paused []span     // the pauses so far, in virtual time
}

// span is an interval of virtual time.
type span struct{ from, to time.Time }

// now reads the clock.
func (c *clock) now() time.Time {
	t := c.read()
	if d := time.Duration(c.pause.Swap(0)); d > 0 {
		from := time.Now()
		c.mu.Lock()
		c.paused = append(c.paused, span{from, from.Add(d)})
		c.mu.Unlock()
		c.p.w.log.add(c.p.name(), "paused %v in a clock reading", d)
		time.Sleep(c.p.w.delay(d))
	}
	return t
}

// read is a reading without a pause.
func (c *clock) read() time.Time {
	d := time.Now().Add(time.Duration(c.offset.Load())).Sub(c.epoch)
	if d < 0 {
		d -= quantum - 1 // round down, not toward zero
	}
	return c.epoch.Add(d / quantum * quantum)
}

// pausedDuring returns how much of from..to this clock's pauses took: a
// call's bound is checked on the rest, since a pause stops the caller as
// it would the whole process.
func (c *clock) pausedDuring(from, to time.Time) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	var d time.Duration
	for _, s := range c.paused {
		lo, hi := s.from, s.to
		if lo.Before(from) {
			lo = from
		}
		if hi.After(to) {
			hi = to
		}
		if hi.After(lo) {
			d += hi.Sub(lo)
		}
	}
	return d
}
