package machineid_postgres

import "errors"

// Errors returned by this package, and reported as [machineid.Lease].Err.
// Test for them with [errors.Is]; the returned errors wrap them with the
// figures (range, machine ID, table) and the database's error when there is
// one. An invalid option is refused with an error wrapping
// ringflake.ErrInvalidConfig.
var (
	// ErrExhausted means every machine ID in the range is held by a live
	// lease.
	ErrExhausted = errors.New("machineid_postgres: no free machine ID in range")

	// ErrLost means the database says the lease is no longer this holder's:
	// its row went to another holder after it expired, or was deleted.
	ErrLost = errors.New("machineid_postgres: lease was taken over")

	// ErrExpired means the holder's local deadline passed before a renewal
	// succeeded, so it can no longer prove it holds the ID: the row may
	// expire in the database from then on, less the safety margin. It wraps
	// the last renewal's error.
	ErrExpired = errors.New("machineid_postgres: lease ran out before a renewal succeeded")

	// ErrReleased means [Leaser.Release] was called: the lease is given up,
	// or a MachineID call in flight was cut short by it.
	ErrReleased = errors.New("machineid_postgres: lease released")
)
