package machineid

import (
	"context"
	"time"
)

// Source supplies a generator's machine ID. Every generator that issues IDs
// in the same ID space must get a distinct ID from it.
//
// MachineID may do I/O. It must honour ctx: return soon after ctx is done.
// Implementations must be safe for concurrent use.
type Source interface {
	MachineID(ctx context.Context) (int64, error)
}

// Lease is the state of a machine ID held on a lease, as a [Leaser]
// reports it to its watchers.
type Lease struct {
	// ID is the leased machine ID, or -1 before the first lease.
	ID int64
	// Held reports whether the holder can still prove it holds ID. While it
	// is false a generator issues no IDs.
	Held bool
	// After is the mark the holder inherited: the previous holder of ID may
	// have issued IDs whose time is up to and including After, or the store
	// cannot rule it out (a store that lost its data after a restart), so
	// this holder must only use later times. The zero Time means no
	// constraint.
	After time.Time
	// Until is the mark the store has confirmed for this holder: it must not
	// issue IDs whose time is later than Until. Renewals raise it ahead of
	// time. While a holding rides out its store's restart (see
	// [RestartError]), it stays the mark last confirmed. The zero Time
	// means no limit.
	Until time.Time
	// Err is why the lease is not held, such as the store's error, when Held
	// is false; nil otherwise. While MachineID waits for an ID to free, it
	// wraps [ErrExhausted].
	Err error
	// Clock is the holder's clock measured against the store's reference
	// at the latest take or renewal that read it: the zero ClockOffset
	// before then, or for a store without one (the file store). It is
	// measured and reported, not a reason to stop issuing in itself (After
	// and Until are); Clock.Past() says it passes [WithMaxClockOffset],
	// against the fleet's clock unless Clock.Tentative.
	Clock ClockOffset
}

// Leaser is a [Source] that holds its ID on a lease, which can be lost and
// regained and which bounds the times its holder may use. A generator given
// a Leaser follows the lease through Watch and releases it on Close. One
// Leaser serves one generator at a time; ringflake.New refuses a Leaser that
// a live generator already uses.
//
// Uniqueness across holders rests on three promises an implementation
// makes: it reports Held = false before the ID could be granted to anyone
// else; it reports an Until only once the store has recorded it, or one
// below every After that anyone else may inherit for the ID; and the
// After it reports, or the time at which it grants the ID if that is later,
// is at or past every Until that any earlier holder of the ID was given. Package machineidtest checks them.
type Leaser interface {
	Source
	// Watch calls fn with the current lease, before returning, and then
	// after every change until stop is called. Calls to fn do not overlap,
	// and fn must not block.
	Watch(fn func(Lease)) (stop func())
	// Release stops renewing and gives the ID up; watchers then see a lease
	// that is not held. issued is the latest time the holder issued an ID
	// with, so that the store may lower its mark to it: a mark is raised
	// ahead of time, and the next holder of the ID otherwise waits until its
	// clock passes a time nobody used. The zero Time means unknown, and
	// keeps the confirmed mark. The mark never goes below issued nor below
	// the previous holder's mark. Release is safe to call more than once.
	Release(issued time.Time) error
}
