package machineidtest_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringflake/ringflake/machineid"
)

// memLeaser holds an ID of a memStore on a lease, through a client of its
// own, in the manner of machineid_redis: it renews every TTL/3, vouches for
// the lease until the send time of its last confirmed call plus the TTL
// less a margin of TTL/5, and takes a lease again when it has lost one. It
// is safe for concurrent use.
type memLeaser struct {
	store  *memStore     // written once by newMemLeaser
	lo, hi int64         // written once by newMemLeaser
	ttl    time.Duration // written once by newMemLeaser
	cut    atomic.Bool   // set by Abandon: the client no longer reaches the store

	callMu sync.Mutex // serializes the calls that change the lease in the store

	mu       sync.Mutex      // protects the fields below
	lease    machineid.Lease // what watchers see
	owns     bool            // the store's last answer said the lease is ours
	deadline time.Time       // with a monotonic reading: the lease is vouched for until then
	lastErr  error           // the latest failed call's error
	running  bool            // the renewer was started
	closed   bool            // the renewer was stopped, or must not start

	expiry      *time.Timer   // fires at the deadline; written once by newMemLeaser
	quit        chan struct{} // closed by stop
	stopped     chan struct{} // closed when the renewer returns
	stopOnce    sync.Once
	releaseOnce sync.Once
	releaseErr  error // written inside releaseOnce

	wmu      sync.Mutex // serializes deliveries to watchers; protects watchers and nextW
	watchers map[int]func(machineid.Lease)
	nextW    int
}

var _ machineid.Leaser = (*memLeaser)(nil)

func newMemLeaser(s *memStore, lo, hi int64, ttl time.Duration) *memLeaser {
	l := &memLeaser{
		store: s, lo: lo, hi: hi, ttl: ttl,
		lease:    machineid.Lease{ID: -1},
		quit:     make(chan struct{}),
		stopped:  make(chan struct{}),
		watchers: map[int]func(machineid.Lease){},
	}
	l.expiry = time.AfterFunc(time.Hour, l.expire)
	l.expiry.Stop()
	return l
}

// MachineID returns the leased ID, taking a lease first if it holds none,
// and starts renewing.
func (l *memLeaser) MachineID(ctx context.Context) (int64, error) {
	if err := ctx.Err(); err != nil && l.store.flaw != ignoresCtx {
		return -1, fmt.Errorf("memstore: %w", err)
	}
	l.callMu.Lock()
	defer l.callMu.Unlock()
	l.mu.Lock()
	closed, lease := l.closed, l.lease
	l.mu.Unlock()
	switch {
	case closed:
		return -1, errReleased
	case lease.Held:
		return lease.ID, nil
	}
	if err := l.await(ctx); err != nil {
		return -1, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.running && !l.closed {
		l.running = true
		go l.run()
	}
	return l.lease.ID, nil
}

// await takes a lease, trying again every TTL/10 while every ID is held,
// until ctx's deadline. The caller holds callMu.
func (l *memLeaser) await(ctx context.Context) error {
	start := time.Now()
	for {
		err := l.acquire()
		d, ok := ctx.Deadline()
		if !errors.Is(err, errFull) || l.store.flaw == impatient || !ok || time.Until(d) < l.ttl/10 {
			if errors.Is(err, errFull) {
				err = fmt.Errorf("%w; waited %v", err, time.Since(start).Round(time.Millisecond))
			}
			return err
		}
		select {
		case <-time.After(l.ttl / 10):
		case <-l.quit:
			return errReleased
		}
	}
}

// acquire takes a lease. The caller holds callMu.
func (l *memLeaser) acquire() error {
	sent := time.Now()
	var (
		id           int64
		after, until time.Time
	)
	err := l.do(func() (err error) {
		id, after, until, err = l.store.acquire(l)
		return err
	})
	if err != nil {
		return fmt.Errorf("memstore: acquiring an ID in %d..%d: %w", l.lo, l.hi, err)
	}
	l.mu.Lock()
	l.owns = true
	l.lease = machineid.Lease{ID: id, Held: true, After: after, Until: until}
	l.vouch(sent)
	l.mu.Unlock()
	l.notify()
	return nil
}

// do makes a store call through the client, which fails once cut off, and
// records its error.
func (l *memLeaser) do(call func() error) error {
	err := errCut
	if !l.cut.Load() {
		err = call()
	}
	if err != nil {
		l.mu.Lock()
		l.lastErr = err
		l.mu.Unlock()
	}
	return err
}

// vouch moves the deadline on after a call sent at sent was confirmed: the
// store's lease lasts at least the TTL from then. The caller holds mu.
func (l *memLeaser) vouch(sent time.Time) {
	l.deadline = sent.Add(l.ttl - l.ttl/5)
	l.expiry.Reset(time.Until(l.deadline))
}

// renew extends the lease of id. The caller holds callMu.
func (l *memLeaser) renew(id int64) error {
	sent := time.Now()
	var until time.Time
	err := l.do(func() (err error) {
		until, err = l.store.renew(l, id)
		return err
	})
	l.mu.Lock()
	switch {
	case errors.Is(err, errGone):
		l.owns = false
		if l.store.flaw != silent {
			l.lease.Held, l.lease.Err = false, fmt.Errorf("memstore: renewing ID %d: %w", id, err)
		}
	case err == nil:
		l.lease.Held, l.lease.Until, l.lease.Err = true, until, nil
		l.vouch(sent)
	}
	l.mu.Unlock()
	if err == nil || errors.Is(err, errGone) {
		l.notify()
	}
	return err
}

// expire runs at the deadline: unless a renewal moved it on, the store may
// expire the lease from now on, so the holder stops vouching for it.
func (l *memLeaser) expire() {
	l.mu.Lock()
	lost := l.lease.Held && !time.Now().Before(l.deadline) && l.store.flaw != silent
	if lost {
		cause := l.lastErr
		if cause == nil {
			cause = errors.New("no answer")
		}
		l.lease.Held = false
		l.lease.Err = fmt.Errorf("memstore: no renewal of ID %d confirmed in time: %w", l.lease.ID, cause)
		if l.store.flaw == noCause {
			l.lease.Err = nil
		}
	} else if l.lease.Held {
		l.expiry.Reset(time.Until(l.deadline))
	}
	l.mu.Unlock()
	if lost {
		l.notify()
	}
}

// run renews every TTL/3 until stopped, and takes a lease again when it
// has lost one; after a failed call it tries again sooner, every TTL/10.
func (l *memLeaser) run() {
	defer close(l.stopped)
	t := time.NewTimer(l.ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-l.quit:
			return
		case <-t.C:
		}
		next := l.ttl / 3
		if l.refresh() != nil {
			next = l.ttl / 10
		}
		t.Reset(next)
	}
}

// refresh renews the lease, or takes one if none is held.
func (l *memLeaser) refresh() error {
	l.callMu.Lock()
	defer l.callMu.Unlock()
	l.mu.Lock()
	owns, id := l.owns, l.lease.ID
	l.mu.Unlock()
	if owns {
		if err := l.renew(id); !errors.Is(err, errGone) {
			return err
		}
	}
	return l.acquire()
}

// Release stops renewing and gives the lease up, lowering its mark to
// issued. Later calls return the first one's error.
func (l *memLeaser) Release(issued time.Time) error {
	l.releaseOnce.Do(func() {
		l.stop()
		l.callMu.Lock()
		defer l.callMu.Unlock()
		l.mu.Lock()
		owns, id, after := l.owns, l.lease.ID, l.lease.After
		l.mu.Unlock()
		if owns {
			err := l.do(func() error { return l.store.release(l, id, issued, after) })
			if err != nil {
				l.releaseErr = fmt.Errorf("memstore: releasing ID %d: %w", id, err)
			}
		}
		l.mu.Lock()
		l.owns = false
		l.lease.Held, l.lease.Err = false, errReleased
		l.mu.Unlock()
		l.notify()
	})
	return l.releaseErr
}

// stop stops the renewer and the deadline's timer, releasing nothing. The
// harness calls it when a test ends, for a Leaser it abandoned.
func (l *memLeaser) stop() {
	l.stopOnce.Do(func() {
		l.mu.Lock()
		l.closed = true
		running := l.running
		l.mu.Unlock()
		close(l.quit)
		if running {
			<-l.stopped
		}
		l.expiry.Stop()
	})
}

// Watch calls fn with the current lease, and after every change until
// stop is called.
func (l *memLeaser) Watch(fn func(machineid.Lease)) (stop func()) {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	n := l.nextW
	l.nextW++
	l.watchers[n] = fn
	fn(l.current())
	return func() {
		l.wmu.Lock()
		defer l.wmu.Unlock()
		delete(l.watchers, n)
	}
}

func (l *memLeaser) current() machineid.Lease {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lease
}

// notify tells every watcher the lease as it is now.
func (l *memLeaser) notify() {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	lease := l.current()
	for _, fn := range l.watchers {
		fn(lease)
	}
}
