package machineid

import (
	"errors"
	"time"

	"github.com/ringflake/ringflake/internal/mutant"
)

// A holding rides out its store's restart. When a renewal finds the lease
// lost on a store that restarted (a [*RestartError]: gone, or taken by
// another holder on the restarted store), the holding that
// was confirmed stays usable below a ceiling, with no deadline, while the
// Holder takes a lease again at once; the watchers go on seeing it, with
// the ceiling as its Until, until the marks' clock passes the ceiling, and
// then see the lease the Holder holds by then.
//
// Why no one else issues below the ceiling on the ID: let c be the store's
// clock read in the call that last confirmed the holding, and the ceiling
// c + Floor. A take by anyone else after that call was granted either by
// the instance that ran it, or by one started after it. The latter inherit
// at least c + Floor (RestartError's promise). The instance that ran it
// grants the ID to no one while the holding's lease lasts there, which is
// at least until the deadline; and it has died before the deadline, if the
// answering instance is another: the answer came before the deadline, from
// an instance that started after the one that ran the call died. If the
// answering instance is the one that ran it (a flush or an eviction that
// rounding let through), its takes inherit at least Start + Floor, past
// the ceiling, since Start is after c. The argument is about every take
// of the ID since c, free or not, so the ride is as safe when the renewal
// finds another holder on the ID as when it finds none: that holder took
// it on an instance started after c, past the ceiling; the Holder then
// takes another ID (its Prefer is taken). So:
//   - the answer must come before the deadline: one that came later could
//     come from a server that restarted after a newcomer took the ID, on
//     the old server once the lease had run out there, below the ceiling;
//   - Start must be after c: a store that forgot without restarting (a
//     flush) promises no floor above c, and the holding is lost as before;
//   - a rule that kept the old holding past the ceiling, or took the ID
//     again keeping its old After, would issue into a newcomer's ticks
//     after two restarts: one that took the ID on a server that started
//     after c and died before the holder's renewal reached the next.
//
// The ride's lease is the same holding (ID, After) with Until = c + Floor,
// or the Until confirmed if that is later (a clock ahead of the store's):
// the store recorded that mark before it restarted, and a restart floor
// covers every mark recorded. The ticks below it that this holding issued
// before are its own, which the generator's ring keeps apart as always.

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
	if !errors.As(err, &re) || h.ride.Held || h.read.IsZero() || !re.Start.After(h.read) || re.Floor <= 0 {
		return ended
	}
	if mutant.On(mutant.RideNoDeadline) {
		// The mutant: a lease that lapsed at its deadline rides all the
		// same, as if it were still held.
		if h.lease.ID < 0 || h.lease.After.IsZero() && h.lease.Until.IsZero() {
			return ended
		}
	} else if !h.lease.Held || time.Until(h.deadline) <= 0 {
		return ended
	}
	ride := h.lease
	ride.Held, ride.Err = true, nil
	if ceil := h.read.Add(re.Floor); ceil.After(ride.Until) {
		ride.Until = ceil
	}
	if mutant.On(mutant.RideNoCeiling) {
		ride.Until = ride.Until.Add(time.Hour)
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
