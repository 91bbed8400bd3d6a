package machineid_redis

import "github.com/ringflake/ringflake/internal/sentinel"

// Errors of host mode, besides those every store shares (see package
// machineid). Test for them with [errors.Is]; the returned errors wrap them
// with the host, the ID and the range.
var (
	// ErrHostInUse means that the host's machine ID is leased by another
	// live process: a second process on the host, or one that crashed less
	// than a TTL ago. Sharing the ID would duplicate IDs, so the call
	// refuses.
	ErrHostInUse = sentinel.New("machineid_redis: the host's machine ID is held by another process")

	// ErrBadMapping means that the host mapping holds an ID outside the
	// range, or that it or MAX_ID holds a value that is not a decimal ID
	// (1 to 15 ASCII digits).
	ErrBadMapping = sentinel.New("machineid_redis: host mapping holds an unusable machine ID")
)
