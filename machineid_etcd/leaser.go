package machineid_etcd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ringflake/ringflake/machineid"
)

// Leaser hands out a machine ID held on an etcd lease. It implements
// [machineid.Leaser]: give it to ringflake.WithMachineIDSource and the
// generator follows the lease and releases it on Close. One Leaser serves
// one generator.
//
// After the first successful MachineID, a background goroutine renews the
// lease every TTL/3, raising the ID's mark ahead of time, and, when the
// lease is lost, acquires one again (possibly a different ID) until
// Release.
//
// All methods are safe for concurrent use.
type Leaser struct {
	client *clientv3.Client // written once by New
	cfg    config           // written once by New
	token  string           // random owner token, written once by New

	ctx    context.Context    // done when Release starts; ends calls in flight
	cancel context.CancelFunc // cancels ctx

	// calls is a lock, taken with a context, that serializes the calls
	// that change what this Leaser holds in etcd (acquire, renew, release),
	// so one Leaser never has two in flight; it protects held.
	calls chan struct{}
	held  holding

	mu       sync.Mutex      // protects the fields below
	lease    machineid.Lease // what watchers see; ID -1 before the first lease
	deadline time.Time       // with a monotonic reading: Held ends here
	lastErr  error           // the last failed call's error, the cause if the deadline passes
	started  bool            // the renewer runs
	released bool

	wmu      sync.Mutex // serializes changes to lease with their delivery; protects watchers and nextW
	watchers map[int]func(machineid.Lease)
	nextW    int

	expiry      *time.Timer   // fires at deadline; written once by New
	stopped     chan struct{} // closed when the renewer returns
	releaseOnce sync.Once
	releaseErr  error // written inside releaseOnce
}

// holding is what the Leaser holds in etcd, as far as it knows.
type holding struct {
	lease clientv3.LeaseID // the etcd lease, 0 if none
	sent  time.Time        // send time of lease's last confirmed grant or renewal
	ttl   time.Duration    // min(TTL asked, TTL etcd granted)
	id    int64            // the claimed machine ID, -1 if none
	after int64            // the mark id had when claimed, ns since the Unix epoch
	mark  int64            // the mark last confirmed for id, ns
}

var _ machineid.Leaser = (*Leaser)(nil)

// errNotYet is the cause of the lease reported before the first one.
var errNotYet = errors.New("machineid_etcd: no machine ID acquired yet")

// New returns a Leaser that takes machine IDs from etcd through client. It
// does not contact etcd; the first MachineID does. The client stays the
// caller's: Release does not close it, and closing it stops the Leaser's
// calls as a crash would, leaving the lease to expire. After a failed call
// the Leaser makes the client's failed connections dial again at once,
// rather than on gRPC's growing backoff, so as to renew within the TTL.
//
// New returns an error wrapping ringflake.ErrInvalidConfig if client is
// nil or an option is out of range; the message names the value and what
// is valid.
func New(client *clientv3.Client, opts ...Option) (*Leaser, error) {
	c := defaultConfig()
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	if client == nil {
		return nil, invalid("client", "nil", "a *clientv3.Client")
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	l := &Leaser{
		client:   client,
		cfg:      c,
		token:    hex.EncodeToString(b[:]),
		calls:    make(chan struct{}, 1),
		held:     holding{id: -1},
		lease:    machineid.Lease{ID: -1, Err: errNotYet},
		watchers: make(map[int]func(machineid.Lease)),
		stopped:  make(chan struct{}),
	}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	l.expiry = time.AfterFunc(time.Hour, l.expire)
	l.expiry.Stop()
	return l, nil
}

// MachineID returns the leased machine ID, first acquiring a lease if none
// is held: the lowest free ID in the range whose mark the clock has passed
// (see the package doc). It then renews the lease in the background until
// Release. The calls it makes are bounded by ctx's deadline, or by the
// call timeout if ctx has none; it returns soon after ctx is done, and at
// once if ctx is done already.
//
// MachineID returns an error wrapping [ErrExhausted], [ErrReleased],
// [ErrLeaseLost] (the ID it claimed was taken before its mark was raised),
// ctx's error, or etcd's error. A call that fails may leave a claim in
// etcd, which expires with its lease after the TTL, or at once on Release.
func (l *Leaser) MachineID(ctx context.Context) (int64, error) {
	if err := ctx.Err(); err != nil {
		return -1, fmt.Errorf("machineid_etcd: %w", err)
	}
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(l.ctx, cancel)()
	if err := l.lock(ctx); err != nil {
		return -1, l.callErr(parent, ctx, "waiting for the renewal in flight", 0, err)
	}
	defer l.unlock()
	l.mu.Lock()
	released, cur := l.released, l.lease
	l.mu.Unlock()
	switch {
	case released:
		return -1, ErrReleased
	case cur.Held:
		return cur.ID, nil
	}
	timeout := l.cfg.callTimeout
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d) // no lease is at stake yet: take the caller's time
	}
	if err := l.refresh(parent, ctx, timeout); err != nil {
		return -1, err
	}
	l.mu.Lock()
	id, start := l.lease.ID, !l.started && !l.released
	l.started = l.started || start
	released = l.released
	l.mu.Unlock()
	if released {
		return -1, ErrReleased // Release revokes what was just taken
	}
	if start {
		go l.run()
	}
	return id, nil
}

// Watch calls fn with the current lease before returning, and again after
// every change (acquired, renewed with a higher Until, lost, regained,
// released) until stop is called. Each change is delivered to every
// watcher in the order the changes happened, and deliveries do not
// overlap. fn must not block, and must not call the Leaser's methods or
// stop. Watch is safe for concurrent use.
func (l *Leaser) Watch(fn func(machineid.Lease)) (stop func()) {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	n := l.nextW
	l.nextW++
	l.watchers[n] = fn
	l.mu.Lock()
	cur := l.lease
	l.mu.Unlock()
	fn(cur)
	var once sync.Once
	return func() {
		once.Do(func() {
			l.wmu.Lock()
			delete(l.watchers, n)
			l.wmu.Unlock()
		})
	}
}

// Release stops renewing, reports the lease not held (with [ErrReleased])
// and gives the ID up: if the Leaser still owns the ID, its mark comes down
// to issued, the latest time the holder issued an ID with, but never below
// the mark this holder inherited (Lease.After), and the etcd lease is
// revoked, which frees the ID at once. The zero issued keeps the mark that
// renewals raised ahead of time, so the next holder waits until its clock
// passes it. Calls in flight are ended first. Release waits for its etcd
// calls at most the call timeout each; a Leaser that never tried to
// acquire does not contact etcd.
//
// Release acts once; later calls return the first one's error, which wraps
// etcd's error if a call failed (the ID is then free when its lease
// expires, and its mark stays where renewals put it). MachineID returns
// [ErrReleased] afterwards. Release is safe for concurrent use.
func (l *Leaser) Release(issued time.Time) error {
	l.releaseOnce.Do(func() {
		l.mu.Lock()
		l.released = true
		started := l.started
		l.mu.Unlock()
		// Watchers stop issuing before the mark comes down.
		l.set(func(le *machineid.Lease) { le.Held, le.Err = false, ErrReleased })
		l.cancel()
		if started {
			<-l.stopped
		}
		l.expiry.Stop()
		_ = l.lock(context.Background())
		defer l.unlock()
		l.releaseErr = l.giveUp(issued)
	})
	return l.releaseErr
}

// set changes the lease with change and delivers the result to every
// watcher if it differs in anything but Err. Holding wmu across the change
// and the delivery delivers every change, in order.
func (l *Leaser) set(change func(*machineid.Lease)) {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	l.mu.Lock()
	old := l.lease
	change(&l.lease)
	cur := l.lease
	l.mu.Unlock()
	if same(old, cur) {
		return
	}
	for _, fn := range l.watchers {
		fn(cur)
	}
}

// same reports whether two leases say the same, ignoring Err: errors need
// not be comparable, and a new cause alone is no change of state.
func same(a, b machineid.Lease) bool {
	return a.ID == b.ID && a.Held == b.Held && a.After.Equal(b.After) && a.Until.Equal(b.Until)
}

// lock takes the calls lock, or returns ctx's error if ctx ends first.
func (l *Leaser) lock(ctx context.Context) error {
	select {
	case l.calls <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (l *Leaser) unlock() { <-l.calls }

// callErr wraps the error of a call bounded by cctx, derived from parent:
// parent's end, Release ([ErrReleased]), or what [callFailed] says.
func (l *Leaser) callErr(parent, cctx context.Context, what string, timeout time.Duration, err error) error {
	switch {
	case parent.Err() != nil:
		return fmt.Errorf("machineid_etcd: %s: %w", what, parent.Err())
	case l.ctx.Err() != nil:
		return fmt.Errorf("%w (while %s)", ErrReleased, what)
	}
	return callFailed(cctx, what, timeout, err)
}

// callFailed wraps the error of a call bounded by cctx: its timeout, or
// etcd's own error.
func callFailed(cctx context.Context, what string, timeout time.Duration, err error) error {
	if cctx.Err() != nil {
		return fmt.Errorf("machineid_etcd: %s: etcd did not answer within %v: %w", what, timeout.Round(time.Millisecond), cctx.Err())
	}
	return fmt.Errorf("machineid_etcd: %s: etcd: %w", what, err)
}
