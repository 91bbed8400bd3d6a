package leasesim

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/machineid"
)

// The invariants the checker holds a world to, at every step. Each failure
// names one.
const (
	invUnique    = "unique"        // an ID was issued twice
	invOverlap   = "overlap"       // two generators' holdings of one machine ID issued overlapping ticks
	invFloor     = "floor"         // a tick at or below the mark every holding of its machine ID inherited
	invPastMark  = "past-mark"     // a tick past the mark the store recorded for its holding
	invReleased  = "released-mark" // a tick past the mark a release brought its holding down to
	invMarkBack  = "mark-back"     // a mark went backwards: a holding inherited less than the store recorded before, or its Holder reported less than before
	invExclusive = "exclusive"     // the store granted an ID that another generator still reported held
	invBound     = "bound"         // a call waited past its bound
	invLive      = "released-live" // a generator's call saw its lease released: the lease went before the generator stopped
	invTyped     = "typed"         // a call failed with an error that is not the package's
	invLiveness  = "liveness"      // after the heal, a live process did not issue again within the bound
	invRefused   = "refused"       // a take refused a clock that was within the bound of the store's reference
	invRideLive  = "ride-live"     // a holding that must ride out a store's restart issued nothing within the ride's cover
)

// slack is what a bound allows past itself, in virtual time, where timers
// fire on time.
const slack = time.Millisecond

// holding is one stretch of a token's lease on one machine ID, from the
// store's grant to the token's release or loss, as the store recorded it,
// with what its generator issued.
type holding struct {
	inc   *incarnation
	id    int64
	token string
	after time.Time // the mark it inherited, as the Holder was told
	until time.Time // the latest mark the store recorded for it
	epoch int       // the store's epoch when it last wrote it
	freed bool      // a release may have brought the mark down, to free
	free  time.Time
	first int64 // the ticks it issued, or -1
	last  int64

	read  time.Time     // the store's clock in its latest grant or renewal (Grant.Clock)
	floor time.Duration // the Floor of the store's RestartError for its claims; 0 for a store with none

	granted, confirmed int64 // the checker's sequence numbers of its grant and of the store's latest write for it
}

// checker holds a world to the invariants. The store calls it as it acts,
// under its lock, and the issuers with what they got. Safe for concurrent
// use.
type checker struct {
	w *world

	mu      sync.Mutex // protects the fields below
	seq     int64      // the store's grants and writes for holdings, counted
	print   uint64     // a fingerprint of the IDs in the order they were recorded
	ids     map[ringflake.ID]*incarnation
	byID    map[int64][]*holding // every holding of each machine ID, oldest first
	incs    []*incarnation
	failure *Failure

	healAt    time.Time                 // when the world healed; zero before
	need      int                       // how many processes must issue again after it
	revivedBy map[*proc]bool            // the processes that have
	lastLease map[*proc]machineid.Lease // the latest lease each process's Holder reported
}

// Failure is the first invariant a world broke: which, when in virtual
// time, and how.
type Failure struct {
	Invariant string
	At        time.Duration // virtual time since the world began
	Detail    string
}

func (f *Failure) String() string {
	return fmt.Sprintf("invariant=%s at=%.6fs: %s", f.Invariant, f.At.Seconds(), f.Detail)
}

func newChecker(w *world) *checker {
	return &checker{w: w, ids: map[ringflake.ID]*incarnation{}, byID: map[int64][]*holding{},
		revivedBy: map[*proc]bool{}, lastLease: map[*proc]machineid.Lease{}}
}

// failLocked records the first failure and stops the world. The caller
// holds mu.
func (k *checker) failLocked(inv, format string, a ...any) {
	if k.failure != nil {
		return
	}
	k.failure = &Failure{Invariant: inv, At: time.Since(k.w.start), Detail: fmt.Sprintf(format, a...)}
	k.w.log.add("check", "FAIL %s", k.failure)
	k.w.halt()
}

// fail is failLocked for a caller that does not hold mu.
func (k *checker) fail(inv, format string, a ...any) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.failLocked(inv, format, a...)
}

// failed returns the first failure, or nil.
func (k *checker) failed() *Failure {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.failure
}

// add registers a generator's incarnation.
func (k *checker) add(inc *incarnation) {
	k.mu.Lock()
	k.incs = append(k.incs, inc)
	k.mu.Unlock()
}

// grant starts inc's holding of id for token, which inherits after. The
// Leaser's first promise is checked here: no other generator may still
// report id held under a holding the store remembers.
func (k *checker) grant(inc *incarnation, id int64, token string, after time.Time, epoch int) *holding {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.seq++
	h := &holding{inc: inc, id: id, token: token, after: after, epoch: epoch, first: -1, last: -1, granted: k.seq, confirmed: k.seq}
	for _, o := range k.byID[id] {
		// The store's third promise: what it recorded for the ID before
		// is inherited, or what a release brought it down to. A store
		// that forgot it in a restart owes only its restart floor, which
		// the ticks themselves are checked against.
		mark := o.until
		if o.freed {
			mark = o.free
		}
		if o.epoch == epoch && after.Before(mark) {
			k.failLocked(invMarkBack, "%s inherited machine ID %d with mark %s, below the %s the store recorded for %s",
				inc, id, k.w.at(after), k.w.at(mark), o.inc)
		}
	}
	for _, o := range k.incs {
		if o == inc || o.g == nil || k.w.p.kind.lock && o.cl.dead.Load() {
			// A lock goes with its process: a dead one's generator may
			// still report its lease held until its deadline, but issues
			// nothing more.
			continue
		}
		l := o.g.Lease()
		if !l.Held || l.ID != id {
			continue
		}
		if rep := k.reported(o, id, l.After); rep != nil && (rep.epoch != epoch || k.w.p.jumps) {
			// A holding the store last wrote before it restarted, which
			// its Holder rides out (machineid, ride.go): it issues at most
			// to l.Until, which the restart floor puts at or below every
			// mark a take inherits from then on. Or one whose lease ran
			// out early in the store, its clock stepped forward (within
			// the bound, which its docs allow): the newcomer inherits the
			// mark the store recorded for it, l.Until or later.
			if k.w.tickOf(after) < k.w.tickOf(l.Until) {
				k.failLocked(invExclusive, "the store granted machine ID %d to %s, inheriting %s, while %s still reported it held up to %s across a restart (after %s)",
					id, inc, k.w.at(after), o, k.w.at(l.Until), k.w.at(l.After))
			}
			continue
		}
		if last := k.latest(o, id); last != nil && last.epoch == epoch {
			k.failLocked(invExclusive, "the store granted machine ID %d to %s while %s still reported it held (after %s, until %s)",
				id, inc, o, k.w.at(l.After), k.w.at(l.Until))
		}
	}
	k.byID[id] = append(k.byID[id], h)
	return h
}

// latest returns inc's latest holding of id, or nil. The caller holds mu.
func (k *checker) latest(inc *incarnation, id int64) *holding {
	hs := k.byID[id]
	for i := len(hs) - 1; i >= 0; i-- {
		if hs[i].inc == inc {
			return hs[i]
		}
	}
	return nil
}

// reported returns inc's latest holding of id that inherited after, the
// holding a lease inc's generator reports belongs to, or nil. The caller
// holds mu.
func (k *checker) reported(inc *incarnation, id int64, after time.Time) *holding {
	hs := k.byID[id]
	for i := len(hs) - 1; i >= 0; i-- {
		if hs[i].inc == inc && hs[i].after.Equal(after) {
			return hs[i]
		}
	}
	return nil
}

// holdingOf returns token's latest holding of id, or nil.
func (k *checker) holdingOf(token string, id int64) *holding {
	k.mu.Lock()
	defer k.mu.Unlock()
	hs := k.byID[id]
	for i := len(hs) - 1; i >= 0; i-- {
		if hs[i].token == token {
			return hs[i]
		}
	}
	return nil
}

// recorded notes that the store recorded until as h's mark, answering
// with its clock reading read; floor is the Floor of the RestartError it
// would answer h's renewal with once it restarted.
func (k *checker) recorded(h *holding, until time.Time, epoch int, read time.Time, floor time.Duration) {
	if h == nil {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, o := range k.byID[h.id] {
		// The store's first promise: once it granted the ID to another
		// holding, the lease this one had is gone, and no renewal or take
		// of its token confirms it again (issue 36: a lease an older
		// snapshot brought back, renewed, or taken again with its old
		// After, after a newcomer took the ID on a run that forgot it).
		if o != h && o.granted > h.confirmed {
			k.failLocked(invExclusive, "the store confirmed %s's holding of machine ID %d (after %s) again after it granted the ID to %s (after %s)",
				h.inc, h.id, k.w.at(h.after), o.inc, k.w.at(o.after))
			break
		}
	}
	k.seq++
	h.confirmed = k.seq
	h.until = later(h.until, until)
	if epoch != h.epoch {
		h.read = time.Time{}
	}
	h.epoch = epoch
	// The latest reading, or an earlier one if later: the Holder keeps a
	// take's reading over its raise's, and a store's clock that stepped
	// back between them reads less in the raise; a later instance's floor
	// is past the furthest reading of every earlier one, since its clock
	// never steps back across a restart.
	h.read, h.floor = later(h.read, read), floor
}

// released notes the release of h, which left its mark at mark; lowered
// says whether the release may have brought it down. No tick h issued may
// be past it, now or later.
func (k *checker) released(h *holding, mark time.Time, lowered bool) {
	if h == nil || !lowered {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	h.freed, h.free = true, mark
	if h.last > k.w.tickOf(mark) {
		k.failLocked(invReleased, "the release of %s brought machine ID %d's mark down to %s, below tick %d it issued",
			h.inc, h.id, k.w.at(mark), h.last)
	}
}

// issued checks the IDs inc's generator returned.
func (k *checker) issued(inc *incarnation, ids []ringflake.ID) {
	if len(ids) == 0 {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, id := range ids {
		if o, dup := k.ids[id]; dup {
			k.failLocked(invUnique, "ID %d (tick %d, machine %d) issued by %s and %s", id, k.w.ticksOf(id), k.w.machineOf(id), o, inc)
			return
		}
		k.ids[id] = inc
		k.print = (k.print ^ uint64(id)) * 1099511628211 // FNV-1a's step, a word at a time
		k.place(inc, id)
	}
}

// place attributes id to the holding of its machine ID by inc that it was
// issued under, the latest whose inherited mark is below its tick, and
// checks it against that holding's marks and the other generators'
// holdings. The caller holds mu.
func (k *checker) place(inc *incarnation, id ringflake.ID) {
	t, m := k.w.ticksOf(id), k.w.machineOf(id)
	var h *holding
	hs := k.byID[m]
	for i := len(hs) - 1; i >= 0; i-- {
		if hs[i].inc == inc && k.w.tickOf(hs[i].after) < t {
			h = hs[i]
			break
		}
	}
	switch {
	case h == nil:
		k.failLocked(invFloor, "%s issued tick %d with machine ID %d, at or below the mark each of its holdings of it inherited", inc, t, m)
		return
	case t > k.w.tickOf(h.until):
		k.failLocked(invPastMark, "%s issued tick %d with machine ID %d, past the mark %s (tick %d) the store recorded for it", inc, t, m, k.w.at(h.until), k.w.tickOf(h.until))
		return
	case h.freed && t > k.w.tickOf(h.free):
		k.failLocked(invReleased, "%s issued tick %d with machine ID %d, past the mark %s (tick %d) its release left", inc, t, m, k.w.at(h.free), k.w.tickOf(h.free))
		return
	}
	if h.first >= 0 && t >= h.first && t <= h.last {
		return
	}
	if h.first < 0 || t < h.first {
		h.first = t
	}
	h.last = max(h.last, t)
	for _, o := range hs {
		if o.inc != inc && o.first >= 0 && o.first <= h.last && h.first <= o.last {
			k.failLocked(invOverlap, "machine ID %d: %s issued ticks %d..%d (after %s), %s issued ticks %d..%d (after %s)",
				m, inc, h.first, h.last, k.w.at(h.after), o.inc, o.first, o.last, k.w.at(o.after))
			return
		}
	}
}

// leaseSeen checks a lease a Holder reported against the one it reported
// before: within one holding, the confirmed mark never goes back.
func (k *checker) leaseSeen(p *proc, prev, l machineid.Lease) {
	k.mu.Lock()
	k.lastLease[p] = l
	k.mu.Unlock()
	if prev.Held && l.Held && prev.ID == l.ID && prev.After.Equal(l.After) && l.Until.Before(prev.Until) {
		k.fail(invMarkBack, "%s's Holder reported machine ID %d's mark back from %s to %s", p.name(), l.ID, k.w.at(prev.Until), k.w.at(l.Until))
	}
}

// callError checks an error a generator's NextID or NextN returned: the
// package's own, and never the lease's release. Close stops the generator
// before it releases the lease, and New lets no other generator use a
// Leaser that it releases, so a call sees ErrClosed, never a lease
// released under it.
func (k *checker) callError(inc *incarnation, err error) {
	var ce *ringflake.ClockError
	switch {
	case errors.Is(err, machineid.ErrReleased):
		k.fail(invLive, "%s failed with its lease released (closing: %v): %v", inc, inc.closing.Load(), err)
	case !errors.As(err, &ce) && !errors.Is(err, ringflake.ErrClosed):
		k.fail(invTyped, "%s failed with %T, neither a *ClockError nor ErrClosed: %v", inc, err, err)
	}
}

// refused checks a refusal of inc's clock for its offset, ce, against what
// the take it judged by read, j: the clock must have been more than the
// bound off the reference that the reading stands for, less the clock's
// quantum (the Holder's reading rounds down by up to one). The Holder
// refuses only where |By| − Within passes the bound, and an honest
// reading is within its Within of the reference, and the true offset
// within half the round trip of By; so a refusal of a clock within the
// bound is a reading that strayed past its Within, as machineid_etcd's
// fleet clock did after a leader change before D4 (fleet.go).
//
// A clock that stepped while the take ran, or paused, is not checked: the
// Holder measured an offset it no longer has.
func (k *checker) refused(inc *incarnation, j judged, ce *machineid.ClockOffsetError) {
	b := k.w.p.bound
	switch by := j.off - j.ref; {
	case !j.read:
		k.fail(invRefused, "%s was refused for its clock with no reading of the store's to judge it by: %v", inc, ce)
	case j.weak:
		k.fail(invRefused, "%s was refused for its clock against %s, a reference too few records agree on (tentative): %v", inc, j.source, ce)
	case b >= 0 && !j.moved && by.Abs() <= b-quantum:
		k.fail(invRefused, "%s was refused for its clock, %v off %s, which stands for a reference %v off the true time, where its clock was %v off: within the bound %v: %v",
			inc, ce.By, j.source, j.ref, j.off, b, ce)
	}
}

// bound checks that a call that took took (its process's pauses taken
// out) stayed within limit.
func (k *checker) bound(inc *incarnation, what string, took, limit time.Duration) {
	if took > limit+slack {
		k.fail(invBound, "%s: %s took %v, past its bound of %v", inc, what, took, limit)
	}
}
