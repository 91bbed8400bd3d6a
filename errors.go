package ringflake

import (
	"errors"
	"fmt"
	"time"

	"github.com/ringflake/ringflake/internal/sentinel"
	"github.com/ringflake/ringflake/machineid"
)

// Errors returned by this package. Test for them with [errors.Is]: the
// returned errors wrap them with figures, as a [*ClockError] for the clock's
// failures, and with the input and position for the ID parsers.
var (
	// ErrInvalidConfig means an option, layout or ID part is out of range.
	// The wrapping message names the value and the valid range.
	ErrInvalidConfig = sentinel.ErrInvalidConfig

	// ErrClockBeforeEpoch means the clock reads earlier than the layout's
	// epoch, so no time field can be formed.
	ErrClockBeforeEpoch = sentinel.New("ringflake: clock is before the layout's epoch")

	// ErrTimeOverflow means the clock reads at or past the end of the
	// layout's range (see [Layout.End]).
	ErrTimeOverflow = sentinel.New("ringflake: time is past the end of the layout's range")

	// ErrClockBehind means the clock stepped back behind time already used,
	// no spare sequence was left for it, and it did not catch up within
	// MaxWait.
	ErrClockBehind = sentinel.New("ringflake: clock is behind and no spare sequence is left")

	// ErrSequenceExhausted means every sequence of the current tick was
	// used and MaxWait ran out before the call got an ID of a later tick:
	// the clock is stalled (a frozen fake clock), MaxWait is shorter than
	// a tick, or demand stayed above the layout's ceiling for longer than
	// MaxWait (a [Generator.NextN] batch larger than MaxWait's worth of
	// ticks, say, which returns the IDs it did get).
	ErrSequenceExhausted = sentinel.New("ringflake: sequence exhausted and MaxWait ran out before the next tick")

	// ErrLeaseLost means the generator's machine ID comes from a lease that
	// it can no longer prove it holds, or whose confirmed mark the clock has
	// passed, and that did not recover within MaxWait. The error also wraps
	// the lease's cause, such as the store's error, when there is one. It is
	// [machineid.ErrLeaseLost], the one error of a lost lease, so that a
	// store's error and the generator's are told apart from others alike.
	ErrLeaseLost = machineid.ErrLeaseLost

	// ErrMarkAhead means the lease of the generator's machine ID inherited
	// a mark that the clock has not passed yet: IDs up to that time may
	// have been issued with the ID before (each store documents what its
	// marks cover), and the clock could not pass it within MaxWait, or, in
	// New, within New's context. The wait ends by itself once the clock
	// passes the mark; a mark far ahead may mean the clock is behind. It
	// also means the clock has not passed the tick of [WithAbove]'s ID: the
	// error then names WithAbove and its ID.
	ErrMarkAhead = sentinel.New("ringflake: the mark the machine ID's lease inherited is ahead of the clock")

	// ErrClosed means [Generator.Close] was called, or the Generator was
	// not made by [New].
	ErrClosed = sentinel.New("ringflake: generator is closed")

	// The two errors below are the kinds of [*ParseError], which every
	// function that reads an ID from text, JSON or a database value
	// returns, in the manner of strconv's ErrSyntax and ErrRange.

	// ErrSyntax means the input does not hold an ID in the form asked for:
	// it is empty, has a character the form does not use, is a Base32 ID
	// not 13 characters long or a Base58 ID with a leading zero digit, is
	// JSON that is neither a string nor an integer, or is a database NULL
	// or a value of a type that cannot hold an ID.
	ErrSyntax = sentinel.New("ringflake: invalid ID syntax")

	// ErrRange means the input is well formed but its value is not an ID:
	// it is negative, or above 2^63-1. IDs are never negative, so
	// [ID.MarshalText] and [ID.Value] refuse a negative ID with it too.
	ErrRange = sentinel.New("ringflake: ID out of range")
)

// ClockError reports a failure to issue caused by time, with the figures
// needed to explain it in one log line. Unwrap returns Err, so
// errors.Is(err, ErrClockBehind) works on a *ClockError.
type ClockError struct {
	// Err is the sentinel: ErrClockBeforeEpoch, ErrTimeOverflow,
	// ErrClockBehind, ErrSequenceExhausted, ErrMarkAhead or ErrLeaseLost,
	// the last wrapped together with the lease's cause when it has one.
	Err error
	// Clock is the last clock reading.
	Clock time.Time
	// By is how far the clock was from usable time: how far before the
	// epoch or past the end of the layout, behind the time already used,
	// short of passing the inherited mark (of reaching the first tick after
	// it), or past the lease's confirmed mark (0 while the lease is not
	// held).
	By time.Duration
	// Waited is how long the call waited, in real elapsed time.
	Waited time.Duration
}

// Error returns the sentinel's message followed by the figures; a call
// that did not wait leaves out its wait.
func (e *ClockError) Error() string {
	clock := e.Clock.Format(time.RFC3339Nano)
	waited := ""
	if e.Waited != 0 {
		waited = fmt.Sprintf(", waited %v", e.Waited)
	}
	switch {
	case errors.Is(e.Err, ErrClockBeforeEpoch):
		return fmt.Sprintf("%v: clock %s is %v before it", e.Err, clock, e.By)
	case errors.Is(e.Err, ErrTimeOverflow):
		return fmt.Sprintf("%v: clock %s is %v past it", e.Err, clock, e.By)
	case errors.Is(e.Err, ErrMarkAhead):
		return fmt.Sprintf("%v: clock %s passes it in %v (at %s)%s", e.Err, clock, e.By, e.Clock.Add(e.By).Format(time.RFC3339Nano), waited)
	case errors.Is(e.Err, ErrLeaseLost) && e.By > 0:
		return fmt.Sprintf("%v: clock %s is %v past the lease's confirmed mark%s", e.Err, clock, e.By, waited)
	case errors.Is(e.Err, ErrSequenceExhausted), errors.Is(e.Err, ErrLeaseLost):
		return fmt.Sprintf("%v: clock %s%s", e.Err, clock, waited)
	}
	return fmt.Sprintf("%v: clock %s is %v behind%s", e.Err, clock, e.By, waited)
}

// Unwrap returns Err.
func (e *ClockError) Unwrap() error { return e.Err }

func configErr(name string, value any, valid string) error {
	return fmt.Errorf("%w: %s = %v; valid range %s", ErrInvalidConfig, name, value, valid)
}

// aboveError is the Err of a [ClockError] for a clock that has not passed
// the tick of WithAbove's ID: ErrMarkAhead, named for its cause.
type aboveError struct {
	id  ID
	end time.Time // the end of id's tick: the first instant the generator may issue at
}

func (e *aboveError) Error() string {
	return fmt.Sprintf("ringflake: the floor set by WithAbove(%d), whose tick ends at %s, is ahead of the clock",
		int64(e.id), e.end.Format(time.RFC3339Nano))
}

func (e *aboveError) Unwrap() error { return ErrMarkAhead }
