package ringflake

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"
)

// EventKind says what an [Event] reports.
type EventKind int

const (
	// EventStepBack: the clock was seen behind the latest time it had
	// shown, by Event.By.
	EventStepBack EventKind = iota + 1
	// EventLongWait: a call waited Event.By, at least the long-wait
	// threshold, before it returned.
	EventLongWait
	// EventLeaseLost: the machine ID's lease can no longer be proven; the
	// generator issues nothing until it is regained.
	EventLeaseLost
	// EventLeaseRegained: a lease is held again, on Event.Machine.
	EventLeaseRegained
)

// String returns the kind's name, such as "step_back".
func (k EventKind) String() string {
	switch k {
	case EventStepBack:
		return "step_back"
	case EventLongWait:
		return "long_wait"
	case EventLeaseLost:
		return "lease_lost"
	case EventLeaseRegained:
		return "lease_regained"
	}
	return "unknown"
}

// Event is something an operator may want to see, delivered to the func
// given to [WithEvents].
type Event struct {
	Kind EventKind
	// By is the size of a step back, or the length of a long wait.
	By time.Duration
	// Machine is the machine ID the generator issued with when it happened.
	Machine int64
	// Suppressed counts the events of this kind dropped by the rate limit
	// since the last one delivered.
	Suppressed uint64
}

const (
	// DefaultEventInterval is the least time between two delivered events
	// of one kind when WithEventInterval is not given.
	DefaultEventInterval = time.Second
	// DefaultLongWait is the shortest wait reported as EventLongWait when
	// WithLongWait is not given.
	DefaultLongWait = 10 * time.Millisecond
)

// events delivers rate-limited events; nil when WithEvents is not given.
type events struct {
	fn       func(Event)   // written once by New
	interval time.Duration // written once by New
	longWait time.Duration // written once by New
	born     time.Time     // monotonic origin for last; written once by New
	kinds    [5]struct {
		last       atomic.Int64 // ns since born of the last delivery, or 0
		suppressed atomic.Uint64
	}
}

// WithEvents makes the generator call fn for step backs, long waits and lease
// changes, at most once per event interval for each kind (see
// [WithEventInterval]), so a flapping clock cannot flood a log. fn runs on
// the goroutine that saw the event: inside a NextID call for step backs
// and long waits, on the lease's own goroutine for lease changes. It must
// be quick and must not call the generator. [SlogEvents] is a ready fn for
// log/slog.
func WithEvents(fn func(Event)) Option {
	return optionFunc(func(c *config) { c.events, c.eventsSet = fn, true })
}

// WithEventInterval sets the least time between two delivered events of one
// kind; events in between are counted in the next one's Suppressed. The
// default is [DefaultEventInterval]; it must be positive.
func WithEventInterval(d time.Duration) Option {
	return optionFunc(func(c *config) { c.eventInterval = d })
}

// WithLongWait sets the shortest wait reported as [EventLongWait]; the
// default is [DefaultLongWait]; it must be positive.
func WithLongWait(d time.Duration) Option {
	return optionFunc(func(c *config) { c.longWait = d })
}

// emit delivers e unless its kind was delivered less than an interval ago.
// Only the caller whose CAS claims the slot in time delivers; the others
// count themselves as suppressed.
func (g *Generator) emit(e Event) {
	ev := g.events
	if ev == nil || int(e.Kind) >= len(ev.kinds) {
		return
	}
	k := &ev.kinds[e.Kind]
	now := int64(time.Since(ev.born)) + 1 // +1: 0 means never delivered
	last := k.last.Load()
	if last != 0 && now-last < int64(ev.interval) || !k.last.CompareAndSwap(last, now) {
		k.suppressed.Add(1)
		return
	}
	e.Suppressed = k.suppressed.Swap(0)
	if e.Kind == EventStepBack || e.Kind == EventLongWait {
		e.Machine = g.MachineID()
	}
	ev.fn(e)
}

// SlogEvents returns a func for [WithEvents] that logs each event to
// logger, or to [slog.Default] at the time of the event if logger is nil:
// step backs, long waits and lost leases at Warn, regained leases at Info.
func SlogEvents(logger *slog.Logger) func(Event) {
	return func(e Event) {
		logger := logger
		if logger == nil {
			logger = slog.Default()
		}
		level := slog.LevelWarn
		if e.Kind == EventLeaseRegained {
			level = slog.LevelInfo
		}
		logger.LogAttrs(context.Background(), level, "ringflake: "+e.Kind.String(),
			slog.Duration("by", e.By), slog.Int64("machine", e.Machine),
			slog.Uint64("suppressed", e.Suppressed))
	}
}
