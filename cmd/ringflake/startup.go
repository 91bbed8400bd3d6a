package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

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
// it at any point and so that serve can say what it is doing meanwhile.
// Its fields are written by newStartup and watch, before New is called,
// and read after.
type startup struct {
	stop   context.Context // done on SIGTERM or SIGINT; New's context
	source string          // where the machine ID comes from, for the reason

	leaser  machineid.Leaser                // the store's, or nil for a fixed ID
	lease   atomic.Pointer[machineid.Lease] // the lease's latest report; nil before the first
	clock   func() time.Time                // the generator's, for status; set with leaser, or time.Now
	refused atomic.Pointer[refusal]         // the store's refusal of the clock, while serve waits to ask again
}

// refusal is a store's refusal of the clock, and when serve asks again.
type refusal struct {
	err   error
	retry time.Time // on the real clock
}

func newStartup(stop context.Context, source string) *startup {
	return &startup{stop: stop, source: source}
}

// watch keeps l's reports for reason, and returns l itself: New hands its
// clock to a *machineid.Holder, so the command gives it the Holder, not a
// wrapper.
func (st *startup) watch(l machineid.Leaser) machineid.Leaser {
	st.leaser = l
	return l
}

// reason says what the command is doing while its generator is not made
// yet: acquiring the machine ID, or starting with the one leased while New
// waits, if it must, for the clock to pass the mark the lease inherited.
// It describes the lease's reports; whether a generator can issue is
// Generator.Ready's to judge, once there is one.
func (st *startup) reason() string {
	from := st.source // "--machine-id", or "lease URL"
	if strings.HasPrefix(from, "lease ") {
		from = "the " + from
	}
	l := st.lease.Load()
	switch {
	case l != nil && l.ID < 0 && l.Err != nil: // waiting for an ID of a full range to free, say
		return fmt.Sprintf("acquiring the machine ID from %s: %v", from, l.Err)
	case l == nil || l.ID < 0:
		return "acquiring the machine ID from " + from
	case !l.Held && l.Err != nil:
		return fmt.Sprintf("acquiring the machine ID from %s: machine ID %d is not held: %v", from, l.ID, l.Err)
	case !l.Held:
		return fmt.Sprintf("acquiring the machine ID from %s: machine ID %d is not held", from, l.ID)
	case l.After.IsZero():
		return fmt.Sprintf("starting with machine ID %d from %s", l.ID, from)
	}
	return fmt.Sprintf("starting with machine ID %d from %s, once the clock has passed the mark it inherited, %s",
		l.ID, from, l.After.UTC().Format(time.RFC3339Nano))
}

// status is reason, with how long until the generator can issue, as far as
// the lease's reports tell: until the clock passes the mark the lease
// inherited, or 0 (not known) before there is one, such as while the
// machine ID is acquired; or, while the store refuses the clock, the
// refusal and the time until serve asks again. It is serve's answer before
// the generator is made, Retry-After's figure included.
func (st *startup) status() (string, time.Duration) {
	if r := st.refused.Load(); r != nil {
		return fmt.Sprintf("refused: %v; serve asks again every %v", r.err, clockRetry), max(time.Until(r.retry), 0)
	}
	var wait time.Duration
	if l := st.lease.Load(); l != nil && l.Held && !l.After.IsZero() {
		now := time.Now
		if st.clock != nil {
			now = st.clock
		}
		wait = max(l.After.Sub(now()), 0)
	}
	return st.reason(), wait
}

// start makes the generator as p.make does, with st.stop as New's context:
// a signal ends New, which releases what it took. start then releases
// again, within releaseTimeout, to learn how that release went (a Holder
// answers a second Release with the first one's result), and returns
// errInterrupted, with the release's error if it failed. A generator made
// after all, as the signal came, is closed alike.
func (p *plan) start(st *startup) (*generator, error) {
	var stopWatch func()
	if st.leaser != nil {
		stopWatch = st.leaser.Watch(func(l machineid.Lease) { st.lease.Store(&l) })
	}
	g, err := p.make(st.stop)
	if stopWatch != nil {
		stopWatch()
	}
	if st.stop.Err() == nil {
		return g, err
	}
	deadline := time.NewTimer(releaseTimeout)
	defer deadline.Stop()
	var release func() error
	switch {
	case err == nil: // made after all
		defer g.done()
		release = g.Close
	case st.leaser != nil:
		release = func() error { return st.leaser.Release(time.Time{}) } // nothing issued: keep the mark
	default:
		return nil, errInterrupted
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
