package leasesim

import (
	"time"

	"github.com/ringflake/ringflake/machineid"
)

// The ride's liveness (issue 31). A Holder rides out a restart of a store
// that forgets (machineid, ride.go) when a renewal is answered with a
// *machineid.RestartError while the lease is held, and its Start is after
// c, the store's clock in the call that last confirmed the lease: the
// holding stays usable up to U, the mark the store confirmed for it. Its
// generator must then go on issuing: a call of its that begins at or after
// the answer, at a, returns IDs within
//
//	W = U − its clock at a − 2 ticks,
//
// the ride's cover: its clock reaches the ceiling no sooner, and up to it
// every tick is its own (the tick after the ceiling's and the one its
// clock may be in are left out). It is asked only of a generator whose
// clock is past every tick it issued: one whose clock stepped back issues
// only what its ring's later ticks have left until the clock is past them
// again, ride or not. Where W is under
// rideMinWindow the ride is too short to tell, and nothing is asked. A
// Holder that did not ride, and waited out the restart floor (TTL + slack
// past the restart) with no lease, issues nothing from a until its clock
// passes the floor, past U, so past W.
//
// The sim asks it only where the Holder must ride, as far as it can tell
// from outside (a missed case asks nothing; it never asks where the
// Holder may rightly not ride): the answer came back in time (a stuck
// call's late answer is the Holder's too) at least a millisecond before
// the deadline, counted from when the confirming renewal reached the
// client (the Holder sent it at most a nap, 200 µs, before); the renewal
// was no take's raise (a take was delivered since the last renewal), and
// the confirming take, if any, was the only one before its raise (the
// judge's second look leaves unknown which reading the Holder kept); the
// clock neither paused since 2·TTL before the confirming call nor steps
// in the window; no earlier ride may still run (the clock is two ticks
// past its ceiling: the Holder ends a ride whose ceiling its clock has
// passed when a restart's answer comes, and looks at the clock at least
// every renewal period while it rides; before it did, a clock stepped
// back as a ride began and forward past its ceiling kept the ride until a
// timer set for the whole step, and seed 1900 failed at 19.106597s:
// mutant ride-stale); the holding's generator is open, and stays open,
// and its clock is past the tick of the holding's After. So every miss is
// the engine's.

// rideMinWindow is the shortest cover W the check asks a ride to issue
// in: an issuer waits an exponential gap of mean 5 ms between calls, so
// one of them calls within 120 ms but with odds of e^-24.
const rideMinWindow = 120 * time.Millisecond

// noRestartErrorName is the store mutant that answers a renewal of an ID
// the store forgot with a plain ErrLeaseLost: no Holder rides.
const noRestartErrorName = "no-restart-error"

// restartAnswer is a forgetting store's RestartError for a renewal, with
// the holding it ends and that holding's generator.
type restartAnswer struct {
	re   *machineid.RestartError
	hold *holding
	inc  *incarnation
}

// confirmed is the call that last confirmed a token's lease, as its Holder
// took it.
type confirmed struct {
	began  time.Time // when the confirming Renew reached the client
	read   time.Time // the reading the Holder keeps (its take's, for a take and its raise)
	until  time.Time // the latest mark the store confirmed for the holding: the ride's ceiling
	unsure bool      // two takes came before the raise: which reading it kept is not known here
}

// taken counts the takes of a token delivered since its last renewal.
type taken struct {
	n    int
	read time.Time // the first one's reading
}

// took notes a take's answer, delivered to token's Holder.
func (c *client) took(token string, g machineid.Grant) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	t := c.takes[token]
	t.n++
	if t.n == 1 {
		t.read = g.Clock.Time
	}
	c.takes[token] = t
}

// renewed notes a renewal's answer, delivered to token's Holder: a
// confirmation, or a restart the Holder may ride out, which the checker
// then expects it to.
func (c *client) renewed(token string, began time.Time, g machineid.Grant, rs *restartAnswer, err error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	t, raise := c.takes[token]
	delete(c.takes, token)
	if err == nil {
		cf := confirmed{began: began, read: g.Clock.Time, until: g.Until}
		if prev, ok := c.conf[token]; ok {
			cf.until = later(cf.until, prev.until)
		}
		if raise {
			cf.read, cf.unsure = t.read, t.n > 1
		}
		c.conf[token] = cf
		return
	}
	cf, ok := c.conf[token]
	if rs == nil || !ok || !rs.re.Start.After(cf.read) {
		return
	}
	ceil := cf.until
	prev := ride{ceil: c.ceil, at: c.rodeAt}
	c.ceil, c.rodeAt = later(c.ceil, ceil), time.Now()
	if raise || cf.unsure {
		return
	}
	c.w.chk.expectRide(c.p, rs, cf, ceil, prev)
}

// ride is a ride the Holder may have begun: its ceiling, and when.
type ride struct{ ceil, at time.Time }

// expectRide asks p, whose Holder had the restart answer rs to a renewal of
// the lease cf confirmed, just now, to issue within the ride's cover (see
// above), unless a condition of the check fails; prev is the ceiling of
// the ride before, if any.
func (k *checker) expectRide(p *proc, rs *restartAnswer, cf confirmed, ceil time.Time, prev ride) {
	w := k.w
	a := time.Now()
	clock := p.clk.read()
	inc, h := rs.inc, rs.hold
	switch {
	case inc == nil || h == nil || h.inc != inc || inc.closing.Load() || inc.cl.dead.Load():
		return
	case a.After(cf.began.Add(w.p.ttl - w.p.margin - time.Millisecond)):
		return // at or past the deadline, as far as the sim can tell
	case p.clk.pausedDuring(cf.began.Add(-2*w.p.ttl), a) > 0:
		return
	case clock.Before(prev.ceil.Add(2 * tick)):
		return // the ride before may still run, and a second one is not begun
	}
	k.mu.Lock()
	g, after, last := inc.g, h.after, int64(-1)
	for _, hs := range k.byID {
		for _, o := range hs {
			if o.inc == inc {
				last = max(last, o.last)
			}
		}
	}
	k.mu.Unlock()
	win := ceil.Sub(clock) - 2*tick
	if g == nil || w.tickOf(clock) <= w.tickOf(after) || w.tickOf(clock) <= last || win < rideMinWindow {
		return
	}
	w.log.add(p.name(), "%s must ride out the restart: a call within %v must issue (ceiling %s)", inc, win, w.at(ceil))
	w.goRun(func() {
		if w.sleep(win) {
			k.rideDue(p, inc, a, win)
		}
	})
}

// rideDue checks, at the end of the ride's cover win from a, that inc
// issued from a call begun at a or later, unless its clock stepped or
// paused meanwhile, or the generator closed or crashed.
func (k *checker) rideDue(p *proc, inc *incarnation, a time.Time, win time.Duration) {
	switch {
	case inc.closing.Load() || inc.cl.dead.Load():
		return
	case time.Unix(0, p.clk.moved.Load()).After(a.Add(-time.Millisecond)), p.clk.pausedDuring(a, time.Now()) > 0:
		return
	case inc.issuedAt.Load() >= a.UnixNano():
		return
	}
	k.fail(invRideLive, "%s rode out a restart answered at %+.6fs with no call begun since returning an ID within the ride's cover, %v",
		inc, a.Sub(k.w.start).Seconds(), win)
}
