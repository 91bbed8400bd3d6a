package ringflake

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringflake/ringflake/internal/mutant"
	"github.com/ringflake/ringflake/internal/sentinel"
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
	fastEnd   uint64           // fastEnd(layout), written once by New
	timeShift uint             // layout.SequenceBits+MachineBits, the time field's shift; written once by New
	maxWait   time.Duration    // written once by New
	above     int64            // WithAbove's tick, the floor of every state; -1 without; written once by New
	aboveErr  error            // the error of a claim below above, wrapping ErrMarkAhead; written once by New
	logger    *logger          // nil without WithLogger; written once by New
	ticks     tickWait         // shares one sleeper among callers waiting for a tick

	startWait time.Duration // how long New took to get the machine ID; written once by New
	leased    *leaserClaim  // the Leaser's claim, nil unless the machine ID is leased; written once by New
	graceEnd  time.Time     // when New's waits past its context's end give up (see untilGrace); New's alone
	stopWatch func()        // stops the lease watch; nil unless leased
	closeOnce sync.Once
	closeErr  error // written inside closeOnce
}

// New returns a Generator configured by opts. It needs a machine ID, from
// [WithMachineID] or [WithMachineIDSource]; every other option has a
// default.
//
// ctx bounds New's waits: for the machine ID source, and for the clock to
// pass the mark a leased machine ID inherited. Without a deadline, New gives
// up after 30 s; a cancelled ctx ends New at once. Either way New returns
// within 50 ms of ctx's end, whatever its source does (a Leaser's Watch,
// and so a slow watcher of its lease, included), releasing what a Leaser
// took. ctx only bounds New: the generator outlives it.
//
// New returns an error wrapping [ErrInvalidConfig] if ctx is nil, no
// machine ID or both kinds are given, an option is out of range, the
// layout is invalid or cannot issue an ID at the generator's clock's time
// now (the epoch is ahead of it, or the layout's range has ended), the
// source's machine ID is outside 0..[Layout.MaxMachine], or the machine ID
// source is a [machineid.Leaser] that a live generator already uses. With
// [WithLogger], New logs a warning if the layout's range ends within a year
// of the clock. With a source it also returns the source's error, wrapped
// (a panic in its MachineID comes back as such an error, naming the panic);
// one wrapping ctx's error if the source did not answer in time; an error
// holding a [*ClockError] wrapping [ErrMarkAhead] if the clock cannot pass
// the leased ID's inherited mark by ctx's deadline (at once, without
// waiting, when the clock says so), or the tick of [WithAbove]'s ID (with a
// fixed machine ID too), or wrapping [ErrLeaseLost] if the lease
// is not held by then; and [ErrClockBeforeEpoch] or [ErrTimeOverflow] if
// the clock left the layout's range while New waited. An error of a
// Leaser's release on the way out is joined to New's.
func New(ctx context.Context, opts ...Option) (*Generator, error) {
	if ctx == nil {
		return nil, fmt.Errorf("%w: New's context is nil; give context.Background() for New's default bound", ErrInvalidConfig)
	}
	var c config
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
		fastEnd:   fastEnd(c.layout),
		timeShift: uint(c.layout.SequenceBits + c.layout.MachineBits),
		maxWait:   c.maxWait,
		above:     -1,
	}
	if c.aboveSet {
		g.above = c.layout.Decompose(c.above).Ticks
		g.aboveErr = &aboveError{id: c.above, end: c.layout.timeOf(g.above + 1)}
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
		g.warnIfEnding()
	}
	var b bound
	if d, ok := ctx.Deadline(); ok {
		b.deadline = d
	} else {
		b.deadline = time.Now().Add(defaultBound)
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, b.deadline)
		defer cancel()
		b.own = true
	}
	if c.source == nil {
		g.state.Store(g.fixed(c.machineID))
		if g.above >= 0 {
			if err := g.awaitMark(ctx, b); err != nil {
				g.shut()
				return nil, err
			}
		}
		return g, nil
	}
	start := time.Now()
	if err := g.attach(ctx, b, c.source, c.clock); err != nil {
		return nil, sentinel.Name("ringflake", err)
	}
	g.startWait = time.Since(start)
	return g, nil
}

// canIssueNow returns an error wrapping ErrInvalidConfig if the layout
// cannot issue an ID at the clock's time now.
func (g *Generator) canIssueNow() error {
	l := g.layout
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

// endWarning is how near its end a layout makes New log a warning.
const endWarning = 365 * 24 * time.Hour

// warnIfEnding logs a warning if the layout's range ends within endWarning
// of the clock.
func (g *Generator) warnIfEnding() {
	r, _ := g.read()
	end := g.layout.End()
	if left := end.Sub(r.time()); left < endWarning {
		g.log(logLayoutEnds, slog.Time("ends", end), slog.Duration("left", left))
	}
}

// NextID returns a new ID. It may wait, in real time and at most MaxWait,
// for the next tick when the current one is used up, for a clock that is
// behind, or for a lease. It returns a [*ClockError] wrapping
// [ErrClockBeforeEpoch], [ErrTimeOverflow], [ErrClockBehind],
// [ErrSequenceExhausted], [ErrMarkAhead] or [ErrLeaseLost], or
// [ErrClosed]. It allocates nothing,
// waits for the clock included; only a failure allocates, for its error, and
// so may a wait for a lease (its timer).
func (g *Generator) NextID() (ID, error) {
	if id, ok := g.fast(); ok {
		return id, nil
	}
	var id [1]ID
	_, err := g.fill(id[:])
	return id[0], err
}

// NextN fills dst with new IDs and returns how many it issued, len(dst)
// unless it fails. IDs of one tick are claimed with one CAS, so a batch costs
// little more than a single ID. It keeps every guarantee of NextID, and
// MaxWait bounds the whole call's waiting. On failure it returns the IDs
// issued so far (dst[:n]) and the error NextID would have returned; a
// batch larger than MaxWait's worth of ticks ends with
// [ErrSequenceExhausted]. Concurrent batches
// interleave, and each holds only distinct IDs.
func (g *Generator) NextN(dst []ID) (int, error) {
	return g.fill(dst)
}

// Lease returns the state of the generator's machine ID: the ID, whether
// it is held, the lease's marks, the clock's offset from the store's
// reference (Clock) and, while it is not held, why. A fixed
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
		if mutant.On(mutant.ReleaseBeforeStop) && g.leased != nil {
			_ = g.leased.l.Release(g.issuedUntil()) // Release below returns its result again
		}
		g.shut()
		mutant.Yield(mutant.SiteCAS) // between the closed state's store and the scan of what was issued
		if g.leased != nil {
			// The closed state is stored, so a call that claimed after
			// this point drops its IDs when it re-checks the state; every
			// ID returned was claimed before the store, and the scan sees it.
			g.closeErr = g.leased.l.Release(g.issuedUntil())
			g.leased.drop()
		}
	})
	return g.closeErr
}

// shut stores the closed state, wakes the calls waiting on the one it
// replaces, and stops following the lease.
func (g *Generator) shut() {
	closedState := &machineState{machine: -1, kind: closed, lease: machineid.Lease{ID: -1, Err: ErrClosed}}
	if old := g.state.Swap(closedState); old != nil && old.changed != nil {
		close(old.changed)
	}
	if g.stopWatch != nil {
		g.stopWatch()
	}
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
func (g *Generator) fill(dst []ID) (n int, err error) {
	if g == nil || g.clock == nil && g.wall == nil {
		return 0, ErrClosed
	}
	var a attempt
	for n < len(dst) && err == nil {
		n, err = g.step(&a, dst, n)
	}
	if !a.start.IsZero() {
		g.waited(a.elapsed(), err == nil)
	}
	if err != nil {
		return n, g.count(err)
	}
	return n, nil
}

// step reads the clock once and either issues into dst[n:] or waits; it
// returns the new count and an error that ends the call.
func (g *Generator) step(a *attempt, dst []ID, n int) (int, error) {
	if err := g.look(a); err != nil {
		return n, err
	}
	if a.behind {
		// A caller descheduled between reading the clock and this check
		// looks like a step back. Read again before believing it.
		if !a.rechecked {
			a.rechecked = true
			return n, nil
		}
		g.noteStepBack(a.latest, a.ticks)
	}
	a.st = g.state.Load()
	if a.st.kind == closed {
		return n, ErrClosed
	}
	c, cs := g.claim(a, uint64(len(dst)-n))
	switch cs {
	case claimed:
		return n + c.put(g.layout, 0, dst[n:]), nil
	case stale:
		return n, nil
	}
	a.cs, a.t = cs, c.tick
	added, err := g.pause(a, dst[n:])
	return n + added, err
}

// look reads the clock into a: the reading, the tick it shows, and whether
// that is behind the latest tick the clock has shown. It returns the error
// for a reading outside the layout's range.
func (g *Generator) look(a *attempt) error {
	a.r, a.d = g.read()
	ticks, ok := g.layout.ticksAt(a.d, g.maxTicks, g.recip)
	if !ok {
		return g.rangeError(a.r.time(), a.d)
	}
	a.ticks = ticks
	a.behind, a.latest = g.observe(ticks)
	return nil
}

// claim claims up to want IDs for a's reading and machine state: every
// claim but the fast path's inlined one goes through here. It returns the
// range claimed, or why there is none and the tick the ring would have
// issued from. A lease change between loading the state and the CAS may
// have made st.machine someone else's; the claimed sequences are then
// dropped (stale), which costs space but never uniqueness.
func (g *Generator) claim(a *attempt, want uint64) (claimRange, claimStatus) {
	st := a.st
	if st.kind != held {
		return claimRange{}, notHeld
	}
	t, seq, got, cs := g.ring.claim(a.ticks, want, st.b, uint64(st.part))
	if cs != claimed {
		return claimRange{tick: t}, cs
	}
	mutant.Yield(mutant.SiteClaim) // between the CAS and the state's re-check, where Close may come
	if g.state.Load() != st && !mutant.On(mutant.NoRecheck) {
		return claimRange{}, stale
	}
	if a.behind {
		g.stats.spare.Add(got)
	}
	return claimRange{tick: t, machine: st.machine, seq: seq, count: got}, claimed
}

// claimRange is one successful claim: count sequences from seq, in tick,
// with machine.
type claimRange struct {
	tick, machine int64
	seq, count    uint64
}

// put writes the IDs of c from its skip-th on into dst, as many as fit, and
// returns how many.
func (c claimRange) put(l Layout, skip uint64, dst []ID) int {
	n := 0
	for s := c.seq + skip; s < c.seq+c.count && n < len(dst); s++ {
		dst[n] = l.compose(c.tick, c.machine, int64(s))
		n++
	}
	return n
}

// observe tracks the latest tick the clock has shown and reports whether
// ticks is behind it by more than one tick, so the skew between concurrent
// readers at a tick boundary does not count, and the latest tick. The
// latest tick is raised by CAS, about once per tick; reading it is the only
// cost on the path that issues. Counting the step back is the caller's, once
// it has confirmed it with a second reading.
func (g *Generator) observe(ticks int64) (behind bool, latest int64) {
	for {
		latest = g.latest.Load()
		if ticks <= latest {
			return ticks < latest-1, latest
		}
		if g.latest.CompareAndSwap(latest, ticks) {
			return false, ticks
		}
	}
}

// noteStepBack counts a step back once per latest tick and keeps the
// largest; the first caller to see it sends the event.
func (g *Generator) noteStepBack(latest, ticks int64) {
	c := &g.stats
	by := latest - ticks
	for {
		old := c.largestBack.Load()
		if by <= old || c.largestBack.CompareAndSwap(old, by) {
			break
		}
	}
	// The mark only moves up: a caller holding an older latest must not
	// move it back and make the same step count again.
	mark := c.stepMark.Load()
	if latest <= mark || !c.stepMark.CompareAndSwap(mark, latest) {
		return
	}
	c.stepBacks.Add(1)
	g.log(logStepBack, slog.Duration("by", time.Duration(by)*g.layout.Tick), slog.Int64("machine", g.state.Load().machine))
}

// span returns n ticks as a duration, saturating where a huge layout's
// ticks overflow a time.Duration.
func (g *Generator) span(n int64) time.Duration {
	if n > math.MaxInt64/int64(g.layout.Tick) {
		return math.MaxInt64
	}
	return time.Duration(n) * g.layout.Tick
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
