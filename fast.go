package ringflake

import (
	"time"

	"github.com/ringflake/ringflake/internal/mutant"
)

// fast is the common case of NextID with nothing in the way: the default
// clock, a tick in range, no step back, a valid machine state and a slot
// with room. Anything else returns false and goes the full way round, which
// reads the clock again; fast has issued nothing in that case.
//
// It does the work of read, ticksAt, ring.claim and Layout.compose in fewer
// steps, each shortcut explained where it is taken; TestFastMatchesClaim
// checks that it issues what claim would. benchmarks/README.md gives what
// each step costs, measured one step at a time.
func (g *Generator) fast() (ID, bool) {
	if g == nil || g.wall == nil {
		return 0, false
	}
	// wallClock.unixNano, written out: the compiler does not inline a
	// function that makes two calls. The resync check stays on every call,
	// since it is what bounds how late a step of the wall clock is seen,
	// whatever the tick's length.
	c := g.wall
	m := int64(time.Since(c.base))
	if m >= c.next.Load() {
		c.resync(m)
	}
	// The offset from the epoch, in wrapping arithmetic where read
	// saturates: one unsigned comparison with fastEnd rejects every
	// reading that ticksAt would refuse, a wrapped one included, and keeps
	// d below 2^63, as divide requires (see fastEnd).
	d := uint64(m + c.offset.Load() - g.epochNano)
	if d >= g.fastEnd {
		return 0, false
	}
	ticks := int64(divide(d, uint64(g.layout.Tick), g.recip))
	if latest := g.latest.Load(); ticks != latest {
		if ticks < latest {
			return 0, false
		}
		g.observe(ticks) // raises latest; a step back is the slow path's
	}
	st := g.state.Load()
	if st.kind != held || ticks <= st.b.floor || ticks > st.b.ceil {
		return 0, false
	}
	// One step of ring.claim, inlined, for the case that needs no
	// bookkeeping: the slot holds this tick with room. The CAS replaces old
	// with the strictly larger next = old+1 and issues exactly next, as
	// claim's invariant requires. Anything else (an empty slot, a slot of
	// another tick, a full one, a lost CAS) goes to claim itself: a tick that
	// starts fresh takes its start from claim, once per tick.
	//
	// The slot holds this tick with room when fresh <= old < fresh+seqMask,
	// which one unsigned comparison of old-fresh tests: an empty slot or an
	// older tick wraps round to at least 2^63, a newer tick is at least
	// 1<<seqBits past fresh, and a full slot is fresh+seqMask.
	r := &g.ring
	slot := r.slot(ticks)
	fresh := uint64(ticks+1) << (r.seqBits & 63)
	old := slot.Load()
	if old-fresh >= r.seqMask {
		return g.fastClaim(ticks, st)
	}
	next := old + 1
	if !slot.CompareAndSwap(old, next) {
		return g.fastClaim(ticks, st)
	}
	mutant.Yield(mutant.SiteClaim) // between the CAS and the state's re-check, where Close may come
	// A state replaced since the load above (Close, or a lease change)
	// drops the claimed sequence, as claim does: Close's Release is told
	// the latest tick issued, so no ID may leave once it has stored the
	// closed state. Without a lease only Close replaces the state and no
	// one relies on that, but skipping the load for such generators saves
	// nothing measurable: the branch that would skip it costs what it does.
	if g.state.Load() != st && !mutant.On(mutant.NoRecheck) {
		return 0, false
	}
	// Layout.compose, with the time field's shift computed once by New and
	// the machine's bits once per machine state.
	return ID(ticks<<(g.timeShift&63) | st.part | int64(next&r.seqMask)), true
}

// fastClaim is fast's way round for a slot that needs claim's full loop.
func (g *Generator) fastClaim(ticks int64, st *machineState) (ID, bool) {
	a := attempt{ticks: ticks, st: st}
	c, cs := g.claim(&a, 1)
	if cs != claimed {
		return 0, false
	}
	return g.layout.compose(c.tick, c.machine, int64(c.seq)), true
}

// fastEnd returns the bound fast puts on a clock reading's offset from the
// epoch: fast computes d = now-Epoch in nanoseconds in wrapping int64
// arithmetic and issues only if d, taken as unsigned, is below the bound.
//
// The bound is the end of the layout's range, (maxTicks+1)×Tick, so that
// the one comparison rejects what ticksAt rejects: a reading before the
// epoch (a negative d, huge as unsigned) or past the last tick. Where read
// saturates, fast wraps. A true difference at or above 2^63 wraps to a
// negative d and is rejected, but one below -2^63 wraps round to 2^64 plus
// it, which is at least 2^63-Epoch since now >= -2^63; so for an epoch
// after 1970 the bound is at most 2^63-Epoch. Such readings, and those past
// the year 2262 that this cuts from a range reaching beyond it, go the slow
// way, which saturates. The bound is below 2^63, as divide requires. It is
// 0, so that fast never issues, for an invalid layout.
func fastEnd(l Layout) uint64 {
	maxTicks := l.maxTicks()
	if maxTicks < 0 {
		return 0
	}
	end := uint64(maxTicks+1) * uint64(l.Tick) // fits: maxTicks <= MaxInt64/Tick - 1
	if e := l.Epoch.UnixNano(); e > 0 {
		end = min(end, 1<<63-uint64(e))
	}
	return end
}
