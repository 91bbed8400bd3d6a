package ringflake

import (
	"errors"
	"log/slog"
	"sync/atomic"
	"time"
)

// Stats is a snapshot of a generator's counters since New, from
// [Generator.Stats].
type Stats struct {
	// Issued counts the IDs issued.
	Issued uint64
	// StepBacks counts the times the clock was seen more than one tick
	// behind the latest time it had shown. A step back counts once: the
	// next one counts after the clock has passed that latest time again.
	// A caller that read the clock just before a step and is scheduled
	// just after it raises the latest time a little, and the step then
	// counts again: the count is of steps seen, not a clock's history.
	StepBacks uint64
	// LargestStepBack is the furthest the clock was seen behind the latest
	// time it had shown, rounded down to whole ticks.
	LargestStepBack time.Duration
	// SpareIssued counts the IDs issued while the clock was more than one
	// tick behind the latest time it had shown: IDs served from the spare
	// sequence space the ring keeps, where a strict Snowflake would fail.
	SpareIssued uint64
	// Waits counts the calls that waited, and WaitTime their total wait.
	Waits    uint64
	WaitTime time.Duration
	// LongestWait is the longest that one call waited.
	LongestWait time.Duration
	// StartWait is how long New took to get its machine ID: the source's
	// answer, with a lease the wait for an ID of a full range to free and
	// for the clock to pass the mark the lease inherited. 0 for a fixed
	// machine ID.
	StartWait time.Duration
	// Failed counts failed calls by the sentinel their error wraps.
	Failed struct {
		BeforeEpoch, TimeOverflow, ClockBehind, SequenceExhausted, MarkAhead, LeaseLost uint64
	}
}

// counters are the generator's statistics. They are written only off the
// path that issues in the common case: Issued is derived from the ring, and
// the rest change on step backs, waits and errors. Each field is written by
// whichever caller observes the event, and read by Stats.
type counters struct {
	_           [64]byte     // keeps the slow-path counters off the cache line of the hot fields before them
	stepMark    atomic.Int64 // the latest tick at which a step back was last counted
	stepBacks   atomic.Uint64
	largestBack atomic.Int64 // in ticks
	spare       atomic.Uint64
	waits       atomic.Uint64
	waitNanos   atomic.Int64
	longestWait atomic.Int64 // ns
	errs        [errKinds]atomic.Uint64
	issued      atomic.Uint64 // the largest Issued reported so far, so snapshots never go down
}

const (
	errBeforeEpoch = iota
	errTimeOverflow
	errClockBehind
	errExhausted
	errMarkAhead
	errLeaseLost
	errKinds
)

// Stats returns a snapshot of the generator's counters. Counters are read
// one by one while callers keep issuing, so a snapshot taken under load may
// be off by about one tick's IDs; Issued never goes down from one snapshot
// to the next. Issued counts sequences claimed, including the few a call
// drops when a leased machine ID changes under it, and the share a round's
// leader claimed for a follower whose context ended while it waited. Stats
// does not allocate; it reads every ring
// slot, about 2 µs for the default 4096.
func (g *Generator) Stats() Stats {
	if g == nil || g.clock == nil && g.wall == nil {
		return Stats{}
	}
	c := &g.stats
	s := Stats{
		Issued:          c.monotonic(g.ring.issued()),
		StepBacks:       c.stepBacks.Load(),
		LargestStepBack: time.Duration(c.largestBack.Load()) * g.layout.Tick,
		SpareIssued:     c.spare.Load(),
		Waits:           c.waits.Load(),
		WaitTime:        time.Duration(c.waitNanos.Load()),
		LongestWait:     time.Duration(c.longestWait.Load()),
		StartWait:       g.startWait,
	}
	e, f := &c.errs, &s.Failed
	f.BeforeEpoch, f.TimeOverflow = e[errBeforeEpoch].Load(), e[errTimeOverflow].Load()
	f.ClockBehind, f.SequenceExhausted = e[errClockBehind].Load(), e[errExhausted].Load()
	f.MarkAhead, f.LeaseLost = e[errMarkAhead].Load(), e[errLeaseLost].Load()
	return s
}

// monotonic returns the larger of n and every count reported before. The
// ring's count is read slot by slot while slots are reused, so on its own it
// can dip by a tick's worth; a counter that goes down looks like a restart
// to a monitoring system.
func (c *counters) monotonic(n uint64) uint64 {
	for {
		old := c.issued.Load()
		if n <= old {
			return old
		}
		if c.issued.CompareAndSwap(old, n) {
			return n
		}
	}
}

// count records err under its kind and returns it.
func (g *Generator) count(err error) error {
	k := -1
	switch {
	case errors.Is(err, ErrClockBeforeEpoch):
		k = errBeforeEpoch
	case errors.Is(err, ErrTimeOverflow):
		k = errTimeOverflow
	case errors.Is(err, ErrClockBehind):
		k = errClockBehind
	case errors.Is(err, ErrSequenceExhausted):
		k = errExhausted
	case errors.Is(err, ErrMarkAhead):
		k = errMarkAhead
	case errors.Is(err, ErrLeaseLost):
		k = errLeaseLost
	}
	if k >= 0 {
		g.stats.errs[k].Add(1)
	}
	return err
}

// waited records one call's total wait, and logs a long one that ended in
// an ID; one that ended in an error is the error's to explain.
func (g *Generator) waited(d time.Duration, ok bool) {
	g.stats.waits.Add(1)
	g.stats.waitNanos.Add(int64(d))
	// Invariant: longestWait only grows. A CAS that fails saw another
	// caller raise it; going round re-reads it, and stops once it is at
	// least d.
	for {
		old := g.stats.longestWait.Load()
		if int64(d) <= old || g.stats.longestWait.CompareAndSwap(old, int64(d)) {
			break
		}
	}
	if ok && g.logger != nil && d >= longWait {
		g.log(logLongWait, slog.Duration("by", d), slog.Int64("machine", g.state.Load().machine))
	}
}
