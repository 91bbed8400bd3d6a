package machineid

import (
	"context"
	"time"
)

// Service supplies a generator's machine ID. Every generator that mints IDs
// in the same ID space must get a distinct ID from it.
//
// MachineID may do I/O and should honour ctx. Implementations must be safe
// for concurrent use.
type Service interface {
	MachineID(ctx context.Context) (int64, error)
}

// Lease is the state of a machine ID held on a lease, as a [Leaser] reports
// it to its watchers.
type Lease struct {
	// ID is the leased machine ID.
	ID int64
	// Valid reports whether the holder can still prove it holds ID. While it
	// is false a generator issues no IDs.
	Valid bool
	// After is the previous holder's high-water mark: it may have issued IDs
	// whose time is up to and including After, so this holder must only use
	// later times. The zero Time means no constraint.
	After time.Time
	// Until is the high-water mark the lease store has confirmed for this
	// holder: it must not issue IDs whose time is later than Until. Renewals
	// raise it ahead of time. The zero Time means no limit.
	Until time.Time
}

// Leaser is a [Service] that holds its ID on a lease which can be lost and
// regained, and which limits the time range its holder may use. A generator
// given a Leaser follows the lease through Watch and releases it on Close.
//
// Uniqueness across holders rests on three promises an implementation
// makes: it reports Valid = false before the ID could be granted to anyone
// else; it reports an Until only once the lease store has recorded it; and
// the After it reports is at or past every Until any earlier holder of the
// ID was given. package machineid_redis keeps them with Redis.
type Leaser interface {
	Service
	// Watch calls fn with the current lease, before returning, and then
	// after every change until stop is called. Calls to fn do not overlap,
	// and fn must not block.
	Watch(fn func(Lease)) (stop func())
	// Close stops renewing and releases the lease. After Close, watchers
	// see an invalid lease.
	Close() error
}

// Ranger is a [Service] that knows in advance which IDs it may hand out. A
// generator checks the range against its layout before it asks for an ID,
// so a leased source cannot later re-acquire an ID the generator cannot
// encode and leave it stuck without a usable lease.
type Ranger interface {
	Service
	// Range returns the lowest and highest ID the service may hand out.
	Range() (lo, hi int64)
}

// IssuedCloser is a [Leaser] that can release its lease knowing the latest
// time its holder actually issued. A lease's high-water mark is raised
// ahead of time, so after a plain Close the ID's next holder waits until
// its clock passes a mark nobody used; told the real latest time, the store
// may lower the mark to it. A generator calls CloseIssued instead of Close
// when its Leaser offers it.
type IssuedCloser interface {
	Leaser
	// CloseIssued is Close, told that the holder issued no ID with a time
	// later than issued (the zero Time: no ID at all). The mark must never
	// go below issued, nor below the previous holder's mark, and must only
	// change while this holder still holds the lease.
	CloseIssued(issued time.Time) error
}
