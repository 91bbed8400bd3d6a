package machineid

import (
	"fmt"

	"github.com/ringflake/ringflake/internal/sentinel"
)

// ErrNotFound means a source has no usable machine ID to give: an unset or
// unparsable environment variable, no private IPv4 address, a hostname
// without a StatefulSet ordinal, or an ID outside 0..max (the message then
// names the value and the valid range). The sources in this package return
// errors that wrap it; test for it with [errors.Is].
var ErrNotFound = sentinel.New("machineid: no usable machine ID")

// check returns id if it lies in 0..max, or an error naming the source,
// the value and the valid range.
func check(source string, id, max int64) (int64, error) {
	if max < 0 {
		return 0, fmt.Errorf("%w: %s: max machine ID = %d; want 0 or more", ErrNotFound, source, max)
	}
	if id < 0 || id > max {
		return 0, fmt.Errorf("%w: %s gave %d; valid range 0..%d", ErrNotFound, source, id, max)
	}
	return id, nil
}

// Errors of the lease stores, defined once here and wrapped by every store
// with its figures and the store's own error. Test for them with
// [errors.Is]. A store's option out of range is refused with an error
// wrapping ringflake.ErrInvalidConfig instead.
var (
	// ErrExhausted means every machine ID in the range is held by a live
	// lease.
	ErrExhausted = sentinel.New("machineid: no free machine ID in range")

	// ErrLeaseLost means a machine ID's lease is not held, or cannot be
	// proven held: the store gave it to another holder or dropped it, or
	// no renewal was confirmed before the lease's deadline (the error then
	// also wraps the latest call's error). A generator whose lease is lost,
	// or whose clock has passed the lease's confirmed mark, fails with it:
	// ringflake.ErrLeaseLost is this error.
	ErrLeaseLost = sentinel.New("machineid: lease lost")

	// ErrReleased means Release was called: the lease is given up, or a
	// call in flight was cut short by it.
	ErrReleased = sentinel.New("machineid: lease released")

	// ErrClockOffset means the holder's clock is further from its store's
	// reference clock than [WithMaxClockOffset] allows, so it took no
	// machine ID: a [*ClockOffsetError] says which way, by how much and
	// against what.
	ErrClockOffset = sentinel.New("machineid: the clock is off the fleet's")
)
