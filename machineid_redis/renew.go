package machineid_redis

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// acquire runs the mode's acquire script once, waiting at most timeout, and
// on success records the lease. The caller holds acqMu.
func (s *Service) acquire(ctx context.Context, timeout time.Duration) error {
	sent := time.Now() // before the call: the server's TTL starts later
	now, ttl := s.cfg.clock().UnixMilli(), s.cfg.ttl.Milliseconds()
	restart, slack := ttl+s.cfg.skew.Milliseconds(), s.slack().Milliseconds()
	s.mu.Lock()
	s.tried = true
	s.mu.Unlock()
	var (
		res []int64
		err error
	)
	if s.cfg.hostMode {
		res, err = s.eval(ctx, timeout, hostAcquire, s.cfg.prefix, s.token, s.cfg.host, s.cfg.min, s.cfg.max, ttl, now, ttl, restart, slack)
	} else {
		res, err = s.eval(ctx, timeout, leaseAcquire, s.cfg.prefix, s.token, s.cfg.min, s.cfg.max, ttl, now, ttl, restart, slack)
	}
	if err != nil {
		return err
	}
	if err := s.refused(res, now); err != nil {
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
// for a well-formed {id, after, mark, up}. now is the clock reading the
// call was sent with.
func (s *Service) refused(res []int64, now int64) error {
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
	case code == -1 && !s.cfg.hostMode:
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
	case code == -6:
		return s.clockAhead(now, arg(1))
	}
	return fmt.Errorf("machineid_redis: acquire script returned %v", res)
}

// clockAhead explains a script's refusal of a clock reading, now, that is
// more than the slack ahead of the server's time, srv (both in ms).
func (s *Service) clockAhead(now, srv int64) error {
	return fmt.Errorf("machineid_redis: this process's clock is %v ahead of the Redis server's; at most %v (safety margin %v + max clock skew %v) is allowed, so that no mark is set more than the TTL and that past the server's time",
		time.Duration(now-srv)*time.Millisecond, s.slack(), s.cfg.margin, s.cfg.skew)
}

// renewLease extends the held lease once. It returns errLost if Redis says
// the token no longer holds it. The caller holds acqMu.
func (s *Service) renewLease(ctx context.Context) error {
	s.mu.Lock()
	id := s.lease.ID
	s.mu.Unlock()
	sent := time.Now()
	now, ttl := s.cfg.clock().UnixMilli(), s.cfg.ttl.Milliseconds()
	res, err := s.eval(ctx, s.cfg.callTimeout, renew, s.cfg.prefix, s.token, id, ttl, now, ttl, s.slack().Milliseconds())
	switch {
	case err != nil:
		return err
	case len(res) == 2 && res[0] == 1:
		s.update(id, -1, res[1], sent, false)
		return nil
	case len(res) == 2 && res[0] == -2:
		return s.clockAhead(now, res[1])
	case len(res) == 1 && res[0] == -1:
		s.lost(taken)
	default:
		s.lost(gone)
	}
	return errLost
}

// errLost reports a renewal that found the lease gone or someone else's.
var errLost = errors.New("machineid_redis: lease lost")

// run renews the lease every TTL/3 until Release, and acquires one again
// when it is lost. After a failed call it tries again sooner, every TTL/10.
func (s *Service) run() {
	defer close(s.stopped)
	every, retry := s.cfg.ttl/3, s.cfg.ttl/10
	t := time.NewTimer(every)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		next := every
		if err := s.refresh(); err != nil {
			s.failed(err)
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
