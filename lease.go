package ringflake

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

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
	lost    error           // for kind lost: ErrLeaseLost, wrapped with the lease's cause

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
		b:       bounds{floor: -1, ceil: g.maxTicks},
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

// inUse holds the Leasers that live generators follow, so that one Leaser
// cannot serve two generators: both would issue with its one machine ID.
var inUse sync.Map // machineid.Leaser → struct{}

// errLeaserInUse is returned by New for a Leaser that a live generator uses.
var errLeaserInUse = fmt.Errorf("%w: this machineid.Leaser already serves a live generator, and both would issue with its one machine ID; give each generator its own Leaser (its own lease)", ErrInvalidConfig)

// claimLeaser records l as in use, or returns why it cannot be.
func claimLeaser(l machineid.Leaser) (err error) {
	defer func() {
		if recover() != nil { // a map key must be comparable
			err = fmt.Errorf("%w: a machineid.Leaser must be comparable, such as a pointer; %T is not", ErrInvalidConfig, l)
		}
	}()
	if _, taken := inUse.LoadOrStore(l, struct{}{}); taken {
		return errLeaserInUse
	}
	return nil
}

// attach gets the machine ID from src and, if src is a [machineid.Leaser],
// starts following its lease and waits out the mark it inherited; all
// within timeout.
func (g *Generator) attach(src machineid.Source, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	leaser, leased := src.(machineid.Leaser)
	if leased {
		if err := claimLeaser(leaser); err != nil {
			return err
		}
		// Until the generator's Close owns the claim, this call undoes
		// it, on every way out, a panic in the leaser's Watch included.
		// Not after Close: by then another New may have claimed l anew.
		defer func() {
			if g.leaser == nil {
				inUse.Delete(leaser)
			}
		}()
	}
	id, err := acquire(src, leaser, timeout)
	if err == nil && (id < 0 || id > g.layout.MaxMachine()) {
		err = configErr("machine ID from source", id, fmt.Sprintf("0..%d", g.layout.MaxMachine()))
		if leased {
			releaseWithin(leaser, time.Time{}, deadline)
		}
	}
	if err != nil {
		return fmt.Errorf("ringflake: getting machine ID: %w", err)
	}
	if !leased {
		g.state.Store(g.fixed(id))
		return nil
	}
	g.state.Store(&machineState{machine: id, kind: pending, lease: machineid.Lease{ID: id}, changed: make(chan struct{})})
	g.stopWatch = leaser.Watch(g.setLease)
	g.leaser = leaser // from here on Close releases the lease and the claim
	if err := g.awaitMark(deadline, timeout); err != nil {
		_ = g.Close()
		return err
	}
	return nil
}

// acquireGrace is how long after the acquire timeout New still waits for a
// source that honours its context's deadline to return its own error, which
// says more than New's.
const acquireGrace = 50 * time.Millisecond

// acquire asks src for a machine ID with a context whose deadline is timeout
// away. A source must honour its context; acquire enforces the bound all
// the same, by asking on a goroutine and giving up timeout+acquireGrace
// later. A leaser whose answer comes after that is released there.
//
// A panic in src becomes an error that names src's type and the panic's
// value (and wraps it, if it is an error). Passing the panic on would not
// be "as if src had been called directly": src runs on acquire's goroutine,
// whose stack is gone by then, so a re-panic would tell no more than the
// error does, and it would take down a caller, such as a service starting
// up, that can report a failed New and retry.
func acquire(src machineid.Source, leaser machineid.Leaser, timeout time.Duration) (int64, error) {
	type answer struct {
		id    int64
		err   error
		panic any
	}
	got := make(chan answer, 1) // buffered: the goroutine never blocks on a caller that gave up
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	go func() {
		defer cancel()
		a := answer{id: -1, err: errSourceExited}
		defer func() {
			if p := recover(); p != nil {
				a = answer{id: -1, panic: p}
			}
			got <- a
		}()
		id, err := src.MachineID(ctx)
		a = answer{id: id, err: err}
	}()
	wait := timeout + acquireGrace
	if wait < timeout {
		wait = time.Duration(1<<63 - 1) // a timeout meant as "forever" must not wrap round to none
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case a := <-got:
		if a.panic != nil || a.err != nil {
			if leaser != nil {
				// It may hold what it took before it failed.
				releaseWithin(leaser, time.Time{}, time.Now().Add(acquireGrace))
			}
			if a.panic != nil {
				a.err = sourcePanicked(src, a.panic)
			}
		}
		return a.id, a.err
	case <-t.C:
		if leaser != nil {
			go func() { <-got; _ = leaser.Release(time.Time{}) }()
		}
		return -1, fmt.Errorf("no answer within the acquire timeout (%v): %w", timeout, context.DeadlineExceeded)
	}
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

// releaseWithin releases l and waits for that until deadline at the most;
// a release still running then finishes in the background.
func releaseWithin(l machineid.Leaser, issued time.Time, deadline time.Time) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = l.Release(issued)
	}()
	t := time.NewTimer(max(time.Until(deadline), 0))
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// awaitMark waits, until deadline in real time, until the generator can
// issue: the lease held, the clock past the mark it inherited and not past
// the one confirmed. It plans each wait with plan, as NextID does, with
// what is left of the acquire timeout in place of MaxWait, and logs a wait
// for the mark once it knows it will make it. It returns a *ClockError
// wrapping ErrMarkAhead, wrapped in turn with the acquire timeout, if the
// clock cannot pass the inherited mark by the deadline (at once if the
// plan says so), or wrapping ErrLeaseLost if the lease is not held, or not
// confirmed as far as the clock, by then.
func (g *Generator) awaitMark(deadline time.Time, timeout time.Duration) error {
	var a attempt
	budget := time.Until(deadline)
	logged := false
	for {
		if err := g.look(&a); err != nil {
			return err
		}
		a.st = g.state.Load()
		if a.st.kind == closed {
			return ErrClosed
		}
		if a.cs = a.st.standing(a.ticks); a.cs == claimed {
			return nil
		}
		need, _, fail := g.plan(&a)
		// A lease report, or its mark raised, may come before the clock
		// says so: for those, wait what is left rather than fail at once.
		sleepFor, err := a.budget(budget, need, fail, a.cs != belowFloor)
		if err != nil {
			err.Clock = a.r.time()
			if a.cs == belowFloor {
				return fmt.Errorf("%w; the acquire timeout (%v) ends first: raise it with WithAcquireTimeout, or set the clock right if it is behind", err, timeout)
			}
			return err
		}
		if a.cs == belowFloor && !logged {
			logged = true
			g.log(logMarkWait, slog.Int64("machine", a.st.machine), slog.Duration("wait", need),
				slog.Time("until", a.r.time().Add(need)), slog.Time("mark", a.st.lease.After))
		}
		waitChange(a.st.changed, min(sleepFor, markRecheck))
	}
}

// markRecheck bounds each of New's sleeps for the mark, so that a clock
// put right while it waits (stepped forward) ends the wait soon.
const markRecheck = 100 * time.Millisecond

// standing says whether st lets a generator whose ring has issued nothing
// issue at tick, as claim would judge it: claimed if so, else why not.
func (st *machineState) standing(tick int64) claimStatus {
	switch {
	case st.kind != held:
		return notHeld
	case tick <= st.b.floor:
		return belowFloor
	case tick > st.b.ceil:
		return aboveCeil
	}
	return claimed
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
		if g.state.CompareAndSwap(old, next) {
			if old != nil && old.changed != nil {
				close(old.changed) // only the CAS that replaced old gets here
			}
			g.logChange(old, next, l)
			return
		}
	}
}

// stateOf returns the machine state a lease report stands for.
func (g *Generator) stateOf(l machineid.Lease) *machineState {
	next := &machineState{
		machine: l.ID,
		b:       bounds{floor: -1, ceil: g.maxTicks},
		lease:   l,
		changed: make(chan struct{}),
	}
	switch {
	case l.ID < 0 || l.ID > g.layout.MaxMachine():
		next.kind = lost
		next.machine = -1 // never issued with
		next.lost = fmt.Errorf("%w: the lease holds machine ID %d, outside the layout's 0..%d", ErrLeaseLost, l.ID, g.layout.MaxMachine())
	case !l.Held:
		next.kind = lost
		next.lost = ErrLeaseLost
		if l.Err != nil {
			next.lost = fmt.Errorf("%w: %w", ErrLeaseLost, l.Err)
		}
	}
	if !l.After.IsZero() {
		next.b.floor = g.tickAt(l.After)
	}
	if !l.Until.IsZero() {
		next.b.ceil = g.tickAt(l.Until)
	}
	return g.withPart(next)
}

// logChange logs a lease lost or regained, as old turned into next.
func (g *Generator) logChange(old, next *machineState, l machineid.Lease) {
	switch {
	case old == nil:
	case old.kind == held && next.kind != held:
		g.log(logLeaseLost, slog.Int64("machine", old.machine), slog.Any("cause", l.Err))
	case old.kind == lost && next.kind == held:
		g.log(logLeaseRegained, slog.Int64("machine", next.machine))
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
