package machineid

import (
	"context"
	"time"
)

// Store is the part of a lease store that differs from one store to the
// next: how to take, renew and free a machine ID's lease, and where its
// mark lives. A [Holder] does the rest, the same for every store: the
// lease's state and its expiry on the holder's monotonic clock, the
// renewals, the call timeouts, the release and the watchers. Packages
// machineid_file, machineid_redis, machineid_etcd, machineid_postgres and
// machineid_k8s are Stores behind a Holder; write another the same way and
// test it with package machineidtest.
//
// A Holder makes one call at a time, and each gets a context that ends at
// the call timeout or when Release begins; a call must return soon after
// its context is done. A call whose answer was lost (a timeout, a broken
// connection) may still have taken effect, so each must be idempotent for
// its token: the next call finds the effect and carries on from it.
//
// Uniqueness rests on a Store keeping three promises, for the holding
// whose token is c.Token:
//   - Take and Renew grant an ID only while no other token can hold it in
//     the store: until at least the moment the call was sent plus c.TTL,
//     by the store's own judge of time (a server's TTL, a database's
//     clock, an observer's monotonic clock, a file lock).
//   - The Until of a Grant is recorded in the store, at or past the mark
//     proposed in c.Until, before the call returns. (A store that bounds
//     marks by its own clock, as Redis does, may record less; the holder
//     then issues no later than that.)
//   - A Take's After is at or past every Until recorded for the ID by
//     anyone before (or, after Release with an issued time, at or past
//     that time and the released holding's After).
type Store interface {
	// Take leases the lowest free machine ID in c.Lo..c.Hi to c.Token,
	// preferring one the token already holds (the trace of a Take whose
	// answer was lost), and raises the ID's mark to at least c.Until; a
	// zero c.Until leaves the mark as it stands (see [Limits].Clock). It
	// returns an error wrapping [ErrExhausted] when every ID in the range
	// is held by another token, saying in one line, where the store
	// knows, who holds them and when the first frees.
	Take(ctx context.Context, c Claim) (Grant, error)

	// Renew extends c.Token's lease on id by c.TTL and raises its mark to
	// at least c.Until. It returns an error wrapping [ErrLeaseLost] when
	// the store says the token no longer holds id (its lease expired and
	// was taken, or was deleted); any other error means the store could
	// not be asked, and the lease may still be held.
	// A store that lost its data in a restart, and can say when the
	// instance that answers started, returns a [*RestartError] for a
	// lease it finds gone or another token's.
	Renew(ctx context.Context, c Claim, id int64) (Grant, error)

	// Release frees what c.Token holds, id or, when id is -1 (a Take
	// whose answer was lost), whatever it may hold. When issued is not the
	// zero Time, the ID's mark comes down to issued, but never below the
	// After the holding was given, which the Holder has already folded
	// into issued; the zero Time keeps the mark. Only the token's own
	// lease changes.
	Release(ctx context.Context, c Claim, id int64, issued time.Time) error
}

// Claim is what a [Holder] asks of its [Store] in every call.
type Claim struct {
	// Token identifies the holding: random, and new for each stretch of
	// holding from a Holder's first MachineID (or the first after a
	// Release) to its Release.
	Token string
	// Lo and Hi bound the machine IDs to take, inclusive.
	Lo, Hi int64
	// TTL is how long the store keeps the lease without a renewal.
	TTL time.Duration
	// Margin is the holder's safety margin: a Store that judges expiry by
	// observation (as Kubernetes leader election does) waits TTL + Margin
	// of seeing a lease unchanged before it takes it over.
	Margin time.Duration
	// Now is the Holder's clock (the generator's) when it made the claim,
	// just before the call: the clock the marks are in.
	Now time.Time
	// Until is the proposed mark, Now plus TTL: the latest time the holder
	// may issue with until its next renewal. In a Take it may be the zero
	// Time: take the lease, but raise no mark (see [Limits].Clock).
	Until time.Time
	// MaxOffset is the bound on the holder's clock's offset from the
	// store's reference clock ([WithMaxClockOffset]); negative when the
	// check is off. The Holder judges the offset; a store that bounds its
	// marks by its own clock (Redis, for its restart floor) reads it too.
	MaxOffset time.Duration
	// Prefer, when not nil, is a machine ID in Lo..Hi that a Take should
	// grant if it is free, rather than the lowest: the ID of a holding
	// riding out its store's restart (see [RestartError]), so that the
	// holders of a restarted store each take back their own ID instead of
	// one that another of them still rides, whose renewal would then find
	// it taken and stop for the whole restart floor. Granting it changes
	// nothing else: its After is its mark, as any ID's. A store may ignore
	// it.
	Prefer *int64
}

// Grant is what a [Store] answers to Take and Renew.
type Grant struct {
	// ID is the machine ID held.
	ID int64
	// After is the mark the holding inherited (Take only; Renew's is
	// ignored): the latest time any earlier holder of ID may have issued
	// with, or the zero Time if none.
	After time.Time
	// Until is the mark now recorded for ID: at or past the Claim's Until
	// (see Store). A Take with a zero Claim.Until returns the mark as it
	// stands, the zero Time if the ID has none.
	Until time.Time
	// Clock is the store's reading of its reference clock, taken while the
	// call ran; the zero Reading if it has none.
	Clock Reading
}

// Reading is a store's reading of the clock a Holder checks its own
// against: the fleet's reference, such as the server's clock or the
// median of the live holders' clocks.
type Reading struct {
	// Source names the reference, for messages: "Redis's clock (TIME)",
	// "PostgreSQL's clock", "the API server's clock", "the median of 3
	// live holders' clocks".
	Source string
	// Time is the reference's reading at some instant between the call's
	// sending and its answer; the zero Time means no reading.
	Time time.Time
	// Within bounds how far Time may be from the reference at that
	// instant: its resolution (a whole second, for a time the API server
	// stamps) or the uncertainty of an estimate (a holder's record aged
	// by its lease). The Holder adds half the call's round trip, since it
	// does not know the instant.
	Within time.Duration
	// Tentative says that the reference may itself be off: too few of its
	// sources agree on it (on etcd, fewer than three live holders' clocks,
	// and a majority of those read, within the bound of one another). The
	// Holder measures its clock against it and reports the offset, but
	// refuses no clock for it.
	Tentative bool
}

// Limits are what a [Store] imposes on the common options, stated the same
// way in every store. A zero field imposes nothing beyond the Holder's own
// bounds (see [WithTTL] and [WithRange]).
type Limits struct {
	// Name is the store's package, such as "machineid_redis", which names
	// the errors of the Holder that wrap none of this package's.
	Name string
	// MinTTL and MaxTTL bound the TTL within the Holder's own 100ms..1h.
	MinTTL, MaxTTL time.Duration
	// DefaultTTL, if not zero, is the TTL when [WithTTL] is not given (or
	// is 0), in place of the Holder's 10s. A store whose lease does not
	// run out with time (a file lock, which the kernel drops with the
	// process) uses the TTL only as how far ahead of the clock the mark is
	// written, which a restart after a crash waits out: it makes it short.
	DefaultTTL time.Duration
	// TTLStep, if not zero, is a unit the TTL must be a whole number of
	// (etcd counts lease TTLs in seconds).
	TTLStep time.Duration
	// MaxID is the largest machine ID the store can hold.
	MaxID int64
	// MaxIDs is the most IDs a range may have.
	MaxIDs int64
	// Lasts says that the store's lease does not run out with time: a
	// file lock lasts as long as the process, and no one else can take
	// the ID meanwhile. The Holder then lets the lease lapse at its
	// deadline only if the store has answered a call with an error since
	// the last one it confirmed; while the store has not answered (a call
	// that ran out of time: an fsync that hangs), the lease stays held,
	// and only the mark bounds the generator, which issues up to the Until
	// last confirmed, as with every store.
	Lasts bool
	// Clock says that the store's Take reports a reference clock
	// (Grant.Clock). The Holder then takes a new lease with a zero
	// Claim.Until, so that no mark is raised yet, checks its clock against
	// the reading ([WithMaxClockOffset]), and raises the mark with a Renew
	// only if the clock passes: a clock that is off never writes a mark.
	// If that Take's round trip was longer than half the bound (it waited
	// inside the call, as a Kubernetes take waits for a Lease to expire),
	// the Holder calls Take again, with a zero Until, and judges that
	// reading too, so the store must answer a Take for an ID its token
	// holds without waiting. A refused holder releases the lease at once,
	// keeping the mark.
	Clock bool
}

// RestartError is the error a [Store]'s Renew may return, wrapping
// [ErrLeaseLost], when it finds the token's lease on the ID gone (no lease,
// or another token's) and knows when the instance of the store that
// answered started, as a Redis server without persistence does. A store
// that returns it promises, on its reference clock (Grant.Clock):
//   - every Take this instance grants, of any ID, inherits an After at or
//     past Start + Floor;
//   - every Take that an instance started after a call whose Grant.Clock
//     read c grants inherits an After at or past c + Floor;
//   - as every Take's, that After is at or past every Until the store
//     recorded before, those a restart lost included.
//
// The Holder then lets a holding whose lease it still holds ride out the
// restart, up to the mark the store confirmed for it: see "When a store
// forgets" in docs/leases.md. Stores that keep their data (files, etcd,
// PostgreSQL, Kubernetes) never return it.
type RestartError struct {
	ID    int64         // the machine ID renewed
	Start time.Time     // when the answering instance started, on the reference clock
	Floor time.Duration // how far past an instance's start every take it grants inherits
	Err   error         // the store's explanation, wrapping ErrLeaseLost
}

// Error returns the store's explanation.
func (e *RestartError) Error() string { return e.Err.Error() }

// Unwrap returns the store's explanation, which wraps [ErrLeaseLost].
func (e *RestartError) Unwrap() error { return e.Err }
