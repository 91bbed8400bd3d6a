package leasesim

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/ringflake/ringflake"
)

// kind is what sets one store apart from another in the simulation: what a
// restart forgets, who judges a lease's expiry, and whether reads may be
// stale.
type kind struct {
	name string
	// forgets: a restart loses every lease and mark (Redis without
	// persistence), and every take after it, for as long as the instance
	// runs, inherits at least the restart floor; marks are capped at the
	// TTL plus the clock bound past the server's time, which the floor
	// covers; as machineid_redis does both.
	forgets bool
	// observed: expiry is judged by the contender, on its own monotonic
	// clock, from when it first saw a record unchanged (Kubernetes Leases,
	// as machineid_k8s does); otherwise by the store's clock (a server's
	// TTL, a database's clock).
	observed bool
	// stale: a take may read a snapshot up to staleFor old (etcd's
	// serializable reads, a Kubernetes cache), and its write compares the
	// record's version with the snapshot's, reading again if it moved.
	stale bool
	// extends: a restart gives every live lease a whole TTL again (etcd's
	// leases under a new leader).
	extends bool
	// fleet: the store keeps no clock of its own; the reference a Holder
	// checks its clock against is the fleet's, estimated from the records
	// of the live holders' clocks, tied to their leases and aged by them,
	// and a restart is a leader change (etcd, as machineid_etcd does:
	// fleet.go).
	fleet bool
	// lock: the lease is a lock the kernel drops with its process
	// (machineid_file): held while the process lives, free the moment it
	// dies. The processes share one host, and so one clock, with no
	// reference to check it against; a restart is a power loss, which
	// kills every process and loses the writes not yet synced (a
	// release's lower mark: takes and renewals sync theirs).
	lock bool
}

var kinds = []kind{
	{name: "redis", forgets: true},
	{name: "etcd", stale: true, extends: true, fleet: true},
	{name: "postgres"},
	{name: "k8s", observed: true, stale: true},
	{name: "file", lock: true},
}

// params are a world's settings, all drawn from its seed.
type params struct {
	kind     kind
	layout   ringflake.Layout
	ttl      time.Duration
	margin   time.Duration // the Holder's, after defaults
	call     time.Duration // the call timeout, after defaults
	optMarg  time.Duration // WithSafetyMargin's argument (0: the default)
	optCall  time.Duration // WithCallTimeout's argument (0: the default)
	lo, hi   int64
	procs    int
	ring     int
	maxWait  time.Duration // WithMaxWait's argument
	wait     time.Duration // the MaxWait it means
	optOff   time.Duration // WithMaxClockOffset's argument
	bound    time.Duration // the clock bound it means, -1 for none
	rate     float64       // the store's clock (or a k8s observer's) against the holders' monotonic clocks
	offsets  time.Duration // the largest usual clock offset, either way
	ahead    time.Duration // no clock reads further ahead of the true time than this
	steps    bool          // clocks step back (by up to more than the TTL and the restart window) and forth
	pauses   bool          // processes pause
	restarts time.Duration // mean time between store restarts; 0 for none
	cuts     bool          // hosts are cut off from the store now and then
	slow     float64       // chance that a store call is slow
	lossy    float64       // chance of each loss of a call
	stuck    float64       // chance that a call ignores its context
	yield    float64       // chance that the engine yields the processor at a site of mutant.Yield
	nap      float64       // chance that it waits a little before a store call
	duration time.Duration
	// anySnap: Redis keeps every RDB snapshot it saves, across restarts
	// that forget too (an old dump on a node, a backup), and a restart
	// that rolls back restores any one of them, not only the latest.
	anySnap bool
	// jumps: Redis's own clock steps and jumps forward (past the bound
	// too) and back (by up to the bound in all), while it runs and before
	// a restart, as R3 of docs/leases.md allows: see storeClock.
	jumps bool
	// switches: now and then, in place of a restart, Redis switches over
	// to its replica, which has every write, half the time after its
	// primary restarted empty (R4 in docs/leases.md; world.switchOver).
	switches bool
}

// tick is the layout's tick: 10 ms, so that a TTL of a second or two is a
// few hundred ticks and the ring a few dozen.
const tick = 10 * time.Millisecond

// draw returns the settings of the world of seed.
func draw(seed uint64) params {
	r := rand.New(rand.NewPCG(seed, 0x6c65617365))
	p := params{kind: kinds[r.IntN(len(kinds))], duration: 20 * time.Second}
	p.ttl = []time.Duration{time.Second, 1500 * time.Millisecond, 2 * time.Second, 3 * time.Second}[r.IntN(4)]
	if p.kind.fleet && p.ttl%time.Second != 0 {
		p.ttl = 2 * time.Second // etcd counts a lease's TTL in whole seconds, as its record's age
	}
	if r.IntN(2) == 0 {
		p.optMarg = between(r, p.ttl/10, p.ttl/3)
	}
	if r.IntN(2) == 0 {
		p.optCall = between(r, p.ttl/10, p.ttl/3)
	}
	p.margin, p.call = p.optMarg, p.optCall
	if p.margin == 0 {
		p.margin = p.ttl / 5
	}
	if p.call == 0 {
		p.call = min(p.ttl/3, 2*time.Second)
	}
	p.procs = 2 + r.IntN(3)
	p.lo = int64(r.IntN(3))
	p.hi = p.lo + int64(r.IntN(3))
	if r.IntN(3) == 0 {
		// A range with room to spare: an ID its holder left, whose marks
		// a restart forgot, may then lie untaken for a long while.
		p.hi = min(p.lo+int64(p.procs+r.IntN(2)), 7)
	}
	p.ring = []int{4, 8, 16, 32}[r.IntN(4)]
	p.maxWait = []time.Duration{0, 20 * time.Millisecond, 300 * time.Millisecond, -1}[r.IntN(4)]
	switch {
	case p.maxWait == 0:
		p.wait = 100 * time.Millisecond
	case p.maxWait > 0:
		p.wait = p.maxWait
	}
	// The rate stays within what the margin covers: a lease the store
	// confirms for a call sent at t lasts until t + TTL/rate at the
	// earliest, past the Holder's deadline t + TTL − margin. An observer
	// waits TTL + margin, so it may run faster.
	top := float64(p.ttl) / float64(p.ttl-p.margin)
	if p.kind.observed {
		top = float64(p.ttl+p.margin) / float64(p.ttl-p.margin)
	}
	p.rate = 0.8 + r.Float64()*(1+0.9*(top-1)-0.8)
	p.optOff = []time.Duration{0, 500 * time.Millisecond, 5 * time.Second, -1}[r.IntN(4)]
	switch {
	case p.optOff == 0:
		p.bound = 2 * time.Second
	case p.optOff > 0:
		p.bound = p.optOff
	default:
		p.bound = -1
	}
	// Clocks range past the bound on every kind of store: a newcomer past
	// it is refused when it takes, but a holder's clock may drift or step
	// anywhere once it holds, and the invariants are checked all the same.
	p.offsets = []time.Duration{0, 300 * time.Millisecond, 2 * time.Second, 8 * time.Second}[r.IntN(4)]
	p.ahead = max(p.offsets, p.bound) + p.ttl + 6*time.Second // steps forward go past the offsets and the bound
	if p.kind.forgets && p.bound < 0 {
		// The one world outside the promise: Redis with the check off caps
		// no mark, so a mark lost in a restart is covered by its floor only
		// if its holder's clock was at most the margin ahead.
		// docs/machineid_redis.md, "A fresh or restarted Redis": "With the
		// check off (a negative bound) the marks are not capped, and the
		// floor is TTL + safety margin ...: it then covers a lost mark only
		// if its holder's clock was at most the margin ahead of Redis's".
		// Clocks there may be any way behind, but at most the margin ahead.
		p.ahead = p.margin
	}
	p.steps = r.IntN(4) != 0
	p.pauses = r.IntN(3) == 0
	if r.IntN(2) == 0 {
		p.restarts = between(r, 3*time.Second, 10*time.Second)
	}
	p.cuts = r.IntN(2) == 0
	p.slow = []float64{0.01, 0.05, 0.2}[r.IntN(3)]
	p.lossy = []float64{0, 0.02, 0.08}[r.IntN(3)]
	p.stuck = []float64{0, 0.01, 0.05}[r.IntN(3)]
	// The schedule, perturbed at the engine's CAS, lock and store-call
	// sites (mutant.Yield, in a build with the tag ringflake_mutant).
	p.yield = []float64{0, 0.02, 0.1, 0.4}[r.IntN(4)]
	p.nap = []float64{0, 0.05, 0.3}[r.IntN(3)]
	p.layout = ringflake.Layout{TimeBits: 56, MachineBits: 3, SequenceBits: 4, Tick: tick}
	// The faults added for issue 36 draw from a stream of their own, so
	// that every other setting of a seed is what it was before them.
	r = rand.New(rand.NewPCG(seed, 0x6a756d7073))
	p.anySnap = p.kind.forgets && p.restarts > 0 && r.IntN(2) == 0
	p.jumps = p.kind.forgets && p.bound > 0 && r.IntN(2) == 0
	// R4's switch-overs, drawn apart from the faults before them too.
	r = rand.New(rand.NewPCG(seed, 0x73776974))
	p.switches = p.kind.forgets && p.restarts > 0 && r.IntN(2) == 0
	return p
}

// between returns a duration drawn evenly from lo..hi.
func between(r *rand.Rand, lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(r.Int64N(int64(hi-lo)))
}

func (p params) String() string {
	return fmt.Sprintf("store=%s ttl=%v margin=%v call=%v ids=%d..%d procs=%d ring=%d (%v) maxwait=%v rate=%.3f clockbound=%v offsets=±%v ahead<=%v steps=%v pauses=%v restarts=%v cuts=%v slow=%.2f lossy=%.2f stuck=%.2f yield=%.2f nap=%.2f anysnap=%v jumps=%v switches=%v",
		p.kind.name, p.ttl, p.margin, p.call, p.lo, p.hi, p.procs, p.ring, time.Duration(p.ring)*tick, p.wait, p.rate, p.bound, p.offsets, p.ahead, p.steps, p.pauses, p.restarts, p.cuts, p.slow, p.lossy, p.stuck, p.yield, p.nap, p.anySnap, p.jumps, p.switches)
}
