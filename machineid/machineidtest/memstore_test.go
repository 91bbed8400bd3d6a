package machineidtest_test

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/machineid"
)

// memStore is an in-memory machine-ID store, the reference that Run is
// tested against. Per ID it keeps a lease (its owner and, by the monotonic
// clock, when it expires) and a mark (the latest time, on the wall clock,
// that any holder may have issued). After a restart that drops its data,
// an acquisition takes every mark to be at least the restart's time plus
// the acquirer's TTL: the restart floor. A flaw makes it break one promise,
// so that the tests can show Run notices.
type memStore struct {
	keeps bool // Restart keeps leases and marks; written once by newMemStore
	flaw  flaw // written once by newMemStore

	mu        sync.Mutex // protects the fields below
	leases    map[int64]memLease
	marks     map[int64]time.Time
	restarted time.Time // when a restart dropped the data; zero if none did
	down      bool
}

type memLease struct {
	owner   *memLeaser
	expires time.Time // with a monotonic reading
}

// A flaw is a promise a memStore breaks.
type flaw string

const (
	sound      flaw = ""
	shares     flaw = "shares"      // grants an ID whoever holds it
	lowAfter   flaw = "low-after"   // reports an After a TTL below the mark
	silent     flaw = "silent"      // never reports a loss
	ignoresCtx flaw = "ignores-ctx" // MachineID ignores its context
	shrinks    flaw = "shrinks"     // acquisition gives two TTLs, renewals one
	noFloor    flaw = "no-floor"    // a restart that drops the data sets no floor
	noCause    flaw = "no-cause"    // reports a loss with Err nil
	lax        flaw = "lax"         // takes any range and TTL
	immortal   flaw = "immortal"    // leases never expire
	impatient  flaw = "impatient"   // MachineID fails at once on a full range
)

var (
	errDown     = errors.New("memstore: store is down")
	errCut      = errors.New("memstore: client is cut off")
	errFull     = fmt.Errorf("%w: memstore: every ID in the range is held", machineid.ErrExhausted)
	errGone     = errors.New("memstore: the lease is gone from the store")
	errReleased = errors.New("memstore: released")
)

func newMemStore(keeps bool, f flaw) *memStore {
	return &memStore{keeps: keeps, flaw: f, leases: map[int64]memLease{}, marks: map[int64]time.Time{}}
}

// newLeaser returns a Leaser of IDs lo..hi on leases of ttl, or an error
// wrapping ringflake.ErrInvalidConfig.
func (s *memStore) newLeaser(lo, hi int64, ttl time.Duration) (*memLeaser, error) {
	switch {
	case s.flaw == lax:
	case lo < 0 || lo > hi:
		return nil, fmt.Errorf("%w: memstore: range %d..%d; want 0 <= lo <= hi", ringflake.ErrInvalidConfig, lo, hi)
	case ttl <= 0 || ttl > time.Hour:
		return nil, fmt.Errorf("%w: memstore: TTL = %v; valid range above 0 up to 1h", ringflake.ErrInvalidConfig, ttl)
	}
	return newMemLeaser(s, lo, hi, ttl), nil
}

// acquire leases c the lowest free ID of its range, and returns it with the
// mark it inherits (after) and the one recorded for it (until).
func (s *memStore) acquire(c *memLeaser) (id int64, after, until time.Time, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		return -1, after, until, errDown
	}
	now := time.Now()
	for id := c.lo; id <= c.hi; id++ {
		if l, ok := s.leases[id]; ok && (now.Before(l.expires) || s.flaw == immortal) && s.flaw != shares {
			continue
		}
		after = s.marks[id]
		if floor := s.restarted.Add(c.ttl); !s.restarted.IsZero() && now.Before(floor) {
			after = later(after, floor)
		}
		ahead := c.ttl
		if s.flaw == shrinks {
			ahead = 2 * c.ttl
		}
		until = later(after, now.Round(0).Add(ahead))
		s.marks[id] = until
		s.leases[id] = memLease{owner: c, expires: now.Add(c.ttl)}
		if s.flaw == lowAfter && !after.IsZero() {
			after = after.Add(-c.ttl)
		}
		return id, after, until, nil
	}
	return -1, after, until, errFull
}

// renew extends c's lease of id by its TTL and raises the mark to match.
func (s *memStore) renew(c *memLeaser, id int64) (until time.Time, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	l, ok := s.leases[id]
	switch {
	case s.down:
		return until, errDown
	case !ok || l.owner != c || !now.Before(l.expires):
		return until, errGone
	}
	s.leases[id] = memLease{owner: c, expires: now.Add(c.ttl)}
	until = now.Round(0).Add(c.ttl)
	if s.flaw != shrinks {
		until = later(until, s.marks[id])
	}
	s.marks[id] = until
	return until, nil
}

// release ends c's lease of id, if it still holds it, and lowers the mark
// to issued, but not below after, the mark c inherited.
func (s *memStore) release(c *memLeaser, id int64, issued, after time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		return errDown
	}
	if l, ok := s.leases[id]; ok && l.owner == c {
		delete(s.leases, id)
		if !issued.IsZero() {
			s.marks[id] = later(issued, after)
		}
	}
	return nil
}

// restart takes the store down for a moment and, unless it keeps its data,
// drops every lease and mark and sets the restart floor.
func (s *memStore) restart() {
	s.mu.Lock()
	s.down = true
	s.mu.Unlock()
	time.Sleep(50 * time.Millisecond)
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.keeps {
		s.leases = map[int64]memLease{}
		s.marks = map[int64]time.Time{}
		if s.flaw != noFloor {
			s.restarted = time.Now()
		}
	}
	s.down = false
}

// later returns the later of a and b, without a monotonic reading: a mark
// is a time on the wall clock.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b.Round(0)
	}
	return a.Round(0)
}
