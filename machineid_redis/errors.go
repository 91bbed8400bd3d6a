package machineid_redis

import "errors"

// Errors returned by this package. Test for them with [errors.Is]; the
// returned errors wrap them with the figures (range, ID, host, timeout).
var (
	// ErrInvalidConfig means an option or the key prefix is unusable. The
	// message names the value and what is valid.
	ErrInvalidConfig = errors.New("machineid_redis: invalid configuration")

	// ErrExhausted means every machine ID in the configured range is held
	// (lease mode) or has been handed out (host mode).
	ErrExhausted = errors.New("machineid_redis: no free machine ID in range")

	// ErrHostInUse means, in host mode, that the host's machine ID is
	// leased by another live process: a second process on the same host,
	// or one that crashed less than a TTL ago. Sharing the ID would
	// duplicate IDs, so the call refuses.
	ErrHostInUse = errors.New("machineid_redis: the host's machine ID is held by another process")

	// ErrBadMapping means, in host mode, that the seed's mapping holds an
	// ID outside the configured range, or that it or MAX_ID holds a value
	// that is not a decimal ID (1 to 15 ASCII digits).
	ErrBadMapping = errors.New("machineid_redis: host mapping holds an unusable machine ID")

	// ErrTimeout means a Redis call did not answer within the call
	// timeout (or the caller's context ended first), or the client's own
	// dial or read timeout ran out first (a server that accepts
	// connections but does not answer).
	ErrTimeout = errors.New("machineid_redis: redis call timed out")

	// ErrClosed means [Service.Close] was called.
	ErrClosed = errors.New("machineid_redis: service is closed")
)
