package mutant

// The mutants of the engine, each a name a hook asks On about. The
// simulation (internal/leasesim) lists them with what each breaks.
const (
	// NoFloor: the generator ignores the mark its lease inherited (After),
	// so it neither waits for it in New nor refuses ticks at or below it
	// (ringflake, lease.go stateOf).
	NoFloor = "no-floor"
	// MarkBeforeStore: a renewal reports its proposed mark (Until) to the
	// generator before the store has recorded it, so IDs may be issued past
	// a mark the store never records (machineid, renew.go renew).
	MarkBeforeStore = "mark-before-store"
	// WallExpiry: the Holder judges its lease's deadline on the marks'
	// clock, the generator's wall clock, instead of its monotonic clock
	// (machineid, renew.go confirm and expire).
	WallExpiry = "wall-expiry"
	// NoMargin: the Holder vouches for its lease until the send time of
	// its last confirmed call plus the whole TTL, without the safety margin
	// (machineid, renew.go confirm).
	NoMargin = "no-margin"
	// AnswerDeadline: the Holder counts its lease's life from when the
	// store's answer came rather than from when the call was sent
	// (machineid, renew.go confirm).
	AnswerDeadline = "answer-deadline"
	// ReleaseBeforeStop: Close releases the lease before it stops the
	// generator (ringflake, generator.go Close).
	ReleaseBeforeStop = "release-before-stop"
	// RingForgets: a slot that holds a tick later than the clock's, after a
	// step back longer than the ring, is started afresh instead of
	// continued (ringflake, ring.go claim).
	RingForgets = "ring-forgets"
	// NoRetake: a Holder whose store said its lease was lost never takes
	// one again until its next Release (machineid, renew.go obtain).
	NoRetake = "no-retake"
	// NoRecheck: a claim does not check, after its CAS, that the state it
	// claimed under is still the generator's (ringflake, generator.go claim
	// and fast.go fast).
	NoRecheck = "no-recheck"
	// RidePastMark: a holding rides out its store's restart up to the
	// store's clock at its last confirmation plus the restart floor's
	// offset, past the mark the store confirmed for it (machineid, ride.go
	// rideLocked).
	RidePastMark = "ride-past-mark"
	// RideUnconfirmed: after its store restarted, a Holder that takes the
	// machine ID it held again keeps the mark its old holding inherited
	// (After) instead of the one granted, the restart floor, whether or
	// not its lease was confirmed across the restart (machineid, renew.go
	// confirm).
	RideUnconfirmed = "ride-unconfirmed"
	// RideStale: a ride ends only when its timer, set for when the clock
	// should pass its ceiling, fires, and a restart answered while a ride
	// runs is not ridden, even once the clock has passed that ceiling
	// (machineid, ride.go rideLocked and rideCheckIn).
	RideStale = "ride-stale"
)

// Site is a point in the engine where the simulation may perturb the
// schedule (Yield). A site that holds a lock may only be yielded at, not
// waited at: a goroutine blocked on a mutex is not durably blocked, and
// virtual time would not move on while it waited.
type Site uint8

const (
	// SiteCAS: just before a CAS of the generator's state, and between
	// Close's store of the closed state and its scan of what was issued
	// (which sync.Once's lock holds). Each holds a lock (the Holder's
	// watchers' lock, sync.Once's): internal/leasesim draws there but does
	// not yield, since a goroutine that waited on the lock a millisecond of
	// real time would switch it to starvation mode and reorder the
	// schedule.
	SiteCAS Site = iota
	// SiteClaim: in a claim, just before the CAS of a ring slot and between
	// it and the state's re-check; no lock held, so a short wait is
	// allowed, as a preemption there would take.
	SiteClaim
	// SiteLock: just before the Holder takes its mutex to record a
	// lease; no lock held, but a yield here reorders the lease's writers.
	SiteLock
	// SiteStore: just before a Holder's call to its store; no lock held,
	// so a short wait is allowed.
	SiteStore
	// Sites is the number of sites.
	Sites
)
