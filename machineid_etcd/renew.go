package machineid_etcd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ringflake/ringflake/machineid"
)

// refresh renews the held lease and raises its mark, or acquires one if
// none is held or it was lost; each call is bounded by timeout and by ctx,
// which is derived from parent. The caller holds the calls lock.
func (l *Leaser) refresh(parent, ctx context.Context, timeout time.Duration) error {
	if l.held.id >= 0 {
		err := l.renew(parent, ctx, timeout)
		if !errors.Is(err, ErrLeaseLost) {
			l.noteErr(err)
			return err
		}
		l.set(func(le *machineid.Lease) {
			if !l.released {
				le.Held, le.Err = false, err
			}
		})
	}
	err := l.acquire(parent, ctx, timeout)
	l.noteErr(err)
	return err
}

// renew renews the etcd lease and then raises the ID's mark. Once the
// renewal is confirmed the deadline moves on, even if raising the mark
// fails: the owner key lives as long as the lease. Held comes back (after a
// deadline passed) only once the mark is raised, which also proves the key
// is still this Leaser's.
func (l *Leaser) renew(parent, ctx context.Context, timeout time.Duration) error {
	if err := l.keepAlive(parent, ctx, timeout); err != nil {
		return err
	}
	l.set(func(le *machineid.Lease) {
		l.deadline = l.held.deadline(l.cfg.margin)
		l.arm()
	})
	mark, err := l.raise(parent, ctx, timeout, l.held.mark)
	if err != nil {
		return err
	}
	l.held.mark = mark
	l.publish()
	return nil
}

// acquire makes sure an etcd lease is held, claims an ID on it and raises
// the ID's mark, then reports the new lease.
func (l *Leaser) acquire(parent, ctx context.Context, timeout time.Duration) error {
	if err := l.ensureLease(parent, ctx, timeout); err != nil {
		return err
	}
	id, after, err := l.claim(parent, ctx, timeout)
	if err != nil {
		return err
	}
	l.held.id, l.held.after, l.held.mark = id, after, after
	mark, err := l.raise(parent, ctx, timeout, after)
	if err != nil {
		return err
	}
	l.held.mark = mark
	l.publish()
	return nil
}

// publish reports the lease that held describes, valid until its deadline,
// unless Release has begun: watchers have then seen the final report.
func (l *Leaser) publish() {
	h := l.held
	l.set(func(le *machineid.Lease) {
		if l.released {
			return
		}
		l.deadline = h.deadline(l.cfg.margin)
		*le = machineid.Lease{ID: h.id, Held: time.Until(l.deadline) > 0, After: timeOf(h.after), Until: timeOf(h.mark)}
		if !le.Held {
			le.Err = fmt.Errorf("%w: machine ID %d: etcd confirmed it after the deadline, %v past the renewal's send time",
				ErrLeaseLost, h.id, time.Since(h.sent).Round(time.Millisecond))
		}
		l.lastErr = nil
		l.arm()
	})
}

// deadline is when the Leaser stops vouching for h's etcd lease: etcd
// cannot expire it before the send time of its last confirmed renewal plus
// its TTL, less margin.
func (h holding) deadline(margin time.Duration) time.Time {
	return h.sent.Add(h.ttl - margin)
}

// arm sets the expiry timer to fire at the deadline. The caller holds mu.
func (l *Leaser) arm() {
	if left := time.Until(l.deadline); left > 0 && !l.released {
		l.expiry.Reset(left)
	}
}

// noteErr records the last call's error, to explain a deadline that
// passes; nil leaves it.
func (l *Leaser) noteErr(err error) {
	if err == nil {
		return
	}
	l.mu.Lock()
	l.lastErr = err
	l.mu.Unlock()
}

// expire runs at the deadline: unless a renewal moved the deadline on, the
// lease can no longer be proven, so watchers must stop issuing before etcd
// may expire it.
func (l *Leaser) expire() {
	l.set(func(le *machineid.Lease) {
		if !le.Held || l.released {
			return
		}
		if left := time.Until(l.deadline); left > 0 {
			l.expiry.Reset(left)
			return
		}
		cause := errors.New("a renewal is still waiting for etcd")
		if l.lastErr != nil {
			cause = l.lastErr
		}
		le.Held = false
		le.Err = fmt.Errorf("%w: machine ID %d: no renewal confirmed within %v of the last one sent (TTL less the safety margin): %w",
			ErrLeaseLost, le.ID, l.cfg.ttl-l.cfg.margin, cause)
	})
}

// run renews the lease every TTL/3 until Release, and acquires one again
// when it is lost. After a failed call it tries again sooner, every
// TTL/10.
func (l *Leaser) run() {
	defer close(l.stopped)
	every, retry := l.cfg.ttl/3, l.cfg.ttl/10
	t := time.NewTimer(every)
	defer t.Stop()
	for {
		select {
		case <-l.ctx.Done():
			return
		case <-t.C:
		}
		next := every
		if l.lock(l.ctx) != nil {
			return
		}
		err := l.refresh(l.ctx, l.ctx, l.cfg.callTimeout)
		l.unlock()
		if err != nil {
			next = retry
			l.redial()
		}
		t.Reset(next)
	}
}

// redial makes the client's connections that failed try again at once,
// not on gRPC's backoff, which grows to 120s by default: after an outage
// the Leaser must reach etcd again within the TTL. It uses
// grpc.ClientConn.ResetConnectBackoff through an interface, so that the
// build does not depend on that experimental method; without it, redial
// does nothing.
func (l *Leaser) redial() {
	if c, ok := any(l.client.ActiveConnection()).(interface{ ResetConnectBackoff() }); ok {
		c.ResetConnectBackoff()
	}
}

// timeOf converts a mark in nanoseconds since the Unix epoch to a time; 0
// means no mark, the zero Time.
func timeOf(ns int64) time.Time {
	if ns <= 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}
