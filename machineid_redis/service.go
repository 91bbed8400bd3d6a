package machineid_redis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ringflake/ringflake/machineid"
)

// Service hands out machine IDs held on Redis leases. It implements
// [machineid.Leaser]: give it to ringflake.WithMachineIDSource and the
// generator follows the lease, waits out the mark it inherited, and
// releases it on Close. Make one with [New]; one Service serves one
// generator, once: after Release it hands out nothing.
//
// After the first successful MachineID, a background goroutine renews the
// lease every TTL/3 and, when the lease is lost, acquires one again
// (possibly a different ID in lease mode) until Release.
//
// All methods are safe for concurrent use.
type Service struct {
	client redis.UniversalClient // written once by New
	cfg    config                // written once by New
	token  string                // random owner token, written once by New
	keys   []string              // the scripts' KEYS, written once by New

	ctx    context.Context    // done when Release starts; ends in-flight calls
	cancel context.CancelFunc // cancels ctx

	// acqMu serializes the calls that change the lease in Redis
	// (acquire, renew, release), so a token never has two in flight.
	acqMu sync.Mutex

	mu       sync.Mutex      // protects the fields below
	lease    machineid.Lease // what watchers see; ID -1 before the first lease
	held     bool            // the last answer from Redis said the token holds lease.ID
	deadline time.Time       // with a monotonic reading: lease.Held ends here
	loss     loss            // why the lease was lost, while it is
	lastErr  error           // the latest failed call since the last that succeeded
	lastOK   time.Time       // when the last call that succeeded was sent
	started  bool            // the renewer is running
	tried    bool            // an acquire call was made, so there may be a lease to release
	released bool

	wmu      sync.Mutex // serializes deliveries to watchers; protects watchers and nextW
	watchers map[int]func(machineid.Lease)
	nextW    int

	inflight    calls         // Redis calls still running, even if eval gave up on them
	expiry      *time.Timer   // the lease lapses at the deadline; written once by New
	stopped     chan struct{} // closed when the renewer returns
	releaseOnce sync.Once
	releaseErr  error // written inside releaseOnce
}

var _ machineid.Leaser = (*Service)(nil)

// New returns a Service that leases machine IDs from Redis through client:
// in lease mode, the default and the recommended one, each process takes
// the lowest free machine ID in the range and holds it with a random owner
// token and a TTL; [WithHostMapping] selects host mode instead. New does
// not contact Redis; the first MachineID does.
//
// New returns an error wrapping ringflake.ErrInvalidConfig, naming the
// value and the valid range, if client is nil, an option is out of range,
// the prefix lacks a hash tag on a multi-node client, or host mode was
// asked for without a host name and this host has neither a private IPv4
// address nor a hostname.
func New(client redis.UniversalClient, opts ...Option) (*Service, error) {
	var c config
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	if err := c.validate(client); err != nil {
		return nil, err
	}
	if c.hostMode && c.host == "" {
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
		token:    hex.EncodeToString(b[:]),
		keys:     []string{c.prefix + "MARKS"},
		lease:    machineid.Lease{ID: -1},
		watchers: make(map[int]func(machineid.Lease)),
		stopped:  make(chan struct{}),
	}
	if c.hostMode {
		s.keys = append(s.keys, c.prefix+"IP_MACHINE_ID_MAPPING", c.prefix+"MAX_ID")
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.expiry = time.AfterFunc(time.Hour, s.expire)
	s.expiry.Stop()
	return s, nil
}

// defaultHost is the host mode's name for this host: its first private
// IPv4 address, as host mappings use, or else its hostname.
func defaultHost() (string, error) {
	if n, err := machineid.PrivateIP(1<<32 - 1).MachineID(context.Background()); err == nil {
		return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}).String(), nil
	}
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "", configErr("host mode without a host name, and this host has no private IPv4 address and no hostname (%v)", err)
	}
	return h, nil
}

// MachineID returns the leased machine ID, acquiring a lease first if the
// service holds none, and then starts renewing it in the background. It
// makes at most one acquire call, bounded by ctx's deadline if it has one,
// else by the call timeout. It returns an error wrapping [ErrExhausted],
// [ErrHostInUse], [ErrBadMapping], [ErrTimeout] or the client's error;
// one that says this process's clock is too far ahead of the server's
// (see [WithMaxClockSkew]); or, after Release, one wrapping
// ringflake.ErrClosed.
func (s *Service) MachineID(ctx context.Context) (int64, error) {
	s.acqMu.Lock()
	defer s.acqMu.Unlock()
	s.mu.Lock()
	released, l := s.released, s.lease
	s.mu.Unlock()
	switch {
	case released:
		return -1, errReleased
	case l.Held:
		return l.ID, nil
	case ctx.Err() != nil:
		return -1, fmt.Errorf("machineid_redis: no machine ID taken: %w", ctx.Err())
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
		s.failed(err)
		return -1, err
	}
	s.mu.Lock()
	id, released, start := s.lease.ID, s.released, !s.started
	s.started = s.started || !released
	s.mu.Unlock()
	if released {
		return -1, errReleased // Release frees what was just taken
	}
	if start {
		go s.run()
	}
	return id, nil
}

// Release stops renewing, gives the lease up in Redis and reports a lease
// that is not held to watchers, with an Err wrapping ringflake.ErrClosed.
// issued is the latest time the holder issued an ID with: the ID's mark,
// raised up to a TTL ahead by renewals, comes down to it, so the ID's next
// holder need not wait out a mark nobody used; but never below the mark
// this Service inherited. The zero Time means unknown and keeps the mark.
// A generator made with ringflake.WithMachineIDSource calls Release from
// its own Close.
//
// Release waits for calls in flight to end, then for the release call,
// each at most the call timeout; a Service that never tried to acquire
// does not contact Redis. It acts once: later calls return the first
// one's error, which is the release call's, if any. Watchers must not call
// Release from their callback.
func (s *Service) Release(issued time.Time) error {
	s.releaseOnce.Do(func() { s.releaseErr = s.release(issued) })
	return s.releaseErr
}

func (s *Service) release(issued time.Time) error {
	s.change(func() { s.released, s.lease.Held = true, false })
	s.mu.Lock()
	started := s.started
	s.mu.Unlock()
	s.cancel()
	if started {
		<-s.stopped
	}
	s.expiry.Stop()
	s.acqMu.Lock() // no call starts after this: MachineID sees released
	defer s.acqMu.Unlock()
	s.settle()
	s.mu.Lock()
	id, after, tried := s.lease.ID, s.lease.After, s.tried
	s.held = false
	s.mu.Unlock()
	if !tried {
		return nil
	}
	issuedMs := int64(-1) // keep the mark
	if !issued.IsZero() {
		issuedMs = max(ceilMs(issued), 0)
		if !after.IsZero() {
			// Never below the After this holder was given: it may be
			// above the one the script stored (see acquire).
			issuedMs = max(issuedMs, after.UnixMilli())
		}
	}
	_, err := s.eval(context.Background(), s.cfg.callTimeout, release,
		s.cfg.prefix, s.token, id, issuedMs, s.cfg.ttl.Milliseconds(), s.slack().Milliseconds())
	if err != nil {
		what := fmt.Sprintf("machine ID %d", id)
		if id < 0 {
			what = "whatever an unanswered acquire call took"
		}
		return fmt.Errorf("machineid_redis: releasing %s: %w", what, err)
	}
	return nil
}

// ceilMs returns t in ms since the Unix epoch, rounded up, so that a mark
// made from it covers every instant up to t.
func ceilMs(t time.Time) int64 {
	ms := t.UnixMilli()
	if t.After(time.UnixMilli(ms)) {
		ms++
	}
	return ms
}

// slack is how far this process's clock may read ahead of the server's:
// the safety margin plus the allowed skew. No mark is set further than the
// TTL plus slack past the server's time.
func (s *Service) slack() time.Duration { return s.cfg.margin + s.cfg.skew }

// settle waits, at most the call timeout, for calls that eval gave up on
// when Release began, so that a lease one of them took is in Redis, under
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
