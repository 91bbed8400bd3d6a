// Package startup follows the making of one generator by gen or serve:
// what the command is doing meanwhile, for serve's /readyz, and how a
// signal that comes meanwhile ends it.
package startup

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
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

// The backoff of serve's retries after any other failure to get its machine
// ID, such as a store that cannot be reached: the first retry comes after
// RetryMin, each later one after twice the one before, up to RetryMax.
const (
	RetryMin = 500 * time.Millisecond
	RetryMax = 10 * time.Second
)

// Backoff returns the wait before retry n (0 for the first) after a failure
// to get the machine ID: RetryMin·2ⁿ, at most RetryMax, drawn by r in [0, 1)
// from the upper half of that (jitter), so that a fleet that lost its store
// together does not ask again in step. It is at least RetryMin/2 and at most
// RetryMax.
func Backoff(n int, r float64) time.Duration {
	step := RetryMax
	if n < 8 { // RetryMin·2⁸ is past RetryMax; a larger shift could overflow
		step = min(RetryMin<<n, RetryMax)
	}
	return step/2 + time.Duration(r*float64(step/2))
}

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

// Refusal is a failure to get the machine ID that serve retries, and when
// it asks again.
type Refusal struct {
	Err   error
	Retry time.Time // on the real clock
}

// Reason says what failed, and how serve goes on.
func (r *Refusal) Reason() string {
	if errors.Is(r.Err, machineid.ErrClockOffset) {
		return fmt.Sprintf("refused: %v; serve asks again every %v", r.Err, ClockRetry)
	}
	return fmt.Sprintf("no machine ID yet: %v; serve asks again, backing off up to every %v", r.Err, RetryMax)
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

// LeaseReport returns the lease's latest report, or one of machine ID -1
// before the first; serve's status page shows it until the generator is
// made.
func (st *Startup) LeaseReport() machineid.Lease {
	if l := st.Lease.Load(); l != nil {
		return *l
	}
	return machineid.Lease{ID: -1}
}

// Status is Reason, with the machine ID the lease reports (taken, or
// being acquired), or -1 before there is one, and how long until the
// generator can issue, as far as the lease's reports tell: until the clock
// passes the mark the lease inherited, or 0 (not known) before there is
// one, such as while the machine ID is acquired; or, while serve retries a
// failure, the failure and the time until serve asks again. It is serve's
// answer before the generator is made, Retry-After's figure included.
func (st *Startup) Status() (reason string, machine int64, wait time.Duration) {
	if r := st.Refused.Load(); r != nil {
		return r.Reason(), -1, max(time.Until(r.Retry), 0)
	}
	machine = -1
	l := st.Lease.Load()
	if l != nil {
		machine = l.ID
	}
	if l != nil && l.Held && !l.After.IsZero() {
		now := time.Now
		if st.Clock != nil {
			now = st.Clock
		}
		wait = max(l.After.Sub(now()), 0)
	}
	return st.Reason(), machine, wait
}

// Retry calls try until it returns nil, an error for which final is true,
// or ErrInterrupted, and returns what try returned; or until st.Stop ends
// while it waits to ask again, and then returns ErrInterrupted. Meanwhile
// st.Refused holds the last failure, for Status, and a failure is logged
// once, and again only when its words change. A refused clock is asked
// about again every ClockRetry: waiting does not set a clock right, but NTP
// may, as on a host just booted. Any other failure, such as a store that
// cannot be reached, is asked about again after Backoff. The wait between
// tries ends at once on st.Stop; a try itself ends on it as New does.
func Retry[T any](st *Startup, log *slog.Logger, try func() (T, error), final func(error) bool) (T, error) {
	said := ""
	for n := 0; ; {
		v, err := try()
		if err == nil || errors.Is(err, ErrInterrupted) || final(err) {
			st.Refused.Store(nil)
			return v, err
		}
		wait := ClockRetry
		clock := errors.Is(err, machineid.ErrClockOffset)
		if !clock {
			wait = Backoff(n, rand.Float64())
			n++
		}
		st.Refused.Store(&Refusal{Err: err, Retry: time.Now().Add(wait)})
		if err.Error() != said {
			said = err.Error()
			if clock {
				log.Error("ringflake: the store refused this clock; asking again every "+ClockRetry.String()+" until it is set right", "err", err)
			} else {
				log.Error("ringflake: no machine ID yet; asking again, backing off up to every "+RetryMax.String(), "err", err)
			}
		}
		t := time.NewTimer(wait)
		select {
		case <-st.Stop.Done():
			t.Stop()
			st.Refused.Store(nil)
			var zero T
			return zero, ErrInterrupted
		case <-t.C:
		}
	}
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

// CloseAfterRelease returns close, which closes the store's client,
// preceded by a release of l, waited for within ReleaseTimeout. A
// New that gives up on l while a store call runs (a paused server) releases
// it in the background once the call returns; a command whose New failed
// closed the client at once, and that release then failed on a closed
// connection ("closed pool"), leaving the lease to run out. A Holder
// answers a second Release with the first one's result, once it is in, or
// releases itself what the first has not begun to, so every path that
// closes the client (a failed New, a stop after Close, a failed listen)
// waits here for the release, whatever the store.
func CloseAfterRelease(l machineid.Leaser, close func()) func() {
	return func() {
		deadline := time.NewTimer(ReleaseTimeout)
		defer deadline.Stop()
		_ = Within(func() error { return l.Release(time.Time{}) }, deadline.C) // its failure is New's, or Close's, to report
		close()
	}
}
