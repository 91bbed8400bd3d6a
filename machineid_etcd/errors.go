package machineid_etcd

import "errors"

// Errors returned by this package. Test for them with [errors.Is]; the
// returned errors wrap them with the figures (range, machine ID, etcd lease)
// and, where there is one, etcd's own error. An option out of range is
// refused with an error wrapping ringflake.ErrInvalidConfig instead.
var (
	// ErrExhausted means every machine ID in the range is held.
	ErrExhausted = errors.New("machineid_etcd: no free machine ID in range")

	// ErrLeaseLost is the cause a [Leaser] reports with Held = false when
	// it can no longer prove it holds its ID: the etcd lease expired or was
	// revoked, the ID's key was taken or deleted, or no renewal was
	// confirmed before the local deadline (the error then also wraps the
	// last call's error).
	ErrLeaseLost = errors.New("machineid_etcd: lease lost")

	// ErrReleased means [Leaser.Release] was called; it is also the cause
	// reported with the final Held = false.
	ErrReleased = errors.New("machineid_etcd: leaser is released")
)
