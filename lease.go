package ringflake

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/ringflake/ringflake/machineid"
)

// attach gets the machine ID from svc within timeout and, if svc is a
// [machineid.Leaser], starts following its lease.
func (g *Generator) attach(svc machineid.Service, timeout time.Duration) error {
	leaser, leased := svc.(machineid.Leaser)
	if r, ok := svc.(machineid.Ranger); ok {
		if lo, hi := r.Range(); lo < 0 || hi > g.layout.MaxMachine() || lo > hi {
			if leased {
				_ = leaser.Close() // nothing was acquired
			}
			return configErr("machine ID range of service", fmt.Sprintf("%d..%d", lo, hi), fmt.Sprintf("within 0..%d, the layout's machine IDs", g.layout.MaxMachine()))
		}
	}
	id, err := g.acquireWithin(svc, leaser, timeout)
	if err != nil {
		return fmt.Errorf("ringflake: getting machine ID: %w", err)
	}
	if !leased {
		g.state.Store(g.fixed(id))
		return nil
	}
	g.leaser = leaser
	g.state.Store(&machineState{machine: id, pending: true, changed: make(chan struct{})}) // invalid until the first report
	g.stopWatch = leaser.Watch(g.setLease)
	return nil
}

// acquireGrace is how long after the acquire timeout New still waits for a
// service that honours its context's deadline to return its own error,
// which says more than New's.
const acquireGrace = 50 * time.Millisecond

// acquireWithin asks svc for a machine ID in range, with a context whose
// deadline is timeout away, and waits for the answer at most timeout plus
// acquireGrace, whatever svc does: a service that ignores its context
// cannot hold up New. A leaser with nothing usable acquired is closed, so
// that a lease an unanswered call may have taken is released; New waits
// for that close only until the same deadline and leaves the rest to a
// goroutine, as it does for an answer that comes after it gave up (whose
// lease that goroutine closes). A panic in svc reaches New's caller, as if
// svc had been called directly, once the leaser is closed; one that comes
// after New gave up has no caller to reach and crashes the goroutine.
func (g *Generator) acquireWithin(svc machineid.Service, leaser machineid.Leaser, timeout time.Duration) (int64, error) {
	var (
		mu      sync.Mutex // protects gaveUp and the send on got
		gaveUp  bool
		got     = make(chan acquired, 1)
		settled = make(chan struct{}) // closed once a failed acquisition's leaser is closed
	)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	go func() {
		a := acquired{id: -1, err: errServiceExited}
		defer func() {
			if p := recover(); p != nil {
				a = acquired{id: -1, panicked: true, value: p}
			}
			mu.Lock()
			unwanted := gaveUp
			if !unwanted {
				got <- a
			}
			mu.Unlock()
			if leaser != nil && (a.err != nil || a.panicked || unwanted) {
				_ = leaser.Close() // nothing usable was acquired, or New has returned without it
			}
			cancel()
			close(settled)
			if a.panicked && unwanted {
				panic(a.value)
			}
		}()
		id, err := svc.MachineID(ctx)
		if err == nil && (id < 0 || id > g.layout.MaxMachine()) {
			err = configErr("machine ID from service", id, fmt.Sprintf("0..%d", g.layout.MaxMachine()))
		}
		a = acquired{id: id, err: err}
	}()
	wait := timeout + acquireGrace
	if wait < timeout {
		wait = math.MaxInt64 // a timeout meant as "forever" must not wrap round to none
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	var a acquired
	expired := false
	select {
	case a = <-got:
	case <-deadline.C:
		expired = true
		mu.Lock()
		select {
		case a = <-got:
		default:
			gaveUp = true
			a = acquired{id: -1, err: fmt.Errorf("no answer within the acquire timeout (%v): %w", timeout, context.DeadlineExceeded)}
		}
		mu.Unlock()
	}
	if (a.err != nil || a.panicked) && !expired {
		select { // let a quick close finish, so that New returns with Redis tidy
		case <-settled:
		case <-deadline.C:
		}
	}
	if a.panicked {
		panic(a.value)
	}
	return a.id, a.err
}

// acquired is the outcome of a machine ID service's call.
type acquired struct {
	id       int64
	err      error
	panicked bool // the service panicked with value
	value    any
}

// errServiceExited is the outcome of a service call that neither returned
// nor panicked: it called runtime.Goexit.
var errServiceExited = errors.New("the machine ID service's call exited its goroutine (runtime.Goexit)")

// setLease turns a lease report into the state that claims check.
//
// Invariant: once Close has stored a closed state, nothing replaces it. The
// CAS loop retries only when another writer (Close, or an earlier report
// racing with this one) changed the state; re-reading the state keeps a
// closed generator closed.
func (g *Generator) setLease(l machineid.Lease) {
	inRange := l.ID >= 0 && l.ID <= g.layout.MaxMachine()
	next := &machineState{
		machine: l.ID,
		valid:   l.Valid && inRange,
		b:       bounds{floor: -1, ceil: g.maxTicks},
		changed: make(chan struct{}),
	}
	if !inRange {
		next.machine = -1 // never issued with; MachineID reports it as none
	}
	if !l.After.IsZero() {
		next.b.floor = g.tickAt(l.After)
	}
	if !l.Until.IsZero() {
		next.b.ceil = g.tickAt(l.Until)
	}
	for {
		old := g.state.Load()
		if old != nil && old.closed {
			return
		}
		if g.state.CompareAndSwap(old, next) {
			if old != nil && old.changed != nil {
				close(old.changed) // only the CAS that replaced old gets here
			}
			switch {
			case old != nil && old.valid && !next.valid:
				g.emit(Event{Kind: EventLeaseLost, Machine: old.machine})
			case old != nil && !old.valid && !old.pending && next.valid:
				g.emit(Event{Kind: EventLeaseRegained, Machine: next.machine})
			}
			return
		}
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
