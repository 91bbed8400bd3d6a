package ringflake

import (
	"math"
	"sync/atomic"

	"github.com/ringflake/ringflake/internal/mutant"
)

// ring remembers, for every residue of the tick modulo the ring's size, the
// last (tick, sequence) pair issued for a tick with that residue.
//
// A slot packs the pair as (tick+1)<<seqBits | sequence, so the zero value
// means "nothing issued yet" and, because the tick sits above the sequence,
// comparing two packed values compares the pairs lexicographically.
//
// Slots are not padded to cache lines: callers at the same instant share one
// tick and so one slot, and padding would only multiply the ring's memory by
// eight for the rare overlap at a tick boundary.
type ring struct {
	slots   []atomic.Uint64 // written only by claim's CAS; read by claim and stats
	size    uint64          // len(slots), written once by init
	mask    uint64          // size-1 if size is a power of two, else 0; written once by init
	seqBits uint            // written once by init
	seqMask uint64          // 1<<seqBits - 1, written once by init
	half    uint64          // 2^(seqBits-1), at least 1: fresh ticks start below it; written once by init

	// Issued IDs are retired + each slot's last sequence + 1 - skipped
	// (see issued). Both counters are added to by claim, once per tick a
	// slot starts, and read by stats.
	retired atomic.Uint64 // the last sequence + 1 of each tick whose slot was since reused
	skipped atomic.Uint64 // the sequences below each tick's start, never issued
}

// init sets up an empty ring of size slots for seqBits of sequence.
func (r *ring) init(size int, seqBits int) {
	r.slots = make([]atomic.Uint64, size)
	r.size = uint64(size)
	r.seqBits = uint(seqBits)
	r.seqMask = 1<<uint(seqBits) - 1
	r.half = max((r.seqMask+1)>>1, 1)
	if size&(size-1) == 0 {
		r.mask = uint64(size - 1)
	}
}

// slot returns the slot of tick. A power-of-two ring (the default) masks
// instead of dividing.
func (r *ring) slot(tick int64) *atomic.Uint64 {
	if r.mask != 0 || r.size == 1 {
		return &r.slots[uint64(tick)&r.mask]
	}
	return &r.slots[uint64(tick)%r.size]
}

// bounds limit the ticks a claim may issue: floor < tick <= ceil. Without a
// lease, floor is -1 and ceil is the layout's last tick.
type bounds struct {
	floor, ceil int64
}

// claimStatus says why a claim did not issue.
type claimStatus uint8

const (
	claimed     claimStatus = iota
	exhausted               // the slot's tick has no sequence left
	belowFloor              // the tick to issue is at or below bounds.floor
	aboveCeil               // the tick to issue is above bounds.ceil
	statusCount             // number of statuses, for counters
)

// claim issues up to n sequence numbers, all in one tick, for a clock that
// reads tick. On success it returns that tick, the first sequence and how
// many it issued (1..n). On failure it returns the status and the tick the
// slot would have issued from. n must be at least 1. key sets the starts of
// this generator's ticks apart from other generators' (see start).
//
// Invariant: for each slot, every successful CAS replaces the packed value
// with a strictly larger one, and the pairs it issues run from some first
// pair above the old value up to the new value, inclusive. So the pairs of
// two successful CASes on one slot lie in disjoint ranges. A tick is only
// ever issued through the slot of its residue, so two issues of the same
// (tick, sequence) would need one slot to pass over the same value twice,
// which a strictly increasing value cannot do. This holds whatever the
// clock says:
//
//   - slot older than tick (or empty): the slot has never held tick, since
//     its value only grows, so tick is unused. Start it at start(tick, key),
//     below 2^seqBits; the pairs (tick, 0..start-1) are passed over and never
//     issued, since the value is already past them. This is every new tick,
//     and a step back shorter than the ring to a tick that was not used: that
//     tick starts fresh, at its own start, like any other.
//   - slot equal to tick: continue its sequence (normal operation, and a step
//     back shorter than the ring to a tick that was used).
//   - slot newer than tick: the clock stepped back by at least the ring's
//     span; continue the newer tick's sequence, from where it is. Those IDs
//     carry a tick the clock has already shown, never a future one.
//
// Where a tick starts is no part of the argument, only of how IDs spread.
//
// A failed CAS means another caller moved the slot forward; the decision is
// made again from the newer value, so the invariant still holds. The loop is
// bounded: each retry follows someone else's success in this slot, and after
// at most 2^seqBits of those the slot reports exhausted.
//
// Taking a mutex here would also be correct, but would serialize callers of
// different ticks and make a step back wait on the lock, as sonyflake does.
func (r *ring) claim(tick int64, n uint64, b bounds, key uint64) (t int64, seq, got uint64, st claimStatus) {
	slot := r.slot(tick)
	fresh := uint64(tick+1) << r.seqBits
	for {
		old := slot.Load()
		var first uint64
		switch {
		case old < fresh || mutant.On(mutant.RingForgets) && old>>r.seqBits > uint64(tick+1):
			first = fresh + r.start(tick, key, n)
		case old&r.seqMask == r.seqMask:
			return int64(old>>r.seqBits) - 1, 0, 0, exhausted
		default:
			first = old + 1
		}
		got = min(n, r.seqMask-first&r.seqMask+1)
		t = int64(first>>r.seqBits) - 1
		switch {
		case t <= b.floor:
			return t, 0, 0, belowFloor
		case t > b.ceil:
			return t, 0, 0, aboveCeil
		}
		mutant.Yield(mutant.SiteClaim)
		var ok bool
		if old < fresh {
			ok = r.startTick(slot, old, first, got)
		} else {
			ok = slot.CompareAndSwap(old, first+got-1)
		}
		if ok {
			return t, first & r.seqMask, got, claimed
		}
	}
}

// startTick is claim's CAS for a tick that starts fresh at first, over
// old, an older tick or nothing, keeping the counters that issued reads.
// The start goes into skipped before the CAS (and comes out again if the
// CAS fails), and old's count into retired after it. issued reads retired
// first, then the slots, then skipped, so every start it counts, in a slot
// or in retired, is already in skipped: a snapshot may count short while
// ticks start, never over. Subtracting the start after the CAS instead
// would let a snapshot see the new slot without the subtraction, and count
// up to half a tick over. A tick that starts at 0, as at saturation, costs
// one atomic add, as before ticks had starts; one that starts higher, two.
func (r *ring) startTick(slot *atomic.Uint64, old, first, got uint64) bool {
	start := first & r.seqMask
	if start != 0 {
		r.skipped.Add(start)
	}
	if !slot.CompareAndSwap(old, first+got-1) {
		if start != 0 {
			r.skipped.Add(-start)
		}
		return false
	}
	if old != 0 {
		r.retired.Add(old&r.seqMask + 1)
	}
	return true
}

// nextServable returns the first tick after tick at which a clock reading
// could claim, judging by the slots now: the tick's slot is older than it
// (or empty), or holds it or a later tick with sequence left. A slot
// exhausted at w can never serve a reading at or before w, since its value
// only grows and only a reading after w moves it on; the first reading
// after w that maps to it is w+size. So when the slot of tick+1 is
// exhausted at a later tick (a step back longer than the ring's memory, or
// its spare sequence used up), waiting for the next tick is futile, and
// this tells how long to wait instead. Up to scanSlots slots are looked at;
// a ring larger than that may have a servable tick further on, and the
// answer is then at most tick+scanSlots+1, where the caller looks again.
// Only waits depend on it, never uniqueness: claim decides.
//
// A slot is compared by its tick, old>>seqBits (the tick+1 it holds),
// rather than by packing u: (u+1)<<seqBits does not fit in 64 bits for
// every u the scan may reach once seqBits is 55 or more.
func (r *ring) nextServable(tick int64) int64 {
	n := min(int64(r.size), scanSlots)
	first := int64(math.MaxInt64)
	for k := int64(1); k <= n; k++ {
		u := tick + k
		old := r.slot(u).Load()
		if old>>r.seqBits <= uint64(u) || old&r.seqMask != r.seqMask {
			return u
		}
		first = min(first, int64(old>>r.seqBits)-1+int64(r.size))
	}
	if n < int64(r.size) {
		return min(first, tick+n+1)
	}
	return first
}

// scanSlots bounds nextServable's look at the ring, which runs only when a
// claim has found its tick exhausted.
const scanSlots = 256

// latestTick returns the latest tick any slot has issued, or -1.
func (r *ring) latestTick() int64 {
	latest := int64(-1)
	for i := range r.slots {
		if v := r.slots[i].Load(); v != 0 {
			latest = max(latest, int64(v>>r.seqBits)-1)
		}
	}
	return latest
}

// issued counts the IDs the ring has issued: those of retired ticks plus,
// for each slot in use, its last sequence + 1, less the sequences skipped
// below the ticks' starts (a slot's sequences are issued from its tick's
// start up without gaps). The order of the reads makes it count short while
// ticks start, never over (see startTick). Counted short just as a
// generator starts, it may come out below zero: it returns 0 then, which
// Stats's monotonic count passes over.
func (r *ring) issued() uint64 {
	n := r.retired.Load()
	for i := range r.slots {
		if v := r.slots[i].Load(); v != 0 {
			n += v&r.seqMask + 1
		}
	}
	n -= r.skipped.Load()
	if int64(n) < 0 {
		return 0
	}
	return n
}
