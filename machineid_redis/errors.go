package machineid_redis

import (
	"errors"
	"fmt"

	"github.com/ringflake/ringflake"
)

// Errors returned by this package, besides the ones it shares with package
// ringflake: an unusable option wraps [ringflake.ErrInvalidConfig], and
// MachineID on a released Service wraps [ringflake.ErrClosed]. Test for
// them with [errors.Is]; the returned errors wrap them with the figures
// (range, ID, host, timeout).
var (
	// ErrExhausted means every machine ID in the configured range is held
	// (lease mode) or has been handed out (host mode).
	ErrExhausted = errors.New("machineid_redis: no free machine ID in range")

	// ErrHostInUse means, in host mode, that the host's machine ID is
	// leased by another live process: a second process on the same host,
	// or one that crashed less than a TTL ago. Sharing the ID would
	// duplicate IDs, so the call refuses.
	ErrHostInUse = errors.New("machineid_redis: the host's machine ID is held by another process")

	// ErrBadMapping means, in host mode, that the host mapping holds an
	// ID outside the configured range, or that it or MAX_ID holds a value
	// that is not a decimal ID (1 to 15 ASCII digits).
	ErrBadMapping = errors.New("machineid_redis: host mapping holds an unusable machine ID")

	// ErrTimeout means a Redis call did not answer within the call
	// timeout (or the caller's context ended first), or the client's own
	// dial or read timeout ran out first (a server that accepts
	// connections but does not answer).
	ErrTimeout = errors.New("machineid_redis: redis call timed out")
)

// kindError is an error of this package that belongs to a sentinel of
// package ringflake: its message names this package and says what is
// wrong, and it unwraps to the sentinel, so that one sentinel means one
// thing across ringflake.
type kindError struct {
	msg  string
	kind error
}

func (e *kindError) Error() string { return e.msg }
func (e *kindError) Unwrap() error { return e.kind }

// configErr returns an error wrapping ringflake.ErrInvalidConfig whose
// message names the value and what is valid.
func configErr(format string, a ...any) error {
	return &kindError{msg: "machineid_redis: invalid configuration: " + fmt.Sprintf(format, a...), kind: ringflake.ErrInvalidConfig}
}

// errReleased is MachineID's error, and the lease's Err, once Release has
// been called.
var errReleased error = &kindError{
	msg:  "machineid_redis: the Service was released (its generator's Close does that); make a new Service for each generator",
	kind: ringflake.ErrClosed,
}
