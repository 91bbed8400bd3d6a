// Package fakeclock provides clocks for tests: a manual clock that moves
// only when told, and a scripted clock that replays a sequence of readings.
package fakeclock

import (
	"sync"
	"sync/atomic"
	"time"
)

// Clock is a manual clock. Now returns the current reading; Set, Add and
// Step change it. It is safe for concurrent use.
type Clock struct {
	ns atomic.Int64 // nanoseconds since the Unix epoch
}

// New returns a Clock reading t.
func New(t time.Time) *Clock {
	c := &Clock{}
	c.Set(t)
	return c
}

// Now returns the current reading.
func (c *Clock) Now() time.Time { return time.Unix(0, c.ns.Load()).UTC() }

// Set moves the clock to t, forwards or backwards.
func (c *Clock) Set(t time.Time) { c.ns.Store(t.UnixNano()) }

// Add moves the clock by d, which may be negative.
func (c *Clock) Add(d time.Duration) { c.ns.Add(int64(d)) }

// Script is a clock that returns its readings in order, one per call, and
// then repeats the last one. It is safe for concurrent use: concurrent
// callers each get a distinct step of the script.
type Script struct {
	mu    sync.Mutex // protects times and i
	times []time.Time
	i     int
}

// NewScript returns a Script replaying times; it must not be empty.
func NewScript(times ...time.Time) *Script {
	return &Script{times: times}
}

// Now returns the next reading.
func (s *Script) Now() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.times[s.i]
	if s.i < len(s.times)-1 {
		s.i++
	}
	return t
}

// Ticker is a clock that advances by a fixed step on every reading, so a
// caller waiting for the next tick never waits long in real time.
type Ticker struct {
	ns   atomic.Int64
	step int64
}

// NewTicker returns a Ticker starting at t and moving step per reading.
func NewTicker(t time.Time, step time.Duration) *Ticker {
	k := &Ticker{step: int64(step)}
	k.ns.Store(t.UnixNano())
	return k
}

// Now returns the current reading and advances the clock.
func (k *Ticker) Now() time.Time { return time.Unix(0, k.ns.Add(k.step)-k.step).UTC() }
