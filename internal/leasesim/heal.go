package leasesim

import (
	"fmt"
	"strings"
	"time"
)

// The liveness check. At the heal, the world's duration in, every fault
// stops: no more clock steps, pauses, cuts, hosts down, restarts, slow,
// lost or stuck calls; every clock is set right (no offset); the processes
// stop coming and going, each keeping its generator, or making one with
// New, with no deadline short of the world's end, until it has one. From
// then on, within liveBound, every live process must issue again: each
// one, if the range has an ID for each, or as many as the range has IDs.
// A call counts if it began after the heal and returned an ID. The world
// ends as soon as they have, or fails at the bound.

// liveBound is how long after the heal every live process must issue
// again, for a world whose clocks read at most ahead ahead of the true
// time before it:
//
//   - 6·TTL: the calls in flight at the heal end within 1.5·TTL plus 1.5
//     call timeouts (a call stuck past its context, then a slow answer;
//     a call timeout is at most TTL/3), and a pause in a clock reading
//     within 2·TTL; a lease the store keeps for a process that crashed, or
//     for a token given up on, then runs out within TTL at the store's
//     slowest rate, 0.8 (1.25·TTL; a Kubernetes contender waits the TTL
//     rounded up to a second, plus the margin, at most TTL/3, at that
//     rate: 1.25·(TTL + TTL/3), and the 1.25 s of the rounding, counted
//     below); the Holder tries again for a free ID every TTL/10 to TTL/2,
//     and its take and mark raise are two calls: 4.5·TTL in all, and the
//     pause's 2·TTL overlaps them;
//   - max(ahead, 2·slack + 2 s): the mark an ID inherits was set by a
//     clock at most ahead ahead, a TTL past it; Redis's restart floor is
//     TTL + 2·slack past the restart, up to 2 s later for its whole-second
//     uptime;
//     the newcomer's clock, now right, passes either within that (plus the
//     TTL, counted above) of the heal; and a generator whose ring holds
//     ticks a clock ahead issued waits at most ahead for its clock to pass
//     them;
//   - 2 s: Kubernetes' rounding (1.25 s), New's retries after a failure
//     before the heal (up to 500 ms apart), an issuer's gap between calls,
//     a tick.
func (w *world) liveBound() time.Duration {
	ahead := max(time.Duration(w.aheadSeen.Load()), 0)
	floor := time.Duration(0)
	if w.p.kind.forgets {
		floor = 2*w.slack() + 2*time.Second
	}
	jumps := time.Duration(0)
	if w.p.jumps {
		// Redis's clock may have read up to jumpsAhead ahead, so its
		// floor and marks lie that much later in true time, and a lease
		// granted before a step back lasts up to the bound longer.
		jumps = jumpsAhead(w.p.bound) + w.p.bound
	}
	return 6*w.p.ttl + max(ahead, floor) + 2*time.Second + jumps
}

// heal stops every fault and sets every clock right.
func (w *world) heal() {
	w.chk.mu.Lock()
	w.chk.healAt = time.Now()
	w.chk.need = min(len(w.procs), int(w.p.hi-w.p.lo+1))
	w.chk.mu.Unlock()
	w.healedFlag.Store(true)
	close(w.healed)
	if w.p.jumps {
		w.srv.healClock()
	}
	for _, p := range w.procs {
		p.cut.Store(0)
		p.clk.pause.Store(0)
		p.armed.Store(nil)
		p.setOffset(0)
	}
	w.log.add("world", "heals: no more faults, every clock right; every live process must issue within %v", w.liveBound())
}

// isHealed reports whether the world has healed.
func (w *world) isHealed() bool { return w.healedFlag.Load() }

// awaitLive waits, after the heal, until enough processes have issued
// again, and fails the world at the bound.
func (w *world) awaitLive() {
	bound := w.liveBound()
	t := time.NewTimer(w.delay(bound))
	defer t.Stop()
	select {
	case <-w.lively:
		w.log.add("world", "every live process issued again")
		return
	case <-w.stop:
		return
	case <-t.C:
	}
	w.chk.mu.Lock()
	defer w.chk.mu.Unlock()
	var late []string
	for _, p := range w.procs {
		if !w.chk.revivedBy[p] {
			l := "no lease seen"
			if le, ok := w.chk.lastLease[p]; ok {
				l = fmt.Sprintf("its Holder's last lease: machine ID %d held=%v after %s until %s err=%v", le.ID, le.Held, w.at(le.After), w.at(le.Until), le.Err)
			}
			late = append(late, fmt.Sprintf("%s (%s)", p.name(), l))
		}
	}
	w.chk.failLocked(invLiveness, "%d of %d processes issued within %v of the heal, where %d must: not %s",
		len(w.chk.revivedBy), len(w.procs), bound, w.chk.need, strings.Join(late, "; "))
}

// revived notes that p's generator returned IDs from a call that began at
// began, and, once enough processes have issued since the heal, says so.
func (k *checker) revived(p *proc, began time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.healAt.IsZero() || began.Before(k.healAt) || k.revivedBy[p] {
		return
	}
	k.revivedBy[p] = true
	if len(k.revivedBy) == k.need {
		close(k.w.lively)
	}
}
