package ringflake

// fast is the common case of NextID with nothing in the way: the default
// clock, a tick in range, no step back, a valid machine state and a slot
// with room. Anything else returns false and goes the full way round, which
// reads the clock again; fast has issued nothing in that case.
func (g *Generator) fast() (ID, bool) {
	if g == nil || g.wall == nil {
		return 0, false
	}
	d := subSat(g.wall.unixNano(), g.epochNano)
	ticks, ok := g.layout.ticksAt(d, g.maxTicks, g.recip)
	if !ok {
		return 0, false
	}
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
	// One step of ring.claim, inlined, for the two cases that need no
	// bookkeeping: the slot is empty, or it holds this tick with room. The
	// CAS replaces old with the strictly larger next and issues exactly
	// next, as claim's invariant requires. Anything else (a slot of another
	// tick, a full one, a lost CAS) goes to claim itself.
	r := &g.ring
	slot := r.slot(ticks)
	fresh := uint64(ticks+1) << r.seqBits
	old := slot.Load()
	next := fresh
	if old != 0 {
		if old>>r.seqBits != uint64(ticks+1) || old&r.seqMask == r.seqMask {
			return g.fastClaim(ticks, st)
		}
		next = old + 1
	}
	if !slot.CompareAndSwap(old, next) {
		return g.fastClaim(ticks, st)
	}
	if g.state.Load() != st {
		return 0, false
	}
	return g.layout.compose(ticks, st.machine, int64(next&r.seqMask)), true
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
