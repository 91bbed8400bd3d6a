package machineid_redis

import (
	"errors"
	"fmt"
	"time"

	"github.com/ringflake/ringflake/machineid"
)

// loss says why a lease that was held is not any more.
type loss uint8

const (
	notLost loss = iota
	lapsed       // the deadline passed without a confirmed renewal
	taken        // a renewal found another owner's token on the ID
	gone         // a renewal found no lease on the ID
)

// current returns the lease as watchers see it.
func (s *Service) current() machineid.Lease {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lease
}

// change applies fn to the state under mu, works out the lease's Err again,
// and tells watchers if what they see changed.
func (s *Service) change(fn func()) {
	s.mu.Lock()
	old := s.lease
	fn()
	s.lease.Err = s.reason()
	changed := !sameLease(old, s.lease)
	s.mu.Unlock()
	if changed {
		s.notify()
	}
}

// reason returns why the lease is not held, for Lease.Err: the release,
// the loss with the latest failed call's error, or, before the first
// lease, that error alone. The caller holds mu.
func (s *Service) reason() error {
	if s.released {
		return errReleased
	}
	if s.lease.Held {
		return nil
	}
	var what string
	switch s.loss {
	case notLost:
		return s.lastErr
	case lapsed:
		if s.lastErr == nil {
			return fmt.Errorf("machineid_redis: lease on machine ID %d expired before a renewal answered (it is vouched for TTL − safety margin = %v after each)",
				s.lease.ID, s.cfg.ttl-s.cfg.margin)
		}
		return fmt.Errorf("machineid_redis: lease on machine ID %d expired, as no renewal succeeded: %w", s.lease.ID, s.lastErr)
	case taken:
		what = "was taken by another owner"
	case gone:
		what = "is gone from Redis (expired on the server, or deleted)"
	}
	if s.lastErr == nil {
		return fmt.Errorf("machineid_redis: lease on machine ID %d %s", s.lease.ID, what)
	}
	return fmt.Errorf("machineid_redis: lease on machine ID %d %s; acquiring again: %w", s.lease.ID, what, s.lastErr)
}

// sameLease reports whether a watcher would see no change from a to b.
// Errors compare by message: a retry that fails the same way is no news,
// and not every error value is comparable with ==.
func sameLease(a, b machineid.Lease) bool {
	return a.ID == b.ID && a.Held == b.Held && a.After.Equal(b.After) && a.Until.Equal(b.Until) &&
		errText(a.Err) == errText(b.Err)
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// failed records a call's failure: while the lease is not held, it is
// part of the lease's Err; while it is, it becomes part of the Err if the
// lease lapses before a call succeeds. A timeout with no cause does not
// replace an error already recorded since the last success: in one outage
// the calls time out again and again, and the earlier error, such as a
// late one that says the connection was refused, says more.
func (s *Service) failed(err error) {
	if errors.Is(err, errReleased) {
		return
	}
	s.change(func() {
		if s.lastErr == nil || !errors.Is(err, errNoAnswer) {
			s.lastErr = err
		}
	})
}

// late records the error of a call, sent at sent, that eval gave up on,
// unless a call sent later has succeeded since.
func (s *Service) late(sent time.Time, err error) {
	s.change(func() {
		if !s.released && !s.lastOK.After(sent) {
			s.lastErr = err
		}
	})
}

// lost records a renewal that found the lease gone or someone else's.
func (s *Service) lost(why loss) {
	s.change(func() {
		s.held, s.lease.Held = false, false
		s.loss, s.lastErr = why, nil
	})
}

// update records a lease Redis confirmed for a call sent at sent: it is
// held until sent + TTL − margin on the monotonic clock. after < 0 keeps
// the current After; fresh marks a new acquisition.
func (s *Service) update(id, after, mark int64, sent time.Time, fresh bool) {
	deadline := sent.Add(s.cfg.ttl - s.cfg.margin)
	s.change(func() {
		if s.released {
			// Release is waiting for acqMu to free what this call took.
			s.lease.ID, s.held = id, true
			return
		}
		s.lease.ID, s.lease.Until = id, msTime(mark)
		if fresh {
			s.lease.After = msTime(after)
		}
		s.held, s.deadline, s.lastErr, s.lastOK = true, deadline, nil, sent
		left := time.Until(deadline)
		s.lease.Held = left > 0
		if left > 0 {
			s.loss = notLost
			s.expiry.Reset(left)
		} else {
			s.loss = lapsed // the answer came too late to vouch for anything
		}
	})
}

// expire runs at the deadline: unless a renewal moved the deadline on, the
// lease can no longer be proven, because the server may expire the key
// from then on (less the margin), so watchers must stop issuing.
func (s *Service) expire() {
	s.change(func() {
		if !s.lease.Held {
			return
		}
		if left := time.Until(s.deadline); left > 0 {
			s.expiry.Reset(left)
			return
		}
		s.lease.Held, s.loss = false, lapsed
	})
}

// msTime converts a mark in ms since the Unix epoch to a time; 0 or less
// means no mark, the zero Time.
func msTime(ms int64) time.Time {
	if ms <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}
