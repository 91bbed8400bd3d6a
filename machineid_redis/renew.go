package machineid_redis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/redis/go-redis/v9"
)

// acquire runs the mode's acquire script once, waiting at most timeout, and
// on success records the lease. The caller holds acqMu.
func (s *Service) acquire(ctx context.Context, timeout time.Duration) error {
	sent := time.Now() // before the call: the server's TTL starts later
	now, ttl := s.cfg.clock().UnixMilli(), s.cfg.ttl.Milliseconds()
	restart := ttl + s.cfg.skew.Milliseconds()
	s.mu.Lock()
	s.tried = true
	s.mu.Unlock()
	var (
		res []int64
		err error
	)
	if s.mode == modeHost {
		res, err = s.eval(ctx, timeout, hostAcquire, s.cfg.prefix, s.token, s.cfg.host, s.cfg.min, s.cfg.max, ttl, now, ttl, restart)
	} else {
		res, err = s.eval(ctx, timeout, leaseAcquire, s.cfg.prefix, s.token, s.cfg.min, s.cfg.max, ttl, now, ttl, restart)
	}
	if err != nil {
		return err
	}
	if err := s.refused(res); err != nil {
		return err
	}
	after := res[1]
	if up := res[3]; up >= 0 {
		// The script's restart floor counts from when the call was sent;
		// counted from now, when the answer is in, it cannot be too low
		// however late the script ran.
		after = max(after, s.cfg.clock().UnixMilli()-up+restart)
	}
	s.update(res[0], after, res[2], sent, true)
	return nil
}

// refused turns an acquire script's refusal into an error, or returns nil
// for a well-formed {id, after, mark, up}.
func (s *Service) refused(res []int64) error {
	if len(res) == 0 {
		return fmt.Errorf("machineid_redis: acquire script returned nothing")
	}
	code := res[0]
	arg := func(i int) int64 {
		if i < len(res) {
			return res[i]
		}
		return 0
	}
	rng := fmt.Sprintf("%d..%d", s.cfg.min, s.cfg.max)
	switch {
	case code >= 0 && len(res) == 4:
		return nil
	case code == -1 && s.mode == modeLease:
		return fmt.Errorf("%w: every ID in %s is leased (%d held, prefix %q)", ErrExhausted, rng, arg(1), s.cfg.prefix)
	case code == -1:
		return fmt.Errorf("%w: %sMAX_ID = %d, the end of %s, and host %q has no mapping; host mode never recycles IDs, lease mode does",
			ErrExhausted, s.cfg.prefix, arg(1), rng, s.cfg.host)
	case code == -2:
		return fmt.Errorf("%w: host %q maps to machine ID %d, leased by another process for %v more; run one process per host or use lease mode",
			ErrHostInUse, s.cfg.host, arg(1), time.Duration(arg(2))*time.Millisecond)
	case code == -3:
		return fmt.Errorf("%w: host %q maps to %d, outside %s", ErrBadMapping, s.cfg.host, arg(1), rng)
	case code == -4:
		return fmt.Errorf("%w: host %q maps to a value that is not a decimal ID (1-15 digits) in %sIP_MACHINE_ID_MAPPING", ErrBadMapping, s.cfg.host, s.cfg.prefix)
	case code == -5:
		return fmt.Errorf("%w: %sMAX_ID holds a value that is not a decimal ID (1-15 digits)", ErrBadMapping, s.cfg.prefix)
	}
	return fmt.Errorf("machineid_redis: acquire script returned %v", res)
}

// renewLease extends the held lease once. It returns errLost if Redis says
// the token no longer holds it. The caller holds acqMu.
func (s *Service) renewLease(ctx context.Context) error {
	s.mu.Lock()
	id := s.lease.ID
	s.mu.Unlock()
	sent := time.Now()
	now, ttl := s.cfg.clock().UnixMilli(), s.cfg.ttl.Milliseconds()
	res, err := s.eval(ctx, s.cfg.callTimeout, renew, s.cfg.prefix, s.token, id, ttl, now, ttl)
	switch {
	case err != nil:
		return err
	case len(res) == 2 && res[0] == 1:
		s.update(id, -1, res[1], sent, false)
		return nil
	}
	s.mu.Lock()
	changed := s.lease.Valid
	s.held, s.lease.Valid = false, false
	s.mu.Unlock()
	if changed {
		s.notify()
	}
	return errLost
}

// errLost reports a renewal that found the lease gone or someone else's.
var errLost = errors.New("machineid_redis: lease lost")

// update records a lease Redis confirmed for a call sent at sent: it is
// valid until sent + TTL - margin on the monotonic clock. after < 0 keeps
// the current After; fresh marks a new acquisition.
func (s *Service) update(id, after, mark int64, sent time.Time, fresh bool) {
	deadline := sent.Add(s.cfg.ttl - s.cfg.margin)
	s.mu.Lock()
	if s.closed {
		// Close is waiting for acqMu to release what this call took.
		s.lease.ID, s.held = id, true
		s.mu.Unlock()
		return
	}
	old := s.lease
	s.lease.ID, s.lease.Until = id, msTime(mark)
	if fresh {
		s.lease.After = msTime(after)
	}
	s.held, s.deadline = true, deadline
	left := time.Until(deadline)
	s.lease.Valid = left > 0
	if left > 0 {
		s.expiry.Reset(left)
	}
	changed := s.lease != old
	s.mu.Unlock()
	if changed {
		s.notify()
	}
}

// expire runs at the deadline: unless a renewal moved the deadline on, the
// lease can no longer be proven, because the server may expire the key
// from then on (less the margin), so watchers must stop issuing.
func (s *Service) expire() {
	s.mu.Lock()
	changed := false
	if s.lease.Valid {
		if left := time.Until(s.deadline); left > 0 {
			s.expiry.Reset(left)
		} else {
			s.lease.Valid, changed = false, true
		}
	}
	s.mu.Unlock()
	if changed {
		s.notify()
	}
}

// run renews the lease every TTL/3 until Close, and re-acquires one when it
// is lost. After a failed call it tries again sooner, every TTL/10.
func (s *Service) run() {
	defer close(s.stopped)
	every, retry := s.cfg.ttl/3, max(s.cfg.ttl/10, 5*time.Millisecond)
	t := time.NewTimer(every)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		next := every
		if s.refresh() != nil {
			next = retry
		}
		t.Reset(next)
	}
}

// refresh renews the lease, or acquires one if none is held.
func (s *Service) refresh() error {
	s.acqMu.Lock()
	defer s.acqMu.Unlock()
	s.mu.Lock()
	held := s.held
	s.mu.Unlock()
	if held {
		err := s.renewLease(s.ctx)
		if !errors.Is(err, errLost) {
			return err
		}
	}
	return s.acquire(s.ctx, s.cfg.callTimeout)
}

// eval runs a script with the service's keys, waiting at most timeout
// whatever the client's settings: go-redis ignores ctx deadlines
// unless ContextTimeoutEnabled is set, so the call runs in its own
// goroutine, which finishes when the client gives up. Its late answer is
// dropped; the scripts are idempotent, so the next call finds its effect.
func (s *Service) eval(ctx context.Context, timeout time.Duration, sc *redis.Script, args ...any) ([]int64, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	type result struct {
		v   []int64
		err error
	}
	ch := make(chan result, 1)
	s.inflight.add()
	go func() {
		defer s.inflight.done()
		v, err := sc.Run(ctx, s.client, s.keys, args...).Int64Slice()
		ch <- result{v, err}
	}()
	select {
	case r := <-ch:
		switch {
		case r.err == nil:
			return r.v, nil
		case ctx.Err() != nil: // the client noticed the context first
			return nil, s.ctxErr(ctx, timeout)
		}
		var ne net.Error
		if errors.As(r.err, &ne) && ne.Timeout() {
			// The client's own read or dial timeout came first.
			return nil, fmt.Errorf("%w: %w", ErrTimeout, r.err)
		}
		return nil, fmt.Errorf("machineid_redis: redis: %w", r.err)
	case <-ctx.Done():
		return nil, s.ctxErr(ctx, timeout)
	}
}

// ctxErr explains why a call's context ended: Close ([ErrClosed]), the
// timeout ([ErrTimeout]) or the caller's own cancellation.
func (s *Service) ctxErr(ctx context.Context, timeout time.Duration) error {
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("%w after %v: %w", ErrTimeout, timeout.Round(time.Millisecond), ctx.Err())
	case s.ctx.Err() != nil:
		return ErrClosed
	}
	return fmt.Errorf("machineid_redis: %w", ctx.Err())
}

// msTime converts a mark in ms since the Unix epoch to a time; 0 or less
// means no mark, the zero Time.
func msTime(ms int64) time.Time {
	if ms <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}
