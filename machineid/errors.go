package machineid

import (
	"errors"
	"fmt"
)

// Errors returned by the providers in this package. Test for them with
// [errors.Is]; the returned errors wrap them with the value and the source.
var (
	// ErrOutOfRange means a source produced a machine ID outside 0..max,
	// or max itself is negative. The message names the value and the
	// valid range.
	ErrOutOfRange = errors.New("machineid: machine ID out of range")

	// ErrNotFound means the source has no machine ID to give: an unset or
	// unparsable environment variable, no private IPv4 address, a hostname
	// without a StatefulSet ordinal, or no platform ID and no hostname.
	ErrNotFound = errors.New("machineid: no machine ID found")
)

// check returns id if it lies in 0..max, or an error naming the source,
// the value and the valid range.
func check(source string, id, max int64) (int64, error) {
	if max < 0 {
		return 0, fmt.Errorf("%w: %s: max machine ID = %d; want 0 or more", ErrOutOfRange, source, max)
	}
	if id < 0 || id > max {
		return 0, fmt.Errorf("%w: %s gave %d; valid range 0..%d", ErrOutOfRange, source, id, max)
	}
	return id, nil
}
