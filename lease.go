package ringflake

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/ringflake/ringflake/internal/holderclock"
	"github.com/ringflake/ringflake/internal/mutant"
	"github.com/ringflake/ringflake/machineid"
)

// machineState is an immutable snapshot of the machine ID and the ticks it
// may issue. Replacing the whole snapshot with one pointer store keeps the
// machine ID and its bounds consistent for a reader without a lock.
type machineState struct {
	machine int64
	part    int64 // machine<<SequenceBits, the machine's bits of an ID; set with machine by withPart
	b       bounds
	kind    stateKind
	lease   machineid.Lease // what Generator.Lease reports
	lost    error           // for kind lost: ErrLeaseLost, or an error wrapping it and the lease's cause

	// changed is closed by whoever replaces this state, so a call waiting
	// for a lease wakes when the lease changes instead of polling. It is nil
	// for a fixed machine ID and for the closed state, which nothing replaces.
	changed chan struct{}
}

// stateKind says whether a machine state can issue.
type stateKind uint8

const (
	held    stateKind = iota // issues within b
	pending                  // leased, before the lease's first report
	lost                     // the lease is not held
	closed                   // after Close
)

// fixed is the state of a machine ID that is not leased.
func (g *Generator) fixed(machine int64) *machineState {
	return g.withPart(&machineState{
		machine: machine,
		b:       bounds{floor: g.above, ceil: g.maxTicks},
		lease:   machineid.Lease{ID: machine, Held: true},
	})
}

// withPart sets st.part from st.machine and returns st, for a state about
// to be stored. Both states that can be held, fixed's and setLease's, are
// made through it, and a stored state is never written, so a held state's
// part always matches its machine.
func (g *Generator) withPart(st *machineState) *machineState {
	st.part = st.machine << (uint(g.layout.SequenceBits) & 63)
	return st
}

// attach gets the machine ID from src within ctx and, if src is a
// [machineid.Leaser], starts following its lease and waits out the mark it
// inherited, within ctx too. On failure it releases what a Leaser took and
// returns New's error, joined with the release's.
func (g *Generator) attach(ctx context.Context, b bound, src machineid.Source, clock func() time.Time) error {
	leaser, leased := src.(machineid.Leaser)
	if !leased {
		id, err := g.acquire(ctx, b, src, nil)
		if err == nil {
			err = g.checkID(id)
		}
		if err != nil {
			return fmt.Errorf("getting the machine ID: %w", err)
		}
		g.state.Store(g.fixed(id))
		return nil
	}
	c, err := claimLeaser(ctx, leaser)
	if err != nil {
		return err
	}
	// From here on this call owns the claim, until it hands it to the
	// generator, to a release in the background, or drops it. The deferred
	// drop covers a panic in the leaser's Watch, which goes on to New's
	// caller as a direct call's would.
	owned := true
	defer func() {
		if owned {
			c.drop()
		}
	}()
	holderclock.Set(leaser, clock)
	stopNotice, err := g.noticeIDWait(ctx, leaser)
	if err != nil {
		owned = false
		return g.giveUp(ctx, c, time.Time{}, err)
	}
	id, err := g.acquire(ctx, b, src, c)
	unwatched := stopNotice()
	switch {
	case errors.Is(err, errAbandoned):
		owned = false // the release in the background drops it
		return fmt.Errorf("getting the machine ID: %w", err)
	case err == nil:
		err = g.checkID(id)
	}
	if err != nil {
		owned = false
		return g.giveUp(ctx, c, time.Time{}, fmt.Errorf("getting the machine ID: %w", err))
	}
	g.state.Store(&machineState{machine: id, kind: pending, lease: machineid.Lease{ID: id}, changed: make(chan struct{})})
	stop, err := g.watch(ctx, leaser, g.setLease, unwatched)
	if err != nil {
		owned = false
		g.shut()
		return g.giveUp(ctx, c, time.Time{}, fmt.Errorf("following the machine ID's lease: %w", err))
	}
	g.stopWatch = func() { go stop() } // stop waits for the watcher being told, and Close must not
	if err := g.awaitMark(ctx, b); err != nil {
		owned = false
		g.shut()
		return g.giveUp(ctx, c, g.issuedUntil(), err)
	}
	owned = false
	g.leased = c // from here on Close releases the lease and drops the claim
	return nil
}

// noticeIDWait watches l while New asks it for a machine ID, and says once
// that New waits for an ID of a full range to free, when l reports it
// (an Err wrapping machineid.ErrExhausted): to the logger of WithLogger at
// once, or else to slog.Default if the wait lasts a second. It returns a
// func that stops watching, without waiting, and returns a channel closed
// once the watch has stopped; nothing is said after it. It returns watch's
// error if l's Watch does not return within ctx.
func (g *Generator) noticeIDWait(ctx context.Context, l machineid.Leaser) (stop func() <-chan struct{}, err error) {
	var (
		mu     sync.Mutex // protects the fields below
		told   bool
		done   bool
		notify *time.Timer
	)
	unwatch, err := g.watch(ctx, l, func(le machineid.Lease) {
		mu.Lock()
		defer mu.Unlock()
		if told || done || le.Held || !errors.Is(le.Err, machineid.ErrExhausted) {
			return
		}
		told = true
		attrs := []slog.Attr{slog.Any("error", le.Err)}
		if g.logger != nil {
			g.log(logIDWait, attrs...)
			return
		}
		notify = time.AfterFunc(mutant.Delay(noticeAfter), func() {
			mu.Lock()
			defer mu.Unlock()
			if !done {
				g.notice(logIDWait, noticeAfter, attrs...)
			}
		})
	}, nil)
	if err != nil {
		return nil, err
	}
	return func() <-chan struct{} {
		unwatched := make(chan struct{})
		go func() {
			unwatch()
			close(unwatched)
		}()
		mu.Lock()
		defer mu.Unlock()
		done = true
		if notify != nil {
			notify.Stop()
		}
		return unwatched
	}, nil
}

// errWatchExited is what a Leaser's Watch that called runtime.Goexit
// panics with on New's goroutine.
var errWatchExited = errors.New("ringflake: the Leaser's Watch exited its goroutine (runtime.Goexit)")

// watch calls l.Watch(fn) and returns its stop, waiting for it until ctx
// ends and New's grace past that (see untilGrace): a Holder's Watch waits
// for the watcher that another call is telling, and a slow watcher, such as
// a log handler stuck on its sink, must not hold New past its context. So
// Watch runs on a goroutine of its own; if New gives up on it, that
// goroutine stops the watch once Watch returns, and fn may be told until
// then: noticeIDWait's fn ignores it, and setLease ignores a report once
// the generator is closed. A panic in Watch goes on to New's caller, as a
// direct call's would. When after is not nil, Watch is called only once it
// is closed: New's two watches, the notice's and the generator's, follow
// one another as they did when each ran on New's goroutine, so that a
// Leaser that keeps one watcher at a time (the contract does not ask for
// more) is not left with none by the first one's stop.
func (g *Generator) watch(ctx context.Context, l machineid.Leaser, fn func(machineid.Lease), after <-chan struct{}) (stop func(), err error) {
	type answer struct {
		stop func()
		p    any // Watch's panic, if it panicked
	}
	got := make(chan answer, 1) // buffered: the goroutine never blocks on a New that gave up
	go func() {
		a := answer{p: errWatchExited}
		defer func() {
			if p := recover(); p != nil {
				a = answer{p: p}
			}
			got <- a
		}()
		if after != nil {
			<-after
		}
		a = answer{stop: l.Watch(fn)}
	}()
	a, ok := untilGrace(ctx, got, &g.graceEnd)
	switch {
	case !ok:
		go func() {
			if a := <-got; a.stop != nil {
				a.stop()
			}
		}()
		return nil, fmt.Errorf("the machine ID source's Watch (%T) did not return: %w", l, ctx.Err())
	case a.p != nil:
		panic(a.p)
	}
	return a.stop, nil
}

// checkID returns an error wrapping ErrInvalidConfig for a machine ID from
// a source that the layout cannot hold.
func (g *Generator) checkID(id int64) error {
	if id < 0 || id > g.layout.MaxMachine() {
		return configErr("machine ID from the source", id, fmt.Sprintf("0..%d", g.layout.MaxMachine()))
	}
	return nil
}

// acquireGrace is how long after New's context ends New still waits for a
// source that honours its context to return its own error, which says
// more than New's, and for a release to end.
const acquireGrace = 50 * time.Millisecond

// errAbandoned marks acquire's error for a call it gave up on, whose late
// answer a goroutine releases.
var errAbandoned = errors.New("no answer")

// acquire asks src for a machine ID within ctx. A source must honour its
// context; acquire enforces the bound all the same, by asking on a
// goroutine and giving up acquireGrace after ctx ends. It then returns an
// error wrapping errAbandoned and ctx's error, and, with a Leaser's claim
// c, hands c to a goroutine that releases the late answer and drops c after
// the release, so that a New retried on the same Leaser waits for that,
// rather than share the lease the release frees.
//
// A panic in src becomes an error that names src's type and the panic's
// value (and wraps it, if it is an error). Passing the panic on would not
// be "as if src had been called directly": src runs on acquire's goroutine,
// whose stack is gone by then, so a re-panic would tell no more than the
// error does, and it would take down a caller, such as a service starting
// up, that can report a failed New and retry.
func (g *Generator) acquire(ctx context.Context, b bound, src machineid.Source, c *leaserClaim) (int64, error) {
	type answer struct {
		id  int64
		err error
	}
	got := make(chan answer, 1) // buffered: the goroutine never blocks on a caller that gave up
	go func() {
		a := answer{id: -1, err: errSourceExited}
		defer func() {
			if p := recover(); p != nil {
				a = answer{id: -1, err: sourcePanicked(src, p)}
			}
			got <- a
		}()
		id, err := src.MachineID(ctx)
		a = answer{id: id, err: err}
	}()
	if a, ok := untilGrace(ctx, got, &g.graceEnd); ok {
		return a.id, a.err
	}
	if c != nil {
		a := c.abandon()
		go func() {
			<-got
			g.logRelease(a.l.Release(time.Time{}))
			a.drop()
		}()
	}
	return -1, fmt.Errorf("%w from the machine ID source (%T) %s: %w", errAbandoned, src, b.ended(ctx), ctx.Err())
}

// errSourceExited is the outcome of a source's call that neither returned
// nor panicked: it called runtime.Goexit.
var errSourceExited = errors.New("the machine ID source's call exited its goroutine (runtime.Goexit)")

// sourcePanicked is the error for a source's call that panicked with p.
func sourcePanicked(src machineid.Source, p any) error {
	if err, ok := p.(error); ok {
		return fmt.Errorf("the machine ID source (%T) panicked: %w", src, err)
	}
	return fmt.Errorf("the machine ID source (%T) panicked: %v", src, p)
}

// giveUp releases the Leaser of c, which New will not use, telling it
// issued, and returns err joined with the release's error. It waits for
// the release until ctx ends and the grace past that; a release still
// running then goes on in the background, which logs its error and drops
// c when it ends. The caller hands c over.
func (g *Generator) giveUp(ctx context.Context, c *leaserClaim, issued time.Time, err error) error {
	done := make(chan error, 1)
	go func() { done <- c.l.Release(issued) }()
	if rerr, ok := untilGrace(ctx, done, &g.graceEnd); ok {
		c.drop()
		if rerr != nil {
			err = errors.Join(err, fmt.Errorf("releasing the machine ID's lease: %w", rerr))
		}
		return err
	}
	a := c.abandon()
	go func() {
		g.logRelease(<-done)
		a.drop()
	}()
	return err
}

// untilGrace waits for a value on ch until ctx ends and the grace past
// that, and reports what came and whether it came. The grace is New's one
// allowance past its context's end, kept in *end for all of its waits: it
// ends acquireGrace after the first of them saw ctx end, so that a source
// that answers late and a release after it do not take a grace each.
func untilGrace[T any](ctx context.Context, ch <-chan T, end *time.Time) (T, bool) {
	select {
	case v := <-ch:
		return v, true
	case <-ctx.Done():
	}
	select {
	case v := <-ch:
		return v, true
	default:
	}
	if end.IsZero() {
		*end = time.Now().Add(acquireGrace)
	}
	grace := time.NewTimer(mutant.Delay(time.Until(*end)))
	defer grace.Stop()
	select {
	case v := <-ch:
		return v, true
	case <-grace.C:
		var zero T
		return zero, false
	}
}

// logRelease logs a release that New gave up waiting for, if it failed:
// nobody else hears of it.
func (g *Generator) logRelease(err error) {
	if err != nil {
		g.log(logReleaseFailed, slog.Any("error", err))
	}
}

// awaitMark waits, within ctx, until the generator can issue: the lease
// held, the clock past the mark it inherited and not past the one
// confirmed. It judges that as Ready does, sleeps for the mark as NextID
// does, with what is left of b in place of MaxWait, and logs a wait for
// the mark once it knows it will make it. It returns a *ClockError wrapping
// ErrMarkAhead, wrapped in turn with b, if the clock cannot pass the
// inherited mark by b's end (at once if the clock says so), or wrapping
// ErrLeaseLost if the lease is not held, or not confirmed as far as the
// clock, by then; and ctx's error with it if ctx ended first.
func (g *Generator) awaitMark(ctx context.Context, b bound) error {
	var start time.Time // of the first wait
	logged := false
	for {
		st := g.state.Load()
		if st.kind == closed {
			return ErrClosed
		}
		r, d := g.read()
		ticks, ok := g.layout.ticksAt(d, g.maxTicks, g.recip)
		if !ok {
			return g.rangeError(r.time(), d)
		}
		cs, fail, need := g.standing(st, ticks, d)
		if cs == claimed {
			return nil
		}
		fail.Clock = r.time()
		if !start.IsZero() {
			fail.Waited = time.Since(start)
		}
		left := time.Until(b.deadline)
		switch {
		case ctx.Err() != nil || left <= 0:
			end := ctx.Err()
			if end == nil {
				end = context.DeadlineExceeded
			}
			return fmt.Errorf("%w; %s: %w", &fail, b.endedFirst(ctx), end)
		case cs == belowFloor && need > left:
			return fmt.Errorf("%w; %s ends first: %s", &fail, b, b.advice())
		}
		if cs == belowFloor && !logged {
			logged = true
			kind := logMarkWait
			if st.b.floor == g.above {
				kind = logAboveWait
			}
			g.notice(kind, need, slog.Int64("machine", st.machine), slog.Duration("wait", need),
				slog.Time("until", r.time().Add(need)), slog.Time("mark", g.markOf(st)))
		}
		// A lease report, or its mark raised, may come before the clock
		// says so, and a clock put right (stepped forward) ends the wait
		// early: look again at least every markRecheck.
		if start.IsZero() {
			start = time.Now()
		}
		waitChange(st.changed, ctx.Done(), min(need, left, markRecheck))
	}
}

// markOf returns the mark st's floor stands for, for messages: the lease's
// inherited mark, or the end of WithAbove's tick where that is the floor.
func (g *Generator) markOf(st *machineState) time.Time {
	if e, ok := g.aboveErr.(*aboveError); ok && st.b.floor == g.above {
		return e.end
	}
	return st.lease.After
}

// markRecheck bounds each of New's sleeps for the mark, so that a clock
// put right while it waits (stepped forward) ends the wait soon.
const markRecheck = 100 * time.Millisecond

// standing says whether st lets a call issue at ticks, the clock's tick at
// offset d from the epoch, as claim would judge it for a ring that has
// issued nothing: claimed if so; else why not, with leaseFail's error and
// wait. Ready and New's wait judge the lease here.
func (g *Generator) standing(st *machineState, ticks int64, d time.Duration) (claimStatus, ClockError, time.Duration) {
	cs := claimed
	switch {
	case st.kind != held:
		cs = notHeld
	case ticks <= st.b.floor:
		cs = belowFloor
	case ticks > st.b.ceil:
		cs = aboveCeil
	default:
		return claimed, ClockError{}, 0
	}
	fail, need := g.leaseFail(st, cs, d)
	return cs, fail, need
}

// leaseFail returns the error of a call that cannot wait, whose claim the
// lease's state st refused as cs, for a clock at offset d from the epoch
// (Clock and Waited are the caller's to fill in), and how long, by the
// clock, until a wait may end it: until the first tick past the inherited
// mark; for ever (math.MaxInt64) while the lease is not held, since only a
// report can change that; leasePoll past the confirmed mark, which a
// renewal raises without a word to the clock. Ready, New's wait and
// NextID's all explain a lease's refusal here.
func (g *Generator) leaseFail(st *machineState, cs claimStatus, d time.Duration) (ClockError, time.Duration) {
	switch cs {
	case notHeld:
		err := st.lost
		if err == nil {
			err = ErrLeaseLost
		}
		return ClockError{Err: err}, math.MaxInt64
	case belowFloor:
		need := g.span(st.b.floor+1) - d
		if st.b.floor == g.above {
			return ClockError{Err: g.aboveErr, By: need}, need
		}
		return ClockError{Err: ErrMarkAhead, By: need}, need
	}
	return ClockError{Err: ErrLeaseLost, By: max(d-g.span(st.b.ceil+1), 0)}, leasePoll(g.layout.Tick)
}

// Ready reports whether NextID could issue now without waiting for the
// lease or for its mark. It returns nil if so, and otherwise the error a
// call that could not wait would return: [ErrClosed]; a [*ClockError]
// wrapping [ErrClockBeforeEpoch] or [ErrTimeOverflow] for a clock outside
// the layout's range; one wrapping [ErrMarkAhead], whose By is how long
// until the clock passes the mark the lease inherited; or one wrapping
// [ErrLeaseLost], and the lease's cause, while the lease is not held (By
// 0) or the clock is past the mark the store confirmed (By says how far).
// A fixed machine ID is ready while the clock is in the layout's range.
// Ready does not count in [Stats], and allocates nothing while ready; it
// is what a readiness probe asks. It is safe for concurrent use.
func (g *Generator) Ready() error {
	if g == nil || g.clock == nil && g.wall == nil {
		return ErrClosed
	}
	st := g.state.Load()
	if st.kind == closed {
		return ErrClosed
	}
	r, d := g.read()
	ticks, ok := g.layout.ticksAt(d, g.maxTicks, g.recip)
	if !ok {
		return g.rangeError(r.time(), d)
	}
	if cs, fail, _ := g.standing(st, ticks, d); cs != claimed {
		fail.Clock = r.time()
		return &fail
	}
	return nil
}

// setLease turns a lease report into the state that claims check.
//
// Invariant: once Close has stored a closed state, nothing replaces it. The
// CAS loop retries only when another writer (Close, or an earlier report
// racing with this one) changed the state; re-reading the state keeps a
// closed generator closed.
func (g *Generator) setLease(l machineid.Lease) {
	next := g.stateOf(l)
	for {
		old := g.state.Load()
		if old != nil && old.kind == closed {
			return
		}
		mutant.Yield(mutant.SiteCAS)
		if g.state.CompareAndSwap(old, next) {
			if old != nil && old.changed != nil {
				close(old.changed) // only the CAS that replaced old gets here
			}
			g.logChange(old, next, l)
			return
		}
	}
}

// stateOf returns the machine state a lease report stands for. A held
// lease of a machine ID the layout cannot hold is reported as it is, but
// not held: its ID is nobody else's, and the generator issues nothing with
// it.
func (g *Generator) stateOf(l machineid.Lease) *machineState {
	next := &machineState{
		machine: l.ID,
		b:       bounds{floor: g.above, ceil: g.maxTicks},
		lease:   l,
		changed: make(chan struct{}),
	}
	switch {
	case !l.Held:
		next.kind = lost
		next.lost = lostBecause(l.Err)
	case l.ID < 0 || l.ID > g.layout.MaxMachine():
		next.kind = lost
		next.machine = -1 // never issued with
		next.lost = fmt.Errorf("%w: the lease holds machine ID %d, outside the layout's 0..%d", ErrLeaseLost, l.ID, g.layout.MaxMachine())
		next.lease.Held, next.lease.Err = false, next.lost
	}
	if !l.After.IsZero() && !mutant.On(mutant.NoFloor) {
		next.b.floor = max(g.tickAt(l.After), g.above)
	}
	if !l.Until.IsZero() {
		next.b.ceil = g.tickAt(l.Until)
	}
	return g.withPart(next)
}

// lostBecause returns the error of a lease that is not held for cause:
// cause itself if it says the lease is lost already, so that the message
// does not say so twice; else ErrLeaseLost, with cause if there is one.
func lostBecause(cause error) error {
	switch {
	case cause == nil:
		return ErrLeaseLost
	case errors.Is(cause, ErrLeaseLost):
		return cause
	}
	return fmt.Errorf("%w: %w", ErrLeaseLost, cause)
}

// logChange logs a lease lost or regained, as old turned into next, and a
// clock measured past the bound where it was not before, or past the
// fleet's agreed clock where it was past only a tentative one.
func (g *Generator) logChange(old, next *machineState, l machineid.Lease) {
	switch {
	case old == nil:
	case old.kind == held && next.kind != held:
		g.log(logLeaseLost, slog.Int64("machine", old.machine), slog.Any("cause", l.Err))
	case old.kind == lost && next.kind == held:
		g.log(logLeaseRegained, slog.Int64("machine", next.machine))
	}
	if c := l.Clock; c.Past() && (old == nil || !old.lease.Clock.Past() || old.lease.Clock.Tentative && !c.Tentative) {
		g.log(logClockOff, slog.Int64("machine", l.ID), slog.String("clock", c.String()), slog.Duration("bound", c.Bound))
	}
}

// tickAt returns the tick containing t, clamped to -1 before the epoch and
// to the last tick past the layout's range.
func (g *Generator) tickAt(t time.Time) int64 {
	d := t.Sub(g.layout.Epoch)
	ticks, ok := g.layout.ticksAt(d, g.maxTicks, g.recip)
	switch {
	case ok:
		return ticks
	case d < 0:
		return -1
	}
	return g.maxTicks
}

// inUse holds the Leasers that a live generator follows, or that a New is
// getting a machine ID from or has given up on while its call or release
// still runs, so that one Leaser never serves two generators at once: both
// would issue with its one machine ID.
var inUse sync.Map // machineid.Leaser → *leaserClaim

// A leaserClaim is an entry of inUse. Its owner, one New or the generator
// it made, or a goroutine that releases what a New gave up on, drops it
// once, when done with the Leaser. An entry is never written once stored;
// abandon replaces it.
type leaserClaim struct {
	l machineid.Leaser
	// abandoned, if not nil, is closed when the claim is dropped: a New gave
	// up on the Leaser while a call or a release still ran, and a later
	// New waits for it instead of being refused.
	abandoned chan struct{}
}

// errLeaserInUse is returned by New for a Leaser that a live generator uses.
var errLeaserInUse = fmt.Errorf("%w: this machineid.Leaser already serves a live generator, and both would issue with its one machine ID; give each generator its own Leaser (its own lease)", ErrInvalidConfig)

// claimLeaser records l as in use by the caller, or returns why it cannot
// be. A Leaser that a New gave up on is waited for, within ctx, until the
// release of what that New's call took has ended.
func claimLeaser(ctx context.Context, l machineid.Leaser) (c *leaserClaim, err error) {
	defer func() {
		if recover() != nil { // a map key must be comparable
			c, err = nil, fmt.Errorf("%w: a machineid.Leaser must be comparable, such as a pointer; %T is not", ErrInvalidConfig, l)
		}
	}()
	for {
		c := &leaserClaim{l: l}
		v, taken := inUse.LoadOrStore(l, c)
		if !taken {
			return c, nil
		}
		old := v.(*leaserClaim)
		if old.abandoned == nil {
			return nil, errLeaserInUse
		}
		select {
		case <-old.abandoned:
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for an earlier New's release of this machineid.Leaser: %w", ctx.Err())
		}
	}
}

// abandon hands the claim on to a goroutine that will drop it once a call
// or release still running ends, and returns the claim that goroutine
// owns. Only c's owner calls it, and then no longer owns c.
func (c *leaserClaim) abandon() *leaserClaim {
	a := &leaserClaim{l: c.l, abandoned: make(chan struct{})}
	inUse.Store(c.l, a)
	return a
}

// drop forgets c's Leaser as in use. Only c's owner calls it, once.
func (c *leaserClaim) drop() {
	inUse.CompareAndDelete(c.l, c)
	if c.abandoned != nil {
		close(c.abandoned)
	}
}

// bound is New's bound on its waits: the deadline of its context, or
// defaultBound from New's start.
type bound struct {
	deadline time.Time
	own      bool // the deadline is New's default, not the caller's
}

// defaultBound is how long New waits when its context has no deadline:
// long enough for a lease's TTL to run out on a restarted store.
const defaultBound = 30 * time.Second

// String names the bound, for messages.
func (b bound) String() string {
	if b.own {
		return fmt.Sprintf("New's default bound of %v (its context has no deadline)", defaultBound)
	}
	return "the deadline of New's context"
}

// advice says what to do about a wait longer than b allows.
func (b bound) advice() string {
	if b.own {
		return "give New a context with a later deadline, or set the clock right if it is behind"
	}
	return "give New a later deadline, or set the clock right if it is behind"
}

// ended says how ctx, bounded by b, ended the wait for an answer, for
// messages.
func (b bound) ended(ctx context.Context) string {
	if errors.Is(ctx.Err(), context.Canceled) {
		return "before New's context was cancelled"
	}
	return "within " + b.String()
}

// endedFirst says how ctx, bounded by b, ended a wait for the lease, for
// messages.
func (b bound) endedFirst(ctx context.Context) string {
	if errors.Is(ctx.Err(), context.Canceled) {
		return "New's context was cancelled"
	}
	return b.String() + " ended first"
}
