// Package fakeclock provides clocks for tests: a manual clock that moves
// only when told, and a ticker that moves a fixed step on every reading.
package fakeclock

import (
	"sync/atomic"
	"time"
)

// Clock is a manual clock. Now returns the current reading; Set and Add
// change it. It is safe for concurrent use.
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
