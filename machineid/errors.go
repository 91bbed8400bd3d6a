package machineid

import (
	"errors"
	"fmt"
)

// ErrNotFound means a source has no usable machine ID to give: an unset or
// unparsable environment variable, no private IPv4 address, a hostname
// without a StatefulSet ordinal, or an ID outside 0..max (the message then
// names the value and the valid range). The sources in this package return
// errors that wrap it; test for it with [errors.Is].
var ErrNotFound = errors.New("machineid: no usable machine ID")

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
