package machineid

import (
	"errors"
	"time"

	"github.com/ringflake/ringflake/internal/mutant"
)

// A holding rides out its store's restart. When a renewal finds the lease
// lost on a store that restarted (a [*RestartError]: gone, or another
// holder's on the restarted store), the holding stays usable up to the
// mark the store last confirmed for it, with no deadline, while the Holder
// takes a lease again at once; the watchers go on seeing it, with that mark
// as its Until, until the marks' clock passes it, and then see the lease
// the Holder holds by then.
//
// Why no one else issues at or below that mark, U, on the ID. It rests on
// the store behaviours numbered in docs/leases.md ("What a store may do")
// only through the Store's promises, which hold in every one of them:
//  1. The store recorded U as the ID's mark before it confirmed it
//     (Store's second promise).
//  2. A take of the ID by anyone after that, on an instance that still has
//     the record, inherits an After at or past U (its third promise), and
//     its holder issues only past its After.
//  3. A take on an instance that lost the record (a restart that forgot, or
//     one that loaded an older snapshot) is granted by an instance started
//     after the confirming call, c on the store's clock, and inherits at
//     least c + Floor (RestartError's second promise); U is at most that,
//     since the store caps every mark at Floor past its clock (Redis:
//     TTL + bound; the floor, Redis's start + TTL + 2·bound, leaves room
//     for its clock stepping back by up to the bound since c).
//
// So the ride's ticks, all at or below U, are apart from every later
// holder's, whoever the store granted the ID to meanwhile, and whichever
// snapshot it came back from. The ride needs no deadline and trusts no
// clock but the marks'. It asks only that the answering instance started
// after c (re.Start), so that the loss is a restart's: a store that forgot
// without one (a flush) promises no floor, and the holding is lost.
//
// The tempting ceiling, c + Floor, is wrong: the restart floor covers the
// marks a restart lost, not the ticks of a newcomer that took the ID while
// the store still ran, say after the store's clock jumped ahead and ended
// the lease early, and that inherited U. (It was the ceiling before issue
// 36; the mutant ride-past-mark restores it.)

// rideLocked starts a ride if err, a renewal's ErrLeaseLost for the held
// lease, allows one, and reports whether it did; the watchers then have
// the ride queued. now is the marks' clock, read before h.mu was taken:
// the clock may be the generator's, injected, and a reading that blocks
// must not hold the Holder's lock (the lease simulation's clock pauses
// hung a world there, its Release waiting on h.mu). A reading a little
// old only sets the ride's timer later, and endRide looks again. The
// caller holds h.mu, before recording the loss. It reports too whether it
// ended a ride whose ceiling had passed.
func (h *Holder) rideLocked(err error, now time.Time) bool {
	var re *RestartError
	ended := false
	if h.ride.Held && !h.ride.Until.After(now) && !mutant.On(mutant.RideStale) {
		// A ride whose ceiling the clock has passed, not ended yet by
		// its timer (a clock that stepped back, then forward): it ends
		// now, and this restart may be ridden in turn.
		ended = h.finishRideLocked()
	}
	if !errors.As(err, &re) || h.ride.Held || !h.lease.Held || h.read.IsZero() || !re.Start.After(h.read) {
		return ended
	}
	ride := h.lease
	ride.Held, ride.Err = true, nil
	if mutant.On(mutant.RidePastMark) {
		// The mutant: the ceiling before issue 36, the store's clock at
		// the last confirmation plus the restart floor's offset.
		if ceil := h.read.Add(re.Floor); ceil.After(ride.Until) {
			ride.Until = ceil
		}
	}
	h.ride, h.rideErr = ride, err
	h.rideEnd.Reset(mutant.Delay(h.rideCheckIn(ride.Until.Sub(now))))
	return h.queueLocked(ride) || ended
}

// endRide runs when the ride's ceiling should have passed on the marks'
// clock: if it has, the watchers see the lease the Holder holds from now on.
func (h *Holder) endRide() {
	now := h.now() // before h.mu: see rideLocked
	h.mu.Lock()
	changed := false
	if h.ride.Held {
		if left := h.ride.Until.Sub(now); left > 0 {
			h.rideEnd.Reset(mutant.Delay(h.rideCheckIn(left)))
		} else {
			changed = h.finishRideLocked()
		}
	}
	h.mu.Unlock()
	if changed {
		h.notify()
	}
}

// finishRideLocked ends the ride, whose ceiling the marks' clock has
// passed: the watchers see the lease the Holder holds from now on. It
// reports whether that queued a report. The caller holds h.mu.
func (h *Holder) finishRideLocked() bool {
	ride := h.ride
	h.ride = Lease{}
	if h.lease.Held && h.lease.ID == ride.ID && !h.lease.After.Equal(ride.After) {
		// The take while riding got the same ID back (it asks for it): a
		// new holding, with the new After. The watchers see the ride end
		// first, so that one holding keeps one After (Leaser's contract,
		// which machineidtest checks); the gap is one report long, and
		// the new After is at or past the ceiling the clock has just
		// passed.
		gap := ride
		gap.Held, gap.Err = false, h.rideErr
		h.queueLocked(gap)
	}
	return h.queueLocked(h.lease)
}

// rideCheckIn is when endRide should look at the clock again, with left to
// go to the ceiling on it: then, or in a renewal period if that is sooner.
// The timer runs on the monotonic clock and the ceiling is on the marks'
// clock, which may step: one stepped back and then forward past the
// ceiling would leave the ride reported, its ceiling passed, and the
// generator refusing ticks past it while the Holder holds a lease the
// store confirmed, for as long as the step back (the lease simulation's
// seed 1900); looking every renewal period bounds that by TTL/3.
func (h *Holder) rideCheckIn(left time.Duration) time.Duration {
	if mutant.On(mutant.RideStale) {
		return max(left, time.Millisecond)
	}
	return min(max(left, time.Millisecond), max(h.cfg.ttl/3, time.Millisecond))
}

// stopRideLocked ends a ride at once, for a Release. The caller holds h.mu.
func (h *Holder) stopRideLocked() {
	h.ride, h.rideErr = Lease{}, nil
	h.rideEnd.Stop()
}
