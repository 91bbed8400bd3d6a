package machineid

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/ringflake/ringflake/internal/mutant"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringflake/ringflake/internal/holderclock"
	"github.com/ringflake/ringflake/internal/sentinel"
)

// Holder holds a machine ID on a lease in a [Store]: every lease store's
// New returns one. It implements [Leaser], so give it to
// ringflake.WithMachineIDSource, and the generator follows the lease, waits
// out the mark it inherited and releases it on Close. One Holder serves one
// generator at a time.
//
// After the first successful MachineID, a goroutine renews the lease every
// TTL/3 (every TTL/10 after a failed call) and, once it is lost, takes one
// again, perhaps another ID, until Release. The marks are read from the
// generator's clock (ringflake.WithClock), which ringflake.New hands the
// Holder, or from time.Now. A Holder is safe for concurrent use.
type Holder struct {
	store   Store                            // written once by NewHolder
	cfg     config                           // written once by NewHolder
	name    string                           // written once by NewHolder
	clocked bool                             // the store's Take reports a reference clock (Limits.Clock); written once by NewHolder
	lasts   bool                             // the store's lease lasts until lost or released (Limits.Lasts); written once by NewHolder
	clock   atomic.Pointer[func() time.Time] // the marks' clock; nil means time.Now. Set by holderclock
	seeded  atomic.Pointer[jitterSource]     // the jitter's source; nil means math/rand/v2's. Set by holderseed, used under turn

	// turn serializes the calls to the store, so that a token never has
	// two in flight and the release comes after the last of them. It is a
	// channel, not a mutex, so that a wait for it can end with a context.
	turn chan struct{}

	mu       sync.Mutex  // protects the fields below
	lease    Lease       // what watchers see
	deadline time.Time   // with a monotonic reading: Held ends here
	lastErr  error       // the latest failed call's error since one succeeded
	loss     error       // why the store said the lease was lost, until one is confirmed
	sess     *session    // the current session, nil when none
	last     *session    // the last session released, for a second Release
	expiry   *time.Timer // fires at deadline; written once by NewHolder
	read     time.Time   // the store's clock in the call that last confirmed the lease (Grant.Clock.Time), or zero
	ride     Lease       // while Held, what watchers see in place of lease: the holding kept through a store's restart (ride.go)
	rideErr  error       // the renewal's error that began the ride: the cause when it ends
	rideEnd  *time.Timer // ends the ride; written once by NewHolder

	// pending are the changes of lease the watchers have yet to hear of,
	// oldest first; guarded by mu, appended by setLocked.
	pending []Lease

	wmu      sync.Mutex // serializes deliveries to watchers; protects watchers and nextW
	watchers []watcher  // in the order they were added, which is the order they are told in
	nextW    int

	nmu        sync.Mutex // protects delivering
	delivering bool       // the deliverer runs
}

func init() {
	holderclock.Register(func(src any, clock func() time.Time) bool {
		h, ok := src.(*Holder)
		if ok {
			if clock == nil {
				h.clock.Store(nil)
			} else {
				h.clock.Store(&clock)
			}
		}
		return ok
	})
}

// now reads the marks' clock.
func (h *Holder) now() time.Time {
	if c := h.clock.Load(); c != nil {
		return (*c)()
	}
	return time.Now()
}

// session is one stretch of holding, from the first MachineID after
// NewHolder or after a Release, to the next Release. Each has a token of its
// own, so that a lease held before a Release is never taken for the next
// session's.
type session struct {
	token   string
	ctx     context.Context    // done when Release begins; ends calls in flight
	cancel  context.CancelFunc // cancels ctx
	stopped chan struct{}      // closed when the renewer returns

	// Guarded by Holder.mu:
	running bool  // the renewer was started
	id      int64 // the ID last granted to token, or -1
	owned   bool  // the store's last answer said token holds id
	unsure  bool  // a Take was sent whose answer was not seen: token may hold another ID
	takeErr error // the store's own error of that Take, while unsure; for free's message

	released   chan struct{} // closed when Release has finished
	releaseErr error         // written before released is closed
}

var _ Leaser = (*Holder)(nil)

// NewHolder returns a Holder of machine IDs leased from store, configured
// by opts: the common ones, and the store's own, made with [StoreOption]
// for settings of type S, which it applies to settings. lim are the
// store's bounds on the common options. It does not contact the store: the
// first MachineID does. It returns an error wrapping
// ringflake.ErrInvalidConfig, naming the value and its valid range, if
// store is nil, an option is out of range, or an option is another store's.
func NewHolder[S any](store Store, settings *S, lim Limits, opts ...Option) (*Holder, error) {
	c := config{lo: 0, hi: 1023}
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	for _, o := range c.store {
		set, ok := o.set.(func(*S))
		if !ok || settings == nil {
			return nil, invalid("option", o.name, "the options of "+lim.Name+" and of package machineid")
		}
		set(settings)
	}
	if store == nil {
		return nil, invalid("store", "nil", "a Store")
	}
	if err := c.validate(lim); err != nil {
		return nil, err
	}
	h := &Holder{
		store:   store,
		cfg:     c,
		name:    lim.Name,
		clocked: lim.Clock,
		lasts:   lim.Lasts,
		turn:    make(chan struct{}, 1),
		lease:   Lease{ID: -1},
	}
	h.expiry = time.AfterFunc(time.Hour, h.expire)
	h.expiry.Stop()
	h.rideEnd = time.AfterFunc(time.Hour, h.endRide)
	h.rideEnd.Stop()
	return h, nil
}

// MachineID returns the leased machine ID. If the Holder holds no lease,
// it takes the lowest free ID in its range and then renews the lease in
// the background until Release. It waits, for a call to the store in
// flight and for its own, at most until ctx's deadline or, if ctx has
// none, the call timeout. While every ID in the range is held, it tries
// again until then, backing off with jitter from TTL/10 to TTL/2, and its
// lease reports the wait (an Err wrapping [ErrExhausted]).
//
// It returns an error wrapping [ErrExhausted] if every ID in the range was
// still held when the deadline came, saying how long it waited and what the
// store knows of the holders; a [*ClockOffsetError] wrapping
// [ErrClockOffset], at once, if its clock is further from the store's
// reference than [WithMaxClockOffset] allows; [ErrReleased] if Release cut
// it short; ctx's error; or the store's error.
func (h *Holder) MachineID(ctx context.Context) (int64, error) {
	if err := ctx.Err(); err != nil {
		return -1, h.errorf("no machine ID taken: %w", err)
	}
	if _, ok := ctx.Deadline(); !ok {
		// The call timeout bounds the whole call, the wait for a call in
		// flight included: a store's call that overruns its context must
		// not hold this one for ever.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, mutant.Delay(h.cfg.callTimeout))
		defer cancel()
	}
	if id, held, err := h.ready(ctx); held || err != nil {
		return id, err
	}
	id, err := h.takeInTurn(ctx)
	// The watchers hear of what came of it before MachineID returns: a
	// generator that watches after MachineID sees the lease at once, and
	// its other watchers as soon. The turn is given back first, so that a
	// slow watcher delays no renewal.
	h.tell()
	return id, err
}

// takeInTurn takes a lease in its turn, or returns the one a call in flight
// took meanwhile.
func (h *Holder) takeInTurn(ctx context.Context) (int64, error) {
	select {
	case h.turn <- struct{}{}:
	case <-ctx.Done():
		return -1, h.errorf("waiting for the call to the store in flight: %w", ctx.Err())
	}
	defer func() { <-h.turn }()
	h.mu.Lock()
	if h.lease.Held && h.sess != nil {
		id := h.lease.ID
		h.mu.Unlock()
		return id, nil
	}
	s := h.sess
	if s == nil {
		s = newSession()
		h.sess = s
	}
	h.mu.Unlock()

	// No lease is at stake yet, so the caller's deadline (New's) may be
	// longer than the call timeout.
	d, _ := ctx.Deadline()
	err := h.obtain(ctx, s, time.Until(d))
	if errors.Is(err, ErrExhausted) {
		err = h.awaitFree(ctx, s, d, err)
	}
	if err != nil {
		return -1, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sess != s {
		return -1, ErrReleased // Release frees what was just taken
	}
	// The lease may not be held even so: a store that waits inside Take
	// (Kubernetes, for a Lease to expire) answers past the deadline counted
	// from when the call began. The ID is the token's, the renewer confirms
	// it within TTL/3, and a generator issues only once it is held.
	if !s.running {
		s.running = true
		go h.run(s)
	}
	return h.lease.ID, nil
}

// ready returns the held lease's ID without waiting for a call in flight,
// or waits, within ctx, for a Release in progress to finish freeing the
// last session's lease, so that a new session starts after it and neither
// frees the other's.
func (h *Holder) ready(ctx context.Context) (id int64, held bool, err error) {
	h.mu.Lock()
	id, held, last := h.lease.ID, h.lease.Held && h.sess != nil, h.last
	if h.sess != nil {
		last = nil
	}
	h.mu.Unlock()
	if held || last == nil {
		return id, held, nil
	}
	select {
	case <-last.released:
		return -1, false, nil
	case <-ctx.Done():
		return -1, false, h.errorf("waiting for the release in progress: %w", ctx.Err())
	}
}

func newSession() *session {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	s := &session{token: hex.EncodeToString(b[:]), id: -1, stopped: make(chan struct{}), released: make(chan struct{})}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s
}

// Release stops renewing and gives the lease up: the ID is free at once,
// and watchers see a lease that is not held, with an Err wrapping
// [ErrReleased]. If issued is not the zero Time, the ID's mark comes down
// to issued, or to the mark this holding inherited if that is later; the
// zero Time keeps the confirmed mark. A later MachineID takes a lease
// again, with a new token.
//
// Release waits at most the call timeout for a call in flight to end, and
// as long again for its own; a Holder that never called the store does not
// call it now. It returns the store's error, wrapped; the lease then runs
// out in the store after its TTL, and its mark stays. It is safe to call
// more than once: a call while nothing is held returns the last release's
// result. Watchers must not call it from their callback.
func (h *Holder) Release(issued time.Time) error {
	h.mu.Lock()
	s := h.sess
	if s == nil {
		last := h.last
		h.mu.Unlock()
		if last == nil {
			return nil
		}
		<-last.released
		return last.releaseErr
	}
	h.sess, h.last = nil, s
	h.loss = nil
	h.expiry.Stop()
	h.stopRideLocked()
	after, running := h.lease.After, s.running
	next := h.lease
	next.Held, next.Err = false, ErrReleased
	h.setLocked(next)
	h.mu.Unlock()
	h.tell() // before Release returns, watchers know
	defer close(s.released)
	s.releaseErr = h.release(s, running, issued, after)
	return s.releaseErr
}

// release ends session s, detached from the Holder: it stops the renewer
// and frees what the token holds, within two call timeouts.
func (h *Holder) release(s *session, running bool, issued, after time.Time) error {
	s.cancel() // ends the call in flight, which must return soon after
	wait := time.NewTimer(mutant.Delay(h.cfg.callTimeout))
	defer wait.Stop()
	stopped := s.stopped
	if !running {
		stopped = nil
	}
	for stopped != nil {
		select {
		case <-stopped:
			stopped = nil
		case <-wait.C:
			return h.stuck(s.id)
		}
	}
	select {
	case h.turn <- struct{}{}:
	case <-wait.C:
		return h.stuck(s.id)
	}
	h.mu.Lock()
	id, unsure := s.id, s.unsure // final: no call of s runs any more
	h.mu.Unlock()
	switch {
	case id < 0 && !unsure:
		<-h.turn
		return nil // the store never granted this token anything
	case unsure:
		id, issued = -1, time.Time{} // issued is about s.id, not what else the token may hold
	case !issued.IsZero() && issued.Before(after):
		issued = after
	}
	return h.free(s, id, issued)
}

// free calls the store's Release for s, on a goroutine, so that a store
// that does not honour its context cannot make Release wait past the call
// timeout: Release is on every stop's path. The caller holds h.turn, which
// the goroutine gives back when the store's call returns, so that no later
// call overlaps one given up on.
func (h *Holder) free(s *session, id int64, issued time.Time) error {
	ctx, cancel := context.WithTimeout(context.Background(), mutant.Delay(h.cfg.callTimeout))
	defer cancel()
	done := make(chan error, 1)
	c := h.claim(s)
	go func() {
		err := h.store.Release(ctx, c, id, issued)
		<-h.turn
		done <- err
	}()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		select {
		case err = <-done:
		case <-time.After(mutant.Delay(h.cfg.callTimeout / 10)):
			return h.stuck(id)
		}
	}
	if err == nil {
		return nil
	}
	what := fmt.Sprintf("machine ID %d", id)
	if id < 0 {
		what = "whatever an unanswered take got"
		h.mu.Lock()
		takeErr := s.takeErr
		h.mu.Unlock()
		if takeErr != nil && takeErr.Error() == err.Error() {
			// The store failed this release as it failed the take, in the
			// same words (a refused connection, say), which the take's
			// error, returned with this one, says already. The release
			// still failed, and the error says so and what follows; only
			// the cause is not said twice.
			return h.errorf("releasing %s: %w", what, &sameFailure{err: err, ttl: h.cfg.ttl})
		}
	}
	return h.explain(ctx, h.cfg.callTimeout, "releasing "+what, err)
}

// sameFailure is a release's failure whose cause, err, is in the words of
// the failed take before it, and which leaves those words out.
type sameFailure struct {
	err error
	ttl time.Duration
}

func (e *sameFailure) Error() string {
	return fmt.Sprintf("the store failed it as it failed the take; a lease the take may have got runs out after its TTL (%v)", e.ttl)
}

func (e *sameFailure) Unwrap() error { return e.err }

// stuck is Release's error when a call to the store does not end within
// the call timeout of its context's end.
func (h *Holder) stuck(id int64) error {
	what := fmt.Sprintf("machine ID %d", id)
	if id < 0 {
		what = "whatever an unanswered take got"
	}
	return h.errorf("releasing %s: a call to the store still runs %v after it was cut short; the lease runs out in the store after its TTL (%v): %w",
		what, h.cfg.callTimeout, h.cfg.ttl, context.DeadlineExceeded)
}

// errorf formats an error of the Holder's, named after its store (as
// "machineid_redis: ...") unless it wraps an error that names a package
// already, such as a sentinel of this package: the store's user made the
// Holder with the store's New, and a message names one package.
func (h *Holder) errorf(format string, a ...any) error {
	return sentinel.Name(h.name, fmt.Errorf(format, a...))
}

// Lease returns the current lease, as watchers were last told or are about
// to be. Its ID is -1 before the first lease.
func (h *Holder) Lease() Lease {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ride.Held {
		return h.ride
	}
	return h.lease
}

// Watch calls fn with the current lease before returning, and again after
// every change (taken, renewed with a later mark, lost with its cause,
// released) until stop is called. Calls to fn do not overlap, and come in
// the order of the changes; renewals not yet told when a later one comes
// are told as that one. A watcher may hear of one state twice. The changes
// are told on a goroutine of their own, never the renewer's, so a slow fn
// delays the telling of later changes but no renewal; MachineID and
// Release tell theirs before they return. fn must not call Watch, stop or
// Release. stop is safe to call more than once.
func (h *Holder) Watch(fn func(Lease)) (stop func()) {
	h.wmu.Lock()
	defer h.wmu.Unlock()
	h.drainLocked() // the watchers there hear of the past, so that fn hears only of what follows
	n := h.nextW
	h.nextW++
	h.watchers = append(h.watchers, watcher{n, fn})
	fn(h.Lease())
	var once sync.Once
	return func() {
		once.Do(func() {
			h.wmu.Lock()
			h.watchers = slices.DeleteFunc(h.watchers, func(w watcher) bool { return w.n == n })
			h.wmu.Unlock()
		})
	}
}

// watcher is one Watch's function, with its number for stop. The watchers
// are told in the order they were added, not in a map's random order: a
// watcher may wake goroutines (a generator's does), and the same changes
// told in the same order wake them in the same order, which lets the
// lease simulation replay a seed's schedule.
type watcher struct {
	n  int
	fn func(Lease)
}

// notify has the watchers told of the pending changes on the deliverer's
// goroutine, so that the caller, the renewer or the expiry timer, never
// waits on a watcher: a slow log handler must not delay a renewal until the
// lease is lost.
func (h *Holder) notify() {
	h.nmu.Lock()
	start := !h.delivering
	h.delivering = true
	h.nmu.Unlock()
	if start {
		go h.deliver()
	}
}

// deliver tells the watchers of the pending changes until none is left.
//
// Invariant: at most one deliverer runs, and no change is left untold.
// notify starts a deliverer only if none runs; the deliverer stops only
// when, under nmu, it finds nothing pending. A change is queued before its
// notify, so a notify that finds the deliverer running finds it before
// that check, which then sees the change; one that finds none starts one.
func (h *Holder) deliver() {
	for {
		h.tell()
		h.nmu.Lock()
		h.mu.Lock()
		done := len(h.pending) == 0
		h.mu.Unlock()
		if done {
			h.delivering = false
			h.nmu.Unlock()
			return
		}
		h.nmu.Unlock()
	}
}

// tell delivers the pending changes to every watcher, on the caller's
// goroutine.
func (h *Holder) tell() {
	h.wmu.Lock()
	defer h.wmu.Unlock()
	h.drainLocked()
}

// drainLocked delivers the pending changes, oldest first. The caller holds
// wmu, so that watchers hear of the changes in the order they came about,
// whoever tells them.
func (h *Holder) drainLocked() {
	for {
		h.mu.Lock()
		if len(h.pending) == 0 {
			h.mu.Unlock()
			return
		}
		l := h.pending[0]
		h.pending = h.pending[1:]
		h.mu.Unlock()
		for _, w := range h.watchers {
			w.fn(l)
		}
	}
}

// claim is what every call of s asks of the store.
func (h *Holder) claim(s *session) Claim {
	now := h.now()
	return Claim{
		Token:     s.token,
		Lo:        h.cfg.lo,
		Hi:        h.cfg.hi,
		TTL:       h.cfg.ttl,
		Margin:    h.cfg.margin,
		Now:       now,
		Until:     now.Add(h.cfg.ttl),
		MaxOffset: h.cfg.maxOffset,
	}
}
