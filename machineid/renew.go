package machineid

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ringflake/ringflake/internal/mutant"
)

// The lease's life, as the Holder judges it. A call sent at t that the
// store confirms proves the lease until t + TTL on the store's judge of
// time, which starts counting no sooner than t; the Holder vouches for it
// until t + TTL − margin on its own monotonic clock (the deadline), so the
// margin covers the two clocks' difference in rate and a watcher's delay.
// Held turns false at the deadline unless a later confirmed call moved it,
// and at once when the store says the lease is another's.

// take asks the store for the lowest free ID and records the lease. The
// caller holds h.turn.
//
// A store that reports a reference clock (h.clocked) is asked for the lease
// without a mark raised (a zero Until); the Holder judges its clock against
// the reading and raises the mark with a renewal only if it passes, so that
// a clock that is off never writes a mark. Until the mark is raised the
// token holds the ID in the store but the Holder does not vouch for it:
// s.unsure stays set, and a failure then leaves the next take to find the
// token's own ID again.
func (h *Holder) take(ctx context.Context, s *session, timeout time.Duration) error {
	sent := time.Now() // before the call: the store's TTL starts later
	c := h.claim(s)    // after sent: the round trip covers the clock's reading
	check := h.clocked
	if check {
		c.Until = time.Time{}
	}
	h.mu.Lock()
	if h.sess != s {
		h.mu.Unlock()
		return ErrReleased // the token is done with: Release has begun
	}
	s.unsure = true
	if h.ride.Held {
		id := h.ride.ID
		c.Prefer = &id
	}
	h.mu.Unlock()
	var g Grant
	var storeErr error // the store's own words, for Release's message
	err := h.call(ctx, s, timeout, "taking a machine ID", func(ctx context.Context) (err error) {
		g, err = h.store.Take(ctx, c)
		storeErr = err
		return err
	})
	h.mu.Lock()
	if h.sess == s {
		s.takeErr = storeErr
	}
	h.mu.Unlock()
	switch {
	case err == nil && (g.ID < c.Lo || g.ID > c.Hi):
		err = h.errorf("taking a machine ID: the store granted %d, outside the range %d..%d", g.ID, c.Lo, c.Hi)
	case err == nil && g.Until.IsZero() && !check:
		err = h.errorf("taking a machine ID: the store confirmed no mark for machine ID %d", g.ID)
	}
	if err != nil {
		return h.failed(s, err)
	}
	off := h.measure(g.Clock, c.Now, time.Since(sent))
	if check {
		if off, err = h.judge(ctx, s, c, &g, off, time.Since(sent), timeout); err != nil {
			return err
		}
		var raised ClockOffset
		if sent, raised, err = h.raise(ctx, s, &g, timeout); err != nil {
			return h.failed(s, err)
		}
		if raised.Against != "" {
			off = raised
		}
	}
	h.confirm(s, g, sent, true, off)
	return nil
}

// judge checks the clock's offset off, which the take that granted g with
// the claim c measured over a round trip of rtt, before any mark is raised,
// and returns the offset it judged by, or the refusal. The caller holds
// h.turn.
//
// Invariant: no mark is raised from a clock that a quick call could have
// shown to be past the bound. Half the round trip is part of the
// uncertainty, and a take may wait inside its call (Kubernetes waits
// TTL + margin for an abandoned Lease), which would hide a clock off by as
// much: 8s ahead passes a 2s bound after a 12s wait. So when the round trip
// is longer than half the bound, the token's ID is taken again, with no mark
// proposed: the store finds the token's own holding and answers at once,
// and that call's reading is judged too. Each measurement bounds the true
// offset on its own, so a clock refused by either is surely off, and a
// right one passes both. A tentative reference (Reading.Tentative) refuses
// no one: the offset is reported, and the generator warns of it.
func (h *Holder) judge(ctx context.Context, s *session, c Claim, g *Grant, off ClockOffset, rtt time.Duration, timeout time.Duration) (ClockOffset, error) {
	id := g.ID
	if off.Past() && !off.Tentative {
		return off, h.refuse(ctx, s, c, id, off, timeout)
	}
	if off.Against == "" || off.Bound < 0 || rtt <= off.Bound/2 {
		return off, nil
	}
	sent := time.Now()
	c = h.claim(s)
	c.Until = time.Time{}
	var g2 Grant
	err := h.call(ctx, s, timeout, fmt.Sprintf("taking machine ID %d again to check the clock", id), func(ctx context.Context) (err error) {
		g2, err = h.store.Take(ctx, c)
		return err
	})
	switch {
	case err != nil:
		return off, h.failed(s, err)
	case g2.ID != id:
		return off, h.failed(s, h.errorf("taking machine ID %d again to check the clock: the store granted %d", id, g2.ID))
	}
	if g2.After.After(g.After) {
		// The store lost the first take (a restart between the two) and
		// granted the ID anew, with an After the first did not have: the
		// restart floor, or a mark recorded meanwhile. The holding
		// inherits the later (leasesim seed 3758: the first take's After,
		// kept across a rollback, was below the floor of the one that
		// granted it again).
		g.After = g2.After
	}
	again := h.measure(g2.Clock, c.Now, time.Since(sent))
	if again.Past() && !again.Tentative {
		return again, h.refuse(ctx, s, c, id, again, timeout)
	}
	if again.Against == "" || again.Within > off.Within {
		return off, nil
	}
	return again, nil
}

// raise sets the mark of the ID in g, which a take with a zero Until got,
// with a renewal, and puts the mark it confirmed in g. It returns when the
// renewal was sent and the offset it measured.
func (h *Holder) raise(ctx context.Context, s *session, g *Grant, timeout time.Duration) (time.Time, ClockOffset, error) {
	sent := time.Now()
	c := h.claim(s)
	var r Grant
	err := h.call(ctx, s, timeout, fmt.Sprintf("raising the mark of machine ID %d", g.ID), func(ctx context.Context) (err error) {
		r, err = h.store.Renew(ctx, c, g.ID)
		return err
	})
	switch {
	case err != nil:
		return sent, ClockOffset{}, err
	case r.ID != g.ID:
		return sent, ClockOffset{}, h.errorf("raising the mark of machine ID %d: the store answered for machine ID %d", g.ID, r.ID)
	case r.Until.IsZero():
		return sent, ClockOffset{}, h.errorf("raising the mark of machine ID %d: the store confirmed no mark", g.ID)
	}
	g.Until = r.Until
	return sent, h.measure(r.Clock, c.Now, time.Since(sent)), nil
}

// refuse frees id, which a take granted to a holder whose clock off says
// is too far from the store's, keeping its mark, and returns the refusal.
// The caller holds h.turn.
func (h *Holder) refuse(ctx context.Context, s *session, c Claim, id int64, off ClockOffset, timeout time.Duration) error {
	var err error = &ClockOffsetError{ClockOffset: off, ID: id}
	rerr := h.call(ctx, s, timeout, fmt.Sprintf("releasing machine ID %d", id), func(ctx context.Context) error {
		return h.store.Release(ctx, c, id, time.Time{})
	})
	h.mu.Lock()
	if rerr == nil && h.sess == s {
		s.unsure = false // the token holds nothing: its lease is freed
	}
	if h.sess == s && !h.lease.Held {
		h.lease.Clock = off // failed tells the watchers
	}
	h.mu.Unlock()
	if rerr != nil {
		err = fmt.Errorf("%w; freeing it: %w", err, rerr)
	}
	return h.failed(s, err)
}

// renew extends s's lease once. It returns an error wrapping ErrLeaseLost
// if the store says the token no longer holds the ID. The caller holds
// h.turn.
func (h *Holder) renew(ctx context.Context, s *session) error {
	h.mu.Lock()
	id := s.id
	h.mu.Unlock()
	sent := time.Now()
	c := h.claim(s)
	if mutant.On(mutant.MarkBeforeStore) {
		h.confirm(s, Grant{ID: id, Until: c.Until}, sent, false, ClockOffset{})
	}
	var g Grant
	err := h.call(ctx, s, h.cfg.callTimeout, fmt.Sprintf("renewing machine ID %d", id), func(ctx context.Context) (err error) {
		g, err = h.store.Renew(ctx, c, id)
		return err
	})
	switch {
	case errors.Is(err, ErrLeaseLost):
		now := h.now() // not under h.mu: an injected clock may block
		h.mu.Lock()
		changed := false
		if h.sess == s {
			rode := h.rideLocked(err, now)
			h.lastErr, h.loss = nil, err
			s.id, s.owned = -1, false
			next := h.lease
			next.Held, next.Err = false, err
			changed = h.setLocked(next) || rode
		}
		h.mu.Unlock()
		if changed {
			h.notify()
		}
		return err
	case err == nil && g.ID != id:
		err = fmt.Errorf("%w: renewing machine ID %d, the store answered for machine ID %d", ErrLeaseLost, id, g.ID)
	case err == nil && g.Until.IsZero():
		err = h.errorf("renewing machine ID %d: the store confirmed no mark", id)
	}
	if err != nil {
		return h.failed(s, err)
	}
	h.confirm(s, g, sent, false, h.measure(g.Clock, c.Now, time.Since(sent)))
	return nil
}

// call runs fn, one call to the store, with a context that ends after
// timeout, when ctx ends, or when s is released, and explains its error.
func (h *Holder) call(ctx context.Context, s *session, timeout time.Duration, doing string, fn func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, mutant.Delay(timeout))
	defer cancel()
	defer context.AfterFunc(s.ctx, cancel)()
	mutant.Yield(mutant.SiteStore)
	err := fn(ctx)
	if err != nil && s.ctx.Err() != nil {
		return fmt.Errorf("%w (%s cut short)", ErrReleased, doing)
	}
	if err != nil {
		return h.explain(ctx, timeout, doing, err)
	}
	return nil
}

// explain wraps the error of a call made with ctx, bounded by timeout,
// with what the call was doing and, if it ran out of time, how long it had.
func (h *Holder) explain(ctx context.Context, timeout time.Duration, doing string, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return h.errorf("%s: no answer within %v: %w", doing, timeout.Round(time.Millisecond), err)
	}
	return h.errorf("%s: %w", doing, err)
}

// confirm records a lease the store confirmed for a call sent at sent, and
// the clock's offset that call measured. A Take (fresh) sets After to the
// grant's; a renewal keeps it, never lowers Until, and keeps the last
// offset if it measured none.
func (h *Holder) confirm(s *session, g Grant, sent time.Time, fresh bool, off ClockOffset) {
	deadline := sent.Add(h.cfg.ttl - h.cfg.margin)
	switch {
	case mutant.On(mutant.NoMargin):
		deadline = sent.Add(h.cfg.ttl)
	case mutant.On(mutant.AnswerDeadline):
		deadline = time.Now().Add(h.cfg.ttl - h.cfg.margin)
	case mutant.On(mutant.WallExpiry):
		deadline = time.Now().Add(g.Until.Add(-h.cfg.margin).Sub(h.now()))
	}
	mutant.Yield(mutant.SiteLock)
	h.mu.Lock()
	if h.sess != s {
		h.mu.Unlock()
		return // released meanwhile; Release frees the token's lease
	}
	next := Lease{ID: g.ID, Held: true, After: h.lease.After, Until: g.Until, Clock: off}
	if fresh {
		next.After = g.After
		var re *RestartError
		if mutant.On(mutant.RideUnconfirmed) && errors.As(h.loss, &re) && g.ID == h.lease.ID && h.lease.After.Before(next.After) {
			// The mutant: the ID taken again after a restart keeps the
			// mark the old holding inherited, not the restart floor.
			next.After = h.lease.After
		}
	} else {
		if h.lease.Until.After(next.Until) {
			next.Until = h.lease.Until
		}
		if off.Against == "" {
			next.Clock = h.lease.Clock
		}
	}
	s.id, s.owned, s.unsure = g.ID, true, false
	h.deadline, h.lastErr, h.loss = deadline, nil, nil
	h.read = g.Clock.Time
	if left := time.Until(deadline); left > 0 {
		h.expiry.Reset(mutant.Delay(left))
	} else {
		// The answer came too late to vouch for anything; the next
		// renewal, sooner, may.
		next.Held = false
		next.Err = fmt.Errorf("%w: the store's answer for machine ID %d came %v after the call, past the lease's deadline (TTL %v − safety margin %v)",
			ErrLeaseLost, g.ID, time.Since(sent).Round(time.Millisecond), h.cfg.ttl, h.cfg.margin)
	}
	changed := h.setLocked(next)
	h.mu.Unlock()
	if changed {
		h.notify()
	}
}

// failed records err as the latest failure of s's calls and returns it. A
// lease still held stays held until its deadline; one that is not held
// reports err as its cause.
func (h *Holder) failed(s *session, err error) error {
	h.mu.Lock()
	changed := false
	if h.sess == s {
		h.lastErr = err
		if !h.lease.Held {
			next := h.lease
			switch {
			case s.owned:
				next.Err = h.lapsed(next.ID, err)
			case h.loss != nil:
				next.Err = fmt.Errorf("%w; taking a lease again: %w", h.loss, err)
			default:
				next.Err = err
			}
			changed = h.setLocked(next)
		}
	}
	h.mu.Unlock()
	if changed {
		h.notify()
	}
	return err
}

// lapsed is the cause of a lease whose deadline passed with no renewal
// confirmed; cause is the latest failed call's error, or nil.
func (h *Holder) lapsed(id int64, cause error) error {
	err := fmt.Errorf("%w: no renewal of machine ID %d was confirmed within TTL %v − safety margin %v of the last",
		ErrLeaseLost, id, h.cfg.ttl, h.cfg.margin)
	if cause != nil {
		err = fmt.Errorf("%w; the latest call: %w", err, cause)
	}
	return err
}

// expire runs at the deadline: unless a renewal moved it on, the lease can
// no longer be proven, since the store may let it go from then on (less
// the margin), so watchers must stop issuing.
func (h *Holder) expire() {
	var wall time.Time
	if mutant.On(mutant.WallExpiry) {
		wall = h.now()
	}
	h.mu.Lock()
	changed := false
	if h.lease.Held {
		left := time.Until(h.deadline)
		if mutant.On(mutant.WallExpiry) {
			left = h.lease.Until.Add(-h.cfg.margin).Sub(wall)
		}
		switch {
		case left > 0:
			h.expiry.Reset(mutant.Delay(left))
		case h.lasts && !answered(h.lastErr):
			// A lease that lasts while the process lives (a file lock):
			// no one can take the ID, and the store has not answered
			// since the last confirmed call (an fsync that hangs), so it
			// stays held, and the generator issues up to the mark that
			// call confirmed, no further. Look again after a retry.
			h.expiry.Reset(mutant.Delay(h.cfg.ttl / 10))
		default:
			next := h.lease
			next.Held = false
			next.Err = h.lapsed(next.ID, h.lastErr)
			changed = h.setLocked(next)
		}
	}
	h.mu.Unlock()
	if changed {
		h.notify()
	}
}

// answered reports whether err, a failed call's error, is the store's
// answer, not a call that ran out of time or was cut short; nil is no
// answer.
func answered(err error) bool {
	return err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled)
}

// run renews s's lease every TTL/3 until Release, and takes one again
// when it is lost. After a failed call it tries again TTL/10 after the
// failed call began, or at once if it took longer (it timed out), so that
// a call is nearly always in flight during an outage, and the first one
// the store answers once it is back renews the lease. The lease therefore
// rides out an outage of up to 2·TTL/3 − margin: it may begin just before a
// renewal is due, TTL/3 into the TTL − margin the last one proved. Both
// periods count from when the last call began, as the deadline does: one
// counted from its answer would come later by however long the store took
// to answer, and a slow answer would eat into that outage.
func (h *Holder) run(s *session) {
	defer close(s.stopped)
	every, retry := h.cfg.ttl/3, h.cfg.ttl/10
	t := time.NewTimer(mutant.Delay(every))
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		if s.ctx.Err() != nil {
			return
		}
		began := time.Now()
		next := every
		if h.refresh(s) != nil {
			next = retry
		}
		t.Reset(mutant.Delay(max(next-time.Since(began), 0)))
	}
}

// refresh renews s's lease, or takes one if the token holds none, unless
// Release has begun: a timer and the release can be ready at once, and the
// token must not be used once it has.
func (h *Holder) refresh(s *session) error {
	select {
	case h.turn <- struct{}{}:
	case <-s.ctx.Done():
		return ErrReleased
	}
	defer func() { <-h.turn }()
	if s.ctx.Err() != nil {
		return ErrReleased
	}
	return h.obtain(s.ctx, s, h.cfg.callTimeout)
}

// obtain renews s's lease if the token holds one, and takes one if it
// holds none or the store says it lost it; a take waits at most timeout.
// The caller holds h.turn.
func (h *Holder) obtain(ctx context.Context, s *session, timeout time.Duration) error {
	h.mu.Lock()
	owned, loss := s.owned, h.loss
	h.mu.Unlock()
	if loss != nil && mutant.On(mutant.NoRetake) {
		return loss
	}
	if owned {
		err := h.renew(ctx, s)
		if !errors.Is(err, ErrLeaseLost) {
			return err
		}
	}
	return h.take(ctx, s, timeout)
}

// setLocked replaces the lease and reports whether watchers must hear of
// it, queueing it for them if so. Errors compare by message: a retry that
// fails the same way is no news, and one that fails another way is. A
// change that only moves Until, or the cause of a loss, replaces one still
// queued of the same holding and standing, so that the queue holds few
// more changes than there are losses and takes. The caller holds h.mu.
func (h *Holder) setLocked(next Lease) bool {
	old := h.lease
	h.lease = next
	if h.ride.Held || !differs(old, next) {
		return false // while a ride lasts, watchers see it (ride.go)
	}
	return h.queueLocked(next)
}

// queueLocked queues next for the watchers, in place of a change still
// queued of the same holding and standing, and reports true. The caller
// holds h.mu.
func (h *Holder) queueLocked(next Lease) bool {
	if n := len(h.pending); n > 0 && sameStanding(h.pending[n-1], next) {
		h.pending[n-1] = next
	} else {
		h.pending = append(h.pending, next)
	}
	return true
}

// sameStanding reports whether a and b are the same holding, held or not
// alike.
func sameStanding(a, b Lease) bool {
	return a.ID == b.ID && a.Held == b.Held && a.After.Equal(b.After)
}

// differs reports whether a and b are news to each other.
func differs(a, b Lease) bool {
	return a.ID != b.ID || a.Held != b.Held ||
		!a.After.Equal(b.After) || !a.Until.Equal(b.Until) ||
		errText(a.Err) != errText(b.Err) || a.Clock != b.Clock
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
