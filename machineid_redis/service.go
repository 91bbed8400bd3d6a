package machineid_redis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ringflake/ringflake/machineid"
)

// mode says how a Service picks its machine ID.
type mode uint8

const (
	modeLease mode = iota // the lowest free ID in the range
	modeHost              // the host's ID from the seed's mapping
)

// Service hands out machine IDs held on Redis leases. It implements
// [machineid.Leaser]: give it to ringflake.WithMachineIDService and the
// generator follows the lease and releases it on Close. Make one with
// [NewLeased] or [NewHostMapped]; one Service serves one generator.
//
// After the first successful MachineID, a background goroutine renews the
// lease every TTL/3 and, when the lease is lost, acquires one again
// (possibly a different ID in lease mode) until Close.
//
// All methods are safe for concurrent use.
type Service struct {
	client redis.UniversalClient // written once by newService
	cfg    config                // written once by newService
	mode   mode                  // written once by newService
	token  string                // random owner token, written once by newService
	keys   []string              // the script's KEYS, written once by newService

	ctx    context.Context    // done when Close starts; ends in-flight calls
	cancel context.CancelFunc // cancels ctx

	// acqMu serializes the calls that change the lease in Redis
	// (acquire, renew, release), so a token never has two in flight.
	acqMu sync.Mutex

	mu       sync.Mutex      // protects the fields below
	lease    machineid.Lease // what watchers see; ID -1 before the first lease
	held     bool            // the last answer from Redis said the token holds lease.ID
	deadline time.Time       // with a monotonic reading: lease.Valid ends here
	started  bool            // the renewer is running
	tried    bool            // an acquire call was made, so there may be a lease to release
	closed   bool

	wmu      sync.Mutex // serializes deliveries to watchers; protects watchers and nextW
	watchers map[int]func(machineid.Lease)
	nextW    int

	inflight  calls         // Redis calls still running, even if eval gave up on them
	expiry    *time.Timer   // calls expire at the deadline; written once by newService
	stopped   chan struct{} // closed when the renewer returns
	closeOnce sync.Once
	closeErr  error // written inside closeOnce
}

var _ machineid.IssuedCloser = (*Service)(nil)

// NewLeased returns a Service in lease mode, the recommended one: each
// process takes the lowest free machine ID in the range, holds it with a
// random owner token and a TTL, and releases it on Close. It returns an
// error wrapping [ErrInvalidConfig] if an option is out of range or the
// prefix lacks a hash tag on a multi-node client. It does not contact
// Redis; the first MachineID does.
func NewLeased(client redis.UniversalClient, opts ...Option) (*Service, error) {
	return newService(client, modeLease, opts)
}

// NewHostMapped returns a Service in host mode, compatible with the seed's
// keys and data: the host's ID is looked up in <prefix>IP_MACHINE_ID_MAPPING
// and, if absent, the one after <prefix>MAX_ID is handed out, in one atomic
// script that never goes past the range. The ID is then leased like in
// lease mode, so a second live process on the same host is refused with
// [ErrHostInUse] instead of sharing the ID. IDs are never recycled, so
// host churn can exhaust the range ([ErrExhausted]). It returns the errors
// of [NewLeased], and one wrapping [ErrInvalidConfig] if no host name was
// given and the host has no private IPv4 address.
func NewHostMapped(client redis.UniversalClient, opts ...Option) (*Service, error) {
	return newService(client, modeHost, opts)
}

func newService(client redis.UniversalClient, m mode, opts []Option) (*Service, error) {
	c := config{prefix: DefaultPrefix, min: 0, max: 1023, ttl: DefaultTTL, clock: time.Now}
	if m == modeHost {
		c.min = 1 // the seed's IDs start at 1
	}
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	if err := c.validate(client); err != nil {
		return nil, err
	}
	if m == modeHost && c.host == "" {
		h, err := defaultHost()
		if err != nil {
			return nil, err
		}
		c.host = h
	}
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	s := &Service{
		client:   client,
		cfg:      c,
		mode:     m,
		token:    hex.EncodeToString(b[:]),
		keys:     []string{c.prefix + "MARKS"},
		lease:    machineid.Lease{ID: -1},
		watchers: make(map[int]func(machineid.Lease)),
		stopped:  make(chan struct{}),
	}
	if m == modeHost {
		s.keys = append(s.keys, c.prefix+"IP_MACHINE_ID_MAPPING", c.prefix+"MAX_ID")
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.expiry = time.AfterFunc(time.Hour, s.expire)
	s.expiry.Stop()
	return s, nil
}

// settle waits, at most the call timeout, for calls that eval gave up on
// when Close began, so that a lease one of them took is in Redis, under
// this token, before the release looks for it. The caller holds acqMu, so
// no call starts meanwhile.
func (s *Service) settle() {
	t := time.NewTimer(s.cfg.callTimeout)
	defer t.Stop()
	select {
	case <-s.inflight.idle():
	case <-t.C:
	}
}

// calls counts Redis calls in flight. Unlike a sync.WaitGroup, it can be
// waited on with a timeout, and counting up again while a timed-out waiter
// has gone is fine: settle gives up on stuck calls, and the release that
// follows is a call too. The zero value is ready to use.
type calls struct {
	mu     sync.Mutex
	n      int
	idleCh chan struct{} // closed when n drops to 0; replaced when n leaves 0
}

func (c *calls) add() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == 0 {
		c.idleCh = make(chan struct{})
	}
	c.n++
}

func (c *calls) done() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n--
	if c.n == 0 {
		close(c.idleCh)
	}
}

// idle returns a channel that is closed once no call is in flight.
func (c *calls) idle() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == 0 {
		return closedCh
	}
	return c.idleCh
}

var closedCh = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// defaultHost is the host mode's name for this host: its first private
// IPv4 address, as the seed's mapping uses, or else its hostname.
func defaultHost() (string, error) {
	if ip, err := machineid.PrivateIPv4(); err == nil {
		return ip.String(), nil
	}
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "", fmt.Errorf("%w: no host name given, no private IPv4 address and no hostname (%v)", ErrInvalidConfig, err)
	}
	return h, nil
}

// MachineID returns the leased machine ID, acquiring a lease first if the
// service holds none, and then starts renewing it in the background. It
// makes at most one acquire call, bounded by ctx's deadline if it has one,
// else by the call timeout. It
// returns an error wrapping [ErrExhausted], [ErrHostInUse],
// [ErrBadMapping], [ErrTimeout], [ErrClosed], or the client's error.
func (s *Service) MachineID(ctx context.Context) (int64, error) {
	s.acqMu.Lock()
	defer s.acqMu.Unlock()
	s.mu.Lock()
	closed, l := s.closed, s.lease
	s.mu.Unlock()
	switch {
	case closed:
		return -1, ErrClosed
	case l.Valid:
		return l.ID, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(s.ctx, cancel)()
	// The first acquisition has no lease at stake, so a caller's longer
	// deadline (the generator's acquire timeout) may replace the call timeout.
	timeout := s.cfg.callTimeout
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
	}
	if err := s.acquire(ctx, timeout); err != nil {
		return -1, err
	}
	s.mu.Lock()
	id, closed, start := s.lease.ID, s.closed, !s.started
	s.started = s.started || !closed
	s.mu.Unlock()
	if closed {
		return -1, ErrClosed // Close releases what was just taken
	}
	if start {
		go s.run()
	}
	return id, nil
}

// Lease returns the current lease: the one watchers were last told about,
// or about to be. Its ID is -1 before the first acquisition.
func (s *Service) Lease() machineid.Lease {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lease
}

// Range returns the machine IDs the service may hand out, as set by
// [WithRange]. It implements [machineid.Ranger], so a generator whose
// layout has fewer machine IDs refuses the service when it is made, not
// after a later re-acquisition takes an ID it cannot use.
func (s *Service) Range() (lo, hi int64) { return s.cfg.min, s.cfg.max }

// Token returns the random owner token that this service's leases carry in
// Redis, for matching a lease key to its process when debugging.
func (s *Service) Token() string { return s.token }

// Close stops renewing, releases the lease in Redis and reports an invalid
// lease to watchers. The ID's high-water mark stays, so its next holder
// does not reuse ticks this one may have issued. Close waits for calls in
// flight to end, then for the release, each at most the call timeout; a
// Service that never tried to acquire does not contact Redis. Every call
// returns the release's error, if any. Watchers must not call Close from
// their callback.
func (s *Service) Close() error { return s.close(-1) }

// CloseIssued is Close for a holder that issued no ID with a time later
// than issued (the zero Time: none). The ID's mark, raised ahead of time by
// renewals, comes down to issued, but never below the mark this service
// inherited, so the ID's next holder can start at once instead of waiting
// out a mark nobody used. A generator made with
// ringflake.WithMachineIDService calls it from its own Close. Like Close,
// it acts once; later calls of either return the first one's error.
func (s *Service) CloseIssued(issued time.Time) error {
	ms := int64(0)
	if !issued.IsZero() {
		ms = (issued.UnixNano() + int64(time.Millisecond) - 1) / int64(time.Millisecond) // round up
	}
	return s.close(max(ms, 0))
}

// close releases the lease; issuedMs >= 0 lowers the mark to it (see the
// release script), -1 keeps the mark.
func (s *Service) close(issuedMs int64) error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.lease.Valid = false
		started := s.started
		s.mu.Unlock()
		s.cancel()
		if started {
			<-s.stopped
		}
		s.expiry.Stop()
		s.acqMu.Lock() // no call starts after this: MachineID sees closed
		s.settle()
		s.mu.Lock()
		id := s.lease.ID
		if issuedMs >= 0 && !s.lease.After.IsZero() {
			// Never below the After this holder was given: it may be
			// above the one the script stored (see acquire).
			issuedMs = max(issuedMs, s.lease.After.UnixMilli())
		}
		s.held = false
		tried := s.tried
		s.mu.Unlock()
		if tried {
			if _, err := s.eval(context.Background(), s.cfg.callTimeout, release, s.cfg.prefix, s.token, id, issuedMs); err != nil {
				what := fmt.Sprintf("machine ID %d", id)
				if id < 0 {
					what = "whatever an unanswered acquire call took"
				}
				s.closeErr = fmt.Errorf("machineid_redis: releasing %s: %w", what, err)
			}
		}
		s.acqMu.Unlock()
		s.notify()
	})
	return s.closeErr
}
