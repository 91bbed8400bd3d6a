package ringflake

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"
)

// WithLogger makes the generator log what an operator may want to see, at
// most once a second for each kind, so that a flapping clock cannot flood a
// log: a step back of the clock, a call that waited 10 ms or more, a lease
// lost (with its cause) or regained, a lease's clock measured further from
// the store's reference than machineid.WithMaxClockOffset allows (it still
// issues), New's wait for an ID of a full range to free (with the store's
// account of its holders) and for the clock to pass the mark a leased
// machine ID inherited (with how long New expects to wait, until when, and
// the mark; a mark too far ahead for New's context fails New at once,
// unlogged), a release that New left to finish after it returned and that
// failed, and, once from New, a layout whose range ends within a year of
// the clock (with when and how long is left). Each record's message starts
// with "ringflake: " and its attributes carry the figures. A record after
// some of its kind were dropped by the rate limit has "suppressed", their
// count since the last one sent; a record without it stands for itself. A call that
// waited and then failed is not logged as a long wait: its error says why.
// Logging happens on the goroutine that saw the event, inside a NextID call
// or where the lease's changes are told, so a slow handler slows those
// calls, and delays the next lease change's telling, but never a renewal.
//
// nil, the default, logs nothing but New's waits that last a second or
// more, for a free machine ID or for the mark, which New notes once to
// slog.Default, since nothing else would show why New blocks; give
// WithLogger(slog.New(slog.DiscardHandler)) for silence. Every wait is
// counted in [Stats] (WaitTime, LongestWait, StartWait) and reported by the
// metrics modules.
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(c *config) { c.log = l })
}

// longWait is the shortest wait that is logged.
const longWait = 10 * time.Millisecond

// noticeAfter is the shortest wait of New's that is noted to slog.Default
// without WithLogger.
const noticeAfter = time.Second

// logInterval is the least time between two records of one kind.
const logInterval = time.Second

// The kinds of record, each rate-limited on its own.
const (
	logStepBack = iota
	logLongWait
	logLeaseLost
	logLeaseRegained
	logMarkWait
	logAboveWait
	logIDWait
	logClockOff
	logLayoutEnds
	logReleaseFailed
	logKinds
)

var logMessages = [logKinds]string{
	logStepBack:      "ringflake: clock stepped back",
	logLongWait:      "ringflake: long wait",
	logLeaseLost:     "ringflake: machine ID lease lost",
	logLeaseRegained: "ringflake: machine ID lease regained",
	logMarkWait:      "ringflake: waiting for the clock to pass the mark the machine ID's lease inherited",
	logAboveWait:     "ringflake: waiting for the clock to pass the tick of WithAbove's ID",
	logIDWait:        "ringflake: waiting for a machine ID: every ID in the range is held",
	logClockOff:      "ringflake: the clock is off the fleet's by more than the bound; IDs are still issued",
	logLayoutEnds:    "ringflake: the layout's range ends within a year; IDs fail with ErrTimeOverflow from then on",
	logReleaseFailed: "ringflake: releasing the machine ID's lease failed after New gave up on it",
}

// logger sends rate-limited records; nil without WithLogger.
type logger struct {
	l     *slog.Logger // written once by New
	born  time.Time    // monotonic origin for last; written once by New
	kinds [logKinds]struct {
		last       atomic.Int64 // ns since born of the last record, or 0
		suppressed atomic.Uint64
	}
}

// log sends a record of kind unless one was sent less than logInterval ago.
// Only the caller whose CAS claims the slot in time sends; the others count
// themselves as suppressed.
func (g *Generator) log(kind int, attrs ...slog.Attr) {
	lg := g.logger
	if lg == nil {
		return
	}
	k := &lg.kinds[kind]
	now := int64(time.Since(lg.born)) + 1 // +1: 0 means never sent
	last := k.last.Load()
	if last != 0 && now-last < int64(logInterval) || !k.last.CompareAndSwap(last, now) {
		k.suppressed.Add(1)
		return
	}
	level := slog.LevelWarn
	if kind == logLeaseRegained {
		level = slog.LevelInfo
	}
	if n := k.suppressed.Swap(0); n > 0 {
		attrs = append(attrs, slog.Uint64("suppressed", n))
	}
	lg.l.LogAttrs(context.Background(), level, logMessages[kind], attrs...)
}

// notice logs a wait of New's of kind, which will last wait, to the logger
// of WithLogger, or without one, if wait is a second or more, to
// slog.Default. New calls it once for each wait.
func (g *Generator) notice(kind int, wait time.Duration, attrs ...slog.Attr) {
	switch {
	case g.logger != nil:
		g.log(kind, attrs...)
	case wait >= noticeAfter:
		slog.Default().LogAttrs(context.Background(), slog.LevelWarn, logMessages[kind], attrs...)
	}
}
