// Package startup follows the making of one generator by gen or serve:
// what the command is doing meanwhile, for serve's /readyz, and how a
// signal that comes meanwhile ends it.
package startup

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ringflake/ringflake/machineid"
)

// ReleaseTimeout bounds how long a command waits for its store to release
// a lease when it stops. A release that takes longer is reported as
// failed; the lease then runs out after its TTL.
const ReleaseTimeout = 5 * time.Second

// ClockRetry is how long serve waits before it asks for its machine ID
// again after the store refused its clock as off the fleet's.
const ClockRetry = 5 * time.Second

// ErrInterrupted reports that a signal stopped a command before its
// generator was made; whatever lease it had taken was released.
var ErrInterrupted = errors.New("interrupted while getting the machine ID")

// Startup follows the making of one generator, so that a signal can end
// it at any point and so that serve can say what it is doing meanwhile.
// Stop, Source, Leaser and Clock are written by New and Watch, and by the
// command, before ringflake.New is called, and read after.
type Startup struct {
	Stop   context.Context // done on SIGTERM or SIGINT; New's context
	Source string          // where the machine ID comes from, for the reason

	Leaser  machineid.Leaser                // the store's, or nil for a fixed ID
	Lease   atomic.Pointer[machineid.Lease] // the lease's latest report; nil before the first
	Clock   func() time.Time                // the generator's, for Status; nil means time.Now
	Refused atomic.Pointer[Refusal]         // the store's refusal of the clock, while serve waits to ask again
}

// Refusal is a store's refusal of the clock, and when serve asks again.
type Refusal struct {
	Err   error
	Retry time.Time // on the real clock
}

// New returns the Startup of a command whose signals end stop, and whose
// machine ID comes from source ("--machine-id", or "lease URL").
func New(stop context.Context, source string) *Startup {
	return &Startup{Stop: stop, Source: source}
}

// Watch keeps l for Reason, and returns l itself: New hands its clock to
// a *machineid.Holder, so the command gives it the Holder, not a wrapper.
// Whoever makes the generator stores l's reports in Lease.
func (st *Startup) Watch(l machineid.Leaser) machineid.Leaser {
	st.Leaser = l
	return l
}

// Reason says what the command is doing while its generator is not made
// yet: acquiring the machine ID, or starting with the one leased while New
// waits, if it must, for the clock to pass the mark the lease inherited.
// It describes the lease's reports; whether a generator can issue is
// Generator.Ready's to judge, once there is one.
func (st *Startup) Reason() string {
	from := st.Source // "--machine-id", or "lease URL"
	if strings.HasPrefix(from, "lease ") {
		from = "the " + from
	}
	l := st.Lease.Load()
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

// Status is Reason, with how long until the generator can issue, as far as
// the lease's reports tell: until the clock passes the mark the lease
// inherited, or 0 (not known) before there is one, such as while the
// machine ID is acquired; or, while the store refuses the clock, the
// refusal and the time until serve asks again. It is serve's answer before
// the generator is made, Retry-After's figure included.
func (st *Startup) Status() (string, time.Duration) {
	if r := st.Refused.Load(); r != nil {
		return fmt.Sprintf("refused: %v; serve asks again every %v", r.Err, ClockRetry), max(time.Until(r.Retry), 0)
	}
	var wait time.Duration
	if l := st.Lease.Load(); l != nil && l.Held && !l.After.IsZero() {
		now := time.Now
		if st.Clock != nil {
			now = st.Clock
		}
		wait = max(l.After.Sub(now()), 0)
	}
	return st.Reason(), wait
}

// Within runs f and returns its error, or an error saying it had not
// returned when timeout fired; f then finishes on its own.
func Within(f func() error, timeout <-chan time.Time) error {
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-timeout:
		return fmt.Errorf("no answer from the store within %v; the lease runs out after its TTL", ReleaseTimeout)
	}
}
