package ringflake

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringflake/ringflake/machineid"
)

// Generator issues unique IDs. It is safe for concurrent use by any number
// of goroutines, and issuing takes no lock: one clock read, one atomic load
// of the machine state and one CAS on the current tick's ring slot.
//
// Make a Generator with [New]; the zero value returns [ErrClosed].
type Generator struct {
	ring   ring
	state  atomic.Pointer[machineState] // replaced by New, the lease watcher and Close; read by every issue
	latest atomic.Int64                 // the latest tick the clock has shown; raised by observe
	stats  counters

	clock     func() time.Time // the injected clock, or nil for wall; written once by New
	wall      *wallClock       // the default clock, or nil; written once by New
	epochNano int64            // layout.Epoch.UnixNano(), written once by New
	layout    Layout           // written once by New
	maxTicks  int64            // layout.MaxTicks(), written once by New
	recip     uint64           // reciprocal(layout.Tick), written once by New
	maxWait   time.Duration    // written once by New
	logger    *logger          // nil without WithLogger; written once by New
	ticks     tickWait         // shares one sleeper among callers waiting for a tick

	leaser    machineid.Leaser // nil unless the machine ID is leased; written once by New
	stopWatch func()           // stops the lease watch; nil unless leased
	closeOnce sync.Once
	closeErr  error // written inside closeOnce
}

// New returns a Generator configured by opts. It needs a machine ID, from
// [WithMachineID] or [WithMachineIDSource]; every other option has a
// default.
//
// New returns an error wrapping [ErrInvalidConfig] if no machine ID or both
// kinds are given, an option is out of range, the layout is invalid or
// cannot issue an ID at the generator's clock's time now (the epoch is
// ahead of it, the layout's range has ended, or Tick is under 1µs), or the
// machine ID source is a [machineid.Leaser] that a live generator already
// uses. With a source it also returns the source's error, wrapped; one
// wrapping [context.DeadlineExceeded] if the source did not answer within
// the acquire timeout; and a [*ClockError] wrapping [ErrMarkAhead] if the
// leased ID's inherited mark is further ahead of the clock than what is
// left of the acquire timeout, or [ErrLeaseLost] if the lease was lost
// before the generator could issue.
func New(opts ...Option) (*Generator, error) {
	c := defaultConfig()
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	// Without its monotonic reading, the epoch means the same instant to an
	// injected clock (t.Sub) and to the default one (Unix nanoseconds).
	c.layout.Epoch = c.layout.Epoch.Round(0)
	g := &Generator{
		clock:     c.clock,
		epochNano: c.layout.Epoch.UnixNano(),
		layout:    c.layout,
		maxTicks:  c.layout.maxTicks(),
		recip:     reciprocal(c.layout.Tick),
		maxWait:   c.maxWait,
	}
	g.ring.init(c.ringSize, c.layout.SequenceBits)
	g.latest.Store(-1)
	if g.clock == nil {
		g.wall = newWallClock()
	}
	if err := g.canIssueNow(); err != nil {
		return nil, err
	}
	if c.log != nil {
		g.logger = &logger{l: c.log, born: time.Now()}
	}
	if c.source == nil {
		g.state.Store(g.fixed(c.machineID))
		return g, nil
	}
	if err := g.attach(c.source, c.acquireTimeout); err != nil {
		return nil, err
	}
	return g, nil
}

// minTick is the shortest Tick New accepts: below it the time field counts
// instants no clock tells apart.
const minTick = time.Microsecond

// canIssueNow returns an error wrapping ErrInvalidConfig if the layout
// cannot issue an ID at the clock's time now.
func (g *Generator) canIssueNow() error {
	l := g.layout
	if l.Tick < minTick {
		return configErr("Layout.Tick", l.Tick, "at least 1µs for a generator")
	}
	r, d := g.read()
	if _, ok := l.ticksAt(d, g.maxTicks, g.recip); !ok {
		now := r.time().Format(time.RFC3339Nano)
		if d < 0 {
			return fmt.Errorf("%w: Layout.Epoch %s is ahead of the clock (%s): the layout cannot issue yet", ErrInvalidConfig, l.Epoch.Format(time.RFC3339Nano), now)
		}
		return fmt.Errorf("%w: the layout's range ended at %s, before the clock (%s)", ErrInvalidConfig, l.End().Format(time.RFC3339Nano), now)
	}
	return nil
}

// NextID returns a new ID. It may wait, in real time and at most MaxWait,
// for the next tick when the current one is used up, for a clock that is
// behind, or for a lease. It returns a [*ClockError] wrapping
// [ErrClockBeforeEpoch], [ErrTimeOverflow], [ErrClockBehind],
// [ErrSequenceExhausted], [ErrMarkAhead] or [ErrLeaseLost], or
// [ErrClosed]. NextID is safe for concurrent use. It allocates nothing,
// waits for the clock included; only a failure allocates, for its error, and
// so may a wait for a lease (its timer).
func (g *Generator) NextID() (ID, error) {
	if id, ok := g.fast(); ok {
		return id, nil
	}
	var id [1]ID
	_, err := g.fill(context.Background(), id[:])
	return id[0], err
}

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
	t, seq, _, cs := g.ring.claim(ticks, 1, st.b)
	if cs != claimed || g.state.Load() != st {
		return 0, false
	}
	return g.layout.compose(t, st.machine, int64(seq)), true
}

// NextN fills dst with new IDs and returns how many it issued, len(dst)
// unless it fails. IDs of one tick are claimed with one CAS, so a batch costs
// little more than a single ID. It keeps every guarantee of NextID, and
// MaxWait bounds the whole call's waiting. On failure it returns the IDs
// issued so far (dst[:n]) and the error NextID would have returned; a
// batch larger than MaxWait's worth of ticks ends with
// [ErrSequenceExhausted]. NextN is safe for concurrent use; concurrent
// batches interleave, and each holds only distinct IDs.
func (g *Generator) NextN(dst []ID) (int, error) {
	return g.fill(context.Background(), dst)
}

// Lease returns the state of the generator's machine ID: the ID, whether
// it is held, the lease's marks and, while it is not held, why. A fixed
// machine ID is always held and has no marks; a closed generator's ID is -1
// and its Err is [ErrClosed]. The generator issues when Held is true and
// its clock is past After and not past Until. Lease is safe for concurrent
// use.
func (g *Generator) Lease() machineid.Lease {
	if g == nil || g.clock == nil && g.wall == nil {
		return machineid.Lease{ID: -1, Err: ErrClosed}
	}
	return g.state.Load().lease
}

// Layout returns the generator's layout, for decoding its IDs. It is safe
// for concurrent use.
func (g *Generator) Layout() Layout {
	if g == nil {
		return Layout{}
	}
	return g.layout
}

// Close stops the generator: later calls return [ErrClosed]. If the machine
// ID is leased, Close releases the lease, telling the source the latest time
// the generator issued, and returns the source's error. Close is safe for
// concurrent use and to call more than once.
func (g *Generator) Close() error {
	if g == nil || g.clock == nil && g.wall == nil {
		return nil
	}
	g.closeOnce.Do(func() {
		closedState := &machineState{machine: -1, kind: closed, lease: machineid.Lease{ID: -1, Err: ErrClosed}}
		if old := g.state.Swap(closedState); old != nil && old.changed != nil {
			close(old.changed)
		}
		if g.stopWatch != nil {
			g.stopWatch()
		}
		if g.leaser != nil {
			// The closed state is stored, so a call that claimed after
			// this point drops its IDs when it re-checks the state; every
			// ID returned was claimed before the store, and the scan sees it.
			g.closeErr = g.leaser.Release(g.issuedUntil())
			inUse.Delete(g.leaser)
		}
	})
	return g.closeErr
}

// issuedUntil returns the last instant of the latest tick issued, or the
// instant before the epoch if nothing was issued.
func (g *Generator) issuedUntil() time.Time {
	latest := g.ring.latestTick()
	if latest < 0 {
		return g.layout.Epoch.Add(-time.Nanosecond)
	}
	return g.layout.timeOf(latest + 1).Add(-time.Nanosecond)
}

// fill issues len(dst) IDs, or as many as it can before the first failure,
// which it returns with the count. All IDs from one claim share one tick.
func (g *Generator) fill(ctx context.Context, dst []ID) (n int, err error) {
	if g == nil || g.clock == nil && g.wall == nil {
		return 0, ErrClosed
	}
	var w waiter
	for n < len(dst) && err == nil {
		n, err = g.step(ctx, &w, dst, n)
	}
	if !w.start.IsZero() {
		g.waited(w.elapsed())
	}
	if err != nil {
		return n, g.count(err)
	}
	return n, nil
}

// step reads the clock once and either issues into dst[n:] or waits; it
// returns the new count and an error that ends the call.
func (g *Generator) step(ctx context.Context, w *waiter, dst []ID, n int) (int, error) {
	r, d := g.read()
	ticks, ok := g.layout.ticksAt(d, g.maxTicks, g.recip)
	if !ok {
		return n, g.rangeError(r.time(), d)
	}
	behind, latest := g.observe(ticks)
	if behind {
		// A caller descheduled between reading the clock and this check
		// looks like a step back. Read again before believing it.
		if !w.rechecked {
			w.rechecked = true
			return n, nil
		}
		g.noteStepBack(latest, ticks)
	}
	st := g.state.Load()
	if st.kind != held {
		if st.kind == closed {
			return n, ErrClosed
		}
		_, err := g.pause(ctx, w, aboveCeil, r, ticks, d, 0, st, nil, -1)
		return n, err
	}
	t, seq, got, cs := g.ring.claim(ticks, uint64(len(dst)-n), st.b)
	if cs != claimed {
		behindOf := int64(-1)
		if behind {
			behindOf = latest
		}
		added, err := g.pause(ctx, w, cs, r, ticks, d, t, st, dst[n:], behindOf)
		return n + added, err
	}
	// A lease change between the load and the CAS may have made st.machine
	// someone else's; the claimed sequences are then dropped, which costs
	// space but never uniqueness.
	if g.state.Load() != st {
		return n, nil
	}
	if behind {
		g.stats.spare.Add(got)
	}
	for i := range got {
		dst[n] = g.layout.compose(t, st.machine, int64(seq+i))
		n++
	}
	return n, nil
}

// pause waits for a failed claim's condition to clear, within the call's
// MaxWait, or returns the error that explains why it cannot. A wait for the
// next tick may come back with IDs already claimed for the caller in dst;
// pause returns how many. st is the machine state the claim was checked
// against, and latest the latest tick the clock has shown if the reading
// was confirmed behind it, or -1.
func (g *Generator) pause(ctx context.Context, w *waiter, cs claimStatus, r reading, ticks int64, d time.Duration, t int64, st *machineState, dst []ID, latest int64) (int, error) {
	need, at, fail := g.plan(cs, ticks, d, t, st, latest)
	if cs == exhausted && at > ticks+1 {
		// A wait longer than a tick, judged from a reading that may be
		// old: a caller descheduled since it read the clock could sleep,
		// or fail, for ticks the clock has already passed. Read it again;
		// if it has moved on, go round again at once, else measure the
		// wait from the fresh reading (the error, if any, still describes
		// the reading the claim used). The rare path: one extra read, and
		// one retry per call, so that a clock that flips between two
		// readings cannot keep the call going round without ever waiting.
		_, d2 := g.read()
		t2, ok := g.layout.ticksAt(d2, g.maxTicks, g.recip)
		if ok && t2 > ticks && !w.reread {
			w.reread = true
			return 0, nil
		}
		if ok {
			need = max(g.span(at)-d2, 1)
		}
	}
	sleepFor, err := w.budget(g, need, fail, cs == aboveCeil)
	if err != nil {
		err.Clock = r.time()
		return 0, err
	}
	if cs == exhausted {
		n, err := g.ticks.wait(ctx, g, w, at, sleepFor, dst)
		if n == 0 && err == nil {
			w.lost++
		}
		return n, err
	}
	if cs == aboveCeil {
		return 0, waitChange(ctx, st.changed, sleepFor)
	}
	return 0, sleep(ctx, sleepFor)
}

// plan says how long to wait, by the generator's clock, before a claim that
// failed with cs can succeed, and the error to return if waiting is not
// allowed. d is the reading's offset from the epoch and t the tick the
// claim tried and st the machine state it was checked against; latest is
// the latest tick if the reading was confirmed behind it (read twice, so a
// caller descheduled between reading and claiming does not count), else
// -1. The error is a value, so a wait that succeeds allocates nothing for
// it.
func (g *Generator) plan(cs claimStatus, ticks int64, d time.Duration, t int64, st *machineState, latest int64) (need time.Duration, at int64, fail ClockError) {
	switch cs {
	case exhausted:
		// Usually the next tick; later if the slots of the ticks after
		// this one are exhausted at later ticks (see nextServable), so
		// that callers do not wake every tick for nothing and a wait that
		// cannot end within MaxWait fails at once.
		at = g.ring.nextServable(ticks)
		need = g.span(at) - d
		if t > ticks {
			return need, at, ClockError{Err: ErrClockBehind, By: g.span(t) - d}
		}
		if latest >= 0 {
			// The tick's spare sequence is used up while the clock is
			// behind: that is the clock's fault, not demand's.
			return need, at, ClockError{Err: ErrClockBehind, By: g.span(latest) - d}
		}
		return need, at, ClockError{Err: ErrSequenceExhausted}
	case belowFloor:
		// Under the mark the lease inherited: only time helps.
		need = g.span(st.b.floor+1) - d
		return need, 0, ClockError{Err: ErrMarkAhead, By: need}
	default: // aboveCeil, or no lease held
		if st.kind != held {
			// Only a lease report can help, and it closes st.changed: wait
			// for it for as long as MaxWait allows.
			err := ErrLeaseLost
			if st.lost != nil {
				err = st.lost
			}
			return g.maxWait, 0, ClockError{Err: err}
		}
		// Past the confirmed mark: a renewal raises it, and a clock
		// stepping back can bring the tick under it, which no report
		// announces; look at the clock again every leasePoll.
		return leasePoll(g.layout.Tick), 0, ClockError{Err: ErrLeaseLost}
	}
}

// span returns n ticks as a duration, saturating where a huge layout's
// ticks overflow a time.Duration.
func (g *Generator) span(n int64) time.Duration {
	if n > math.MaxInt64/int64(g.layout.Tick) {
		return math.MaxInt64
	}
	return time.Duration(n) * g.layout.Tick
}

// leasePoll is how often a call waiting past a lease's confirmed mark reads
// the clock again.
func leasePoll(tick time.Duration) time.Duration {
	return min(max(tick, time.Millisecond), 10*time.Millisecond)
}

// rangeError explains a clock reading outside the layout's range; d is its
// offset from the epoch. The figures come from time.Time.Sub, which
// saturates, so even a zero-time clock gets a sensible, positive By.
func (g *Generator) rangeError(now time.Time, d time.Duration) error {
	if d < 0 {
		return &ClockError{Err: ErrClockBeforeEpoch, Clock: now, By: g.layout.Epoch.Sub(now)}
	}
	return &ClockError{Err: ErrTimeOverflow, Clock: now, By: now.Sub(g.layout.End())}
}
