package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringflake/ringflake/cmd/ringflake/internal/serve"
	"github.com/ringflake/ringflake/machineid"
)

// releaseTimeout bounds how long a command waits for its store to release
// a lease when it stops. A release that takes longer is reported as
// failed; the lease then runs out after its TTL.
const releaseTimeout = 5 * time.Second

// errInterrupted reports that a signal stopped a command before its
// generator was made; whatever lease it had taken was released.
var errInterrupted = errors.New("interrupted while getting the machine ID")

// startup follows the making of one generator, so that a signal can end
// it at any point and so that serve can say why it is not ready yet. Its
// fields are written by newStartup and watch, before New is called, and
// read after.
type startup struct {
	stop   context.Context  // done on SIGTERM or SIGINT
	clock  func() time.Time // the generator's clock, for the reason
	source string           // where the machine ID comes from, for the reason

	leaser   machineid.Leaser                // the store's, or nil for a fixed ID
	lease    atomic.Pointer[machineid.Lease] // the lease's latest report; nil before the first
	answered chan struct{}                   // closed when the leaser's MachineID has returned
	once     sync.Once                       // closes answered
}

func newStartup(stop context.Context, clock func() time.Time, source string) *startup {
	if clock == nil {
		clock = time.Now
	}
	return &startup{stop: stop, clock: clock, source: source, answered: make(chan struct{})}
}

// watch returns l wrapped for the generator: its MachineID gives up when
// st.stop is done, and its lease reports are kept for reason.
func (st *startup) watch(l machineid.Leaser) machineid.Leaser {
	st.leaser = l
	return &watched{Leaser: l, st: st}
}

// watched is a Leaser as startup hands it to New.
type watched struct {
	machineid.Leaser
	st *startup
}

// MachineID asks the store, with ctx ended early by a signal.
func (w *watched) MachineID(ctx context.Context) (int64, error) {
	defer w.st.once.Do(func() { close(w.st.answered) })
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(w.st.stop, cancel)()
	return w.Leaser.MachineID(ctx)
}

// Watch passes the lease on to fn and keeps it.
func (w *watched) Watch(fn func(machineid.Lease)) (stop func()) {
	return w.Leaser.Watch(func(l machineid.Lease) {
		w.st.lease.Store(&l)
		fn(l)
	})
}

// reason says why the generator is not made yet: the machine ID being
// acquired, or the lease's state while New waits out its inherited mark.
func (st *startup) reason() string {
	l := st.lease.Load()
	if l == nil {
		return "acquiring the machine ID from the " + st.source
	}
	if r := serve.NotReady(l.Held, l.Err, l.After, l.Until, st.clock()); r != "" {
		return r
	}
	return "starting"
}

// start makes the generator as p.make does, and gives up if st.stop is
// done first: New cannot be cancelled, so start cancels the store's
// call for a machine ID, releases what it took, within releaseTimeout, and
// returns errInterrupted, with the release's error if it failed. New's
// goroutine is then left to end on its own, with nothing to issue for.
func (p *plan) start(st *startup) (*generator, error) {
	type made struct {
		g   *generator
		err error
	}
	done := make(chan made, 1)
	go func() {
		g, err := p.make()
		done <- made{g, err}
	}()
	select {
	case m := <-done:
		return m.g, m.err
	case <-st.stop.Done():
	}
	deadline := time.NewTimer(releaseTimeout)
	defer deadline.Stop()
	if st.leaser != nil {
		select { // the call is cancelled; a store that honours its context returns soon
		case <-st.answered:
		case <-deadline.C:
		}
	}
	var release func() error
	select {
	case m := <-done: // made after all, or failed, which released
		if m.err != nil {
			return nil, errInterrupted
		}
		defer m.g.done()
		release = m.g.Close
	default:
		if st.leaser == nil {
			return nil, errInterrupted
		}
		release = func() error { return st.leaser.Release(time.Time{}) } // nothing issued: keep the mark
	}
	if err := within(release, deadline.C); err != nil {
		return nil, fmt.Errorf("%w; releasing the lease: %w", errInterrupted, err)
	}
	return nil, errInterrupted
}

// within runs f and returns its error, or an error saying it had not
// returned when timeout fired; f then finishes on its own.
func within(f func() error, timeout <-chan time.Time) error {
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-timeout:
		return fmt.Errorf("no answer from the store within %v; the lease runs out after its TTL", releaseTimeout)
	}
}
