// Package leasesim is a seeded simulation of the lease engine: the real
// machineid.Holder over an in-memory store, each Holder feeding a real
// ringflake.Generator whose issuers call NextID and NextN, with the faults
// of clocks and store, all drawn from one seed and run in virtual time
// (testing/synctest), so that a failing seed replays.
//
// A world has a store of one kind (Redis without persistence, etcd,
// PostgreSQL, Kubernetes Leases, the file store: what a restart forgets,
// who judges expiry, whether reads may be stale) and a few hosts (for the
// file store, processes on one host, sharing its clock, whose locks go
// with them, and whose restart is a power loss that kills them all and
// loses the writes not synced: a release's lower mark). On each, processes
// come and go: a Holder, generators made with New one after another, each
// issuing for a while and then closed, or crashed. The faults, on every
// kind of store alike:
//
//   - clocks: offsets past the clock bound (a newcomer is refused; a
//     holder's clock may go anywhere once it holds), steps back shorter and
//     longer than the ring, longer than the TTL and than the restart window
//     Redis's floor once had, steps forward, also past the bound; pauses
//     longer than the TTL, in a clock reading;
//   - the store's clock at a rate that differs from the holders' within the
//     safety margin; Redis's own clock, in half its worlds with a clock
//     bound, jumping forward (up to twice the bound and a second ahead of
//     the true time) and stepping back (by up to the bound in all from the
//     furthest it read), while it runs and across a restart, as R3 of
//     docs/leases.md allows (a lease's expiry is an absolute time on it: a
//     step forward ends leases early);
//   - store calls: delays, a loss before the store acts or of its answer
//     after (an unknown outcome), calls stuck past their context;
//   - store restarts, which forget what that kind of store forgets (Redis:
//     everything, or everything since a snapshot, as with RDB persistence:
//     the latest, or, in half its worlds with restarts, any one it saved,
//     old dumps kept across restarts that forget, now and then restored
//     soon after another restart, within a TTL of leases in them), now and
//     then a switch-over to Redis's replica, which has every write, half
//     the time just after a restart that forgot (R4: a new run id, and a
//     start at the first call it serves as a primary), or, on
//     etcd, leader changes, now and then a few close
//     together, each a new raft term that keeps every lease alive anew;
//     stale reads where the kind allows them; partitions; a host that goes
//     down with the store and comes back about the window later; clocks
//     that step back to about a restart's time, just after a New;
//   - ranges with IDs to spare, where an ID a restart forgot may lie
//     untaken for long;
//   - the schedule: in a build with the tag ringflake_mutant (as
//     scripts/leasesim builds it), the engine yields the processor, at a
//     rate each seed draws, before the CAS of a ring slot, of the
//     generator's state and between Close's closed state and its scan of
//     what was issued, before the Holder records a lease, and before a
//     store call; before a store call it may also wait up to 200µs of
//     virtual time, and within a claim 100µs, as a preemption would
//     (internal/mutant's Yield, an empty function in every other build).
//
// Redis's restart floor is modelled as machineid_redis keeps it: every take
// for as long as the instance runs inherits at least the instance's start
// on the server's clock plus TTL + slack (the clock bound, or the margin
// with the check off), and marks are capped at TTL + bound past the
// server's time. The instance's start is as serverStart reads it, in whole
// ms: the earlier of its marker, its clock at the first take or renewal it
// served (a per-process key, which a restart clears, and a rollback brings
// back only as another process's), and its time less its whole-second
// uptime less one; a promoted replica's, its marker alone (its uptime
// predates the data it synced). A renewal that finds no lease of its token's on the ID,
// none or another live holder's, is answered as machineid_redis's renew
// script answers it, with a *machineid.RestartError: Start that start,
// Floor = TTL + slack less 1 ms; so the Holder's ride (machineid, ride.go)
// runs in every Redis world, through double restarts, rollbacks and
// holders cut off past their deadline. A ride issues no tick past the mark
// the store confirmed for its holding, as every holding: past-mark holds
// it to that. Each lease carries the run id of the server that granted or
// last confirmed it, one per restart, which a snapshot keeps; a lease of
// the token's that another run recorded (a snapshot restored) is void, as
// in machineid_redis since issue 36: a renewal deletes it and answers a
// RestartError, a take deletes it and goes on as a new one, with the
// restart floor.
//
// etcd's reference clock is the fleet's, modelled as machineid_etcd keeps
// it (fleet.go): each renewal records its holder's clock on the token's
// etcd lease, with the raft term its keep-alive was answered in; a reader
// ages up to five other records by their leases' TTL left, in whole
// seconds, leaves out a record of another term, and takes the median,
// within half a second, tentative (refusing no clock) unless at least
// three of them, and more than half, agree on it within the bound and a
// second. Every other kind reads its own clock, the true
// time (Kubernetes in whole seconds).
//
// A seed replays: the process runs with one P and no asynchronous
// preemption, every part of a world draws from a stream of its own, every
// timer of the world and (through mutant.Delay) of the engine is
// lengthened by the fewest nanoseconds that make its instant unique, since
// testing/synctest fires timers due at one instant in a random order, and
// the schedule never yields at a site that holds a lock, where a waiter's
// sync.Mutex would switch to starvation mode by real time. Some turns are
// still left to the runtime (a goroutine that runs 10 ms of real time, on
// a loaded machine that deschedules the process, is asked to yield at its
// next call; a select with two cases ready picks one at random): two runs
// of seeds 1..600 took another turn somewhere in 5 to 7 worlds at a load
// of 2.5 on two cores, where they had in 44.
//
// The worlds stay inside what the docs promise, and only there: Redis with
// the clock check off keeps every clock at most the margin ahead
// (docs/machineid_redis.md: the floor "then covers a lost mark only if its
// holder's clock was at most the margin ahead"); no store's own clock steps
// back by more than the bound in all before a restart (R3 in
// docs/leases.md: Redis's clock never reads more than the bound behind the
// furthest it read); no Redis failover loses writes (a switch-over is to a
// replica that has every write) ("Replication is
// asynchronous ...: another process can take the same ID at once"). Everywhere else the invariants hold whatever the clocks do.
//
// A checker fed by the issuers and by the store as it writes holds the world
// to its invariants at every step (check.go): unique IDs; on one machine ID,
// no two generators' holdings issue overlapping ticks; no tick at or below
// a holding's inherited mark, nor past the mark the store recorded for it,
// nor past the mark its release left; a holding's confirmed mark never goes
// back; the store never grants an ID that another generator still reports
// held, nor, across a restart or a lease Redis's clock ended early, one
// whose inherited mark is below the Until of a holding another generator
// still reports (a ride), nor confirms a holding again once it granted the
// ID to another since it last did (a lease a snapshot revived); no call
// waits past its bound; an open generator never sees its lease released;
// calls fail with the package's errors only; a take never
// refuses a clock within the bound of the reference its store's reading
// stands for (the true time, or on etcd the median of the offsets of the
// records it read: each the clock recorded less the store's time at the
// keep-alive that wrote it), less the clock's 2.5 ms quantum:
// the Holder refuses only where |By| − Within passes the bound, so such a
// refusal is a reading that strayed past its Within, as etcd's fleet clock
// did for a renewal period after a leader change before D4 of issue 28
// (a clock that stepped or paused while its take ran is not checked), or
// one whose records do not agree, which must be tentative (before issue
// 36 one holder's record, or two, decided); and
// a holding that must ride out a Redis restart issues while the ride
// covers it (ride-live): a call of its generator that begins at or after
// the answer, at a, returns IDs within
//
//	W = U − its clock at a − 2 ticks
//
// where U is the mark the store last confirmed for it, asked where W is
// at least 120 ms, the generator's clock is past every tick it issued, and
// the sim can tell the Holder must ride (ride.go states when). A Holder
// that does not ride issues nothing from a until its clock passes the
// restart floor, Start + TTL + slack, past U, and so past a + W.
//
// Liveness: at the world's duration (20 s) it heals. Every fault stops,
// every clock is set right, and the processes stop coming and going; from
// then on, within
//
//	6·TTL + max(A, S + 2 s) + 2 s + J
//
// every live process issues again (or, if the range has fewer IDs than
// there are processes, as many as it has IDs), where A is how far ahead of
// the true time the furthest clock read before the heal and S, on Redis,
// the mark slack of its restart floor (0 elsewhere), and J, where Redis's
// clock steps, twice the bound (its floor and marks lie up to the bound
// later in true time, and a lease granted before it stepped back lasts up
// to the bound longer). The terms: calls in
// flight and pauses end, and leases left by crashed processes run out in
// the store (at its slowest rate), within 6·TTL; the mark an ID inherits,
// set by a clock A ahead, or Redis's floor, is passed within max(A, S +
// 2 s) plus a TTL counted above; New's retries, an issuer's gap and a tick
// within 2 s (heal.go's liveBound). The world ends as soon as they have.
//
// scripts/leasesim runs it; Mutants are broken engines it must catch.
package leasesim

import (
	"io"

	"github.com/ringflake/ringflake/internal/mutant"
)

// Result is what came of one seed.
type Result struct {
	// Failure is the first invariant broken, or nil.
	Failure *Failure
	// Params describes the world.
	Params string
	// IDs is how many IDs the world's generators issued, and Print a
	// fingerprint of them in the order they were issued: two runs of a
	// seed that went the same way have the same.
	IDs   int
	Print uint64
	// Log writes the latest events (all of them, verbose).
	Log func(io.Writer)
}

// Run runs the world of seed, with the mutant name switched on ("" for
// none), and returns what came of it. It must run inside a synctest bubble
// of its own, after Switch.
func Run(seed uint64, name string, verbose bool) Result {
	return newWorld(seed, name, verbose).result()
}

// result runs w and returns what came of it.
func (w *world) result() Result {
	if mutant.SetYield(w.perturb) {
		defer mutant.SetYield(nil)
	}
	if mutant.SetDelay(w.delay) {
		defer mutant.SetDelay(nil)
	}
	f := w.run()
	w.chk.mu.Lock()
	n, print := len(w.chk.ids), w.chk.print
	w.chk.mu.Unlock()
	return Result{Failure: f, Params: w.p.String(), IDs: n, Print: print, Log: w.log.write}
}

// Switch switches the mutant name on for the process, "" for none, and
// reports whether it can: an engine mutant needs the build tag
// ringflake_mutant.
func Switch(name string) bool {
	m, ok := lookup(name)
	switch {
	case name == "":
		return mutant.Set("")
	case !ok:
		return false
	case m.Engine:
		return mutant.Set(name)
	}
	return mutant.Set("")
}
