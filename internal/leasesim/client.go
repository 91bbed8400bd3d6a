package leasesim

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringflake/ringflake/machineid"
)

// client is one process's connection to the server: the machineid.Store
// its Holder calls. Each call draws its faults: a delay on the way there
// and on the way back (each honouring the call's context, unless the call
// is stuck and ignores it, as a store that breaks its contract would), a
// loss of the call before it reaches the store, or of the answer after the
// store acted on it (an unknown outcome). A partition cuts the process off
// for a while; a crash, for good.
type client struct {
	w    *world
	s    *server
	p    *proc
	r    *rand.Rand  // the faults' draws; one call at a time uses it (the Holder's turn)
	rate float64     // an observer's clock against the holders' (kind.observed)
	dead atomic.Bool // the process crashed: no call reaches the store

	rmu    sync.Mutex           // protects conf, takes, ceil and rodeAt (ride.go)
	conf   map[string]confirmed // each token's latest confirmation, as its Holder took it
	takes  map[string]taken     // the takes delivered to each token since its latest renewal
	ceil   time.Time            // the latest ceiling of a ride the Holder may have begun
	rodeAt time.Time            // when it may have begun it

	jmu   sync.Mutex // protects judge
	judge judged     // what the Holder judged its clock by last: the latest take whose answer reached it

	// Guarded by server.mu:
	cur    *incarnation            // the generator whose New runs, or ran last
	tokens map[string]*incarnation // each token's generator: the one current when the store first saw it
	seen   map[int64]sighting      // kind.observed: when each record's version was first seen
}

// sighting is when an observer first saw a version of a record.
type sighting struct {
	version int64
	since   time.Time
}

var _ machineid.Store = (*client)(nil)

func newClient(p *proc) *client {
	w := p.w
	c := &client{w: w, s: w.srv, p: p, r: rand.New(rand.NewPCG(p.r.Uint64(), p.r.Uint64())), tokens: map[string]*incarnation{}, seen: map[int64]sighting{},
		conf: map[string]confirmed{}, takes: map[string]taken{}}
	c.rate = w.p.rate
	return c
}

// fault is what goes wrong with one call.
type fault struct {
	pre, post  time.Duration // the delays there and back
	lostBefore bool          // the call never reaches the store
	lostAfter  bool          // the answer never comes back
	stuck      bool          // the delays ignore the context
	stale      time.Duration // how stale a take's read may be
}

// draw draws the faults of one call.
func (c *client) draw() fault {
	p, r := c.w.p, c.r
	f := fault{pre: between(r, 50*time.Microsecond, 2*time.Millisecond), post: between(r, 50*time.Microsecond, 2*time.Millisecond)}
	if c.w.isHealed() {
		return f // no more faults; stale reads are no fault, but the store's way
	}
	if r.Float64() < p.slow {
		f.pre = between(r, 0, p.call*3/2)
	}
	if r.Float64() < p.slow {
		f.post = between(r, 0, p.call*3/2)
	}
	switch x := r.Float64(); {
	case x < p.lossy:
		f.lostBefore = true
	case x < 2*p.lossy:
		f.lostAfter = true
	}
	if r.Float64() < p.stuck {
		f.stuck = true
		f.pre = between(r, p.call/2, p.ttl*3/2)
	}
	if c.s.k.stale && r.IntN(3) == 0 {
		f.stale = between(r, 0, 300*time.Millisecond)
	}
	return f
}

// wait waits d, or until ctx ends unless the call is stuck.
func wait(ctx context.Context, w *world, d time.Duration, stuck bool) error {
	d = w.delay(d)
	if stuck {
		time.Sleep(d)
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// reach returns why the store cannot be reached now, or nil.
func (c *client) reach() error {
	if c.dead.Load() || time.Now().UnixNano() < c.p.cut.Load() {
		return errCut
	}
	return nil
}

// there is a call's way to the store.
func (c *client) there(ctx context.Context, f fault, what string) error {
	if err := wait(ctx, c.w, f.pre, f.stuck); err != nil {
		return err
	}
	if err := c.reach(); err != nil {
		return err
	}
	if f.lostBefore {
		c.w.log.add(c.p.name(), "store: %s lost on the way there", what)
		return errLostBefore
	}
	return nil
}

// back is the answer's way back, once the store has acted.
func (c *client) back(ctx context.Context, f fault, what string) error {
	if f.lostAfter {
		c.w.log.add(c.p.name(), "store: the answer to %s lost on the way back", what)
		return errLostAfter
	}
	if err := wait(ctx, c.w, f.post, f.stuck); err != nil {
		c.w.log.add(c.p.name(), "store: the answer to %s came too late: %v", what, err)
		return err
	}
	return c.reach()
}

// Take is machineid.Store's Take.
func (c *client) Take(ctx context.Context, cl machineid.Claim) (machineid.Grant, error) {
	c.s.calls.Add(1)
	defer c.s.calls.Done()
	began := time.Now()
	f := c.draw()
	if err := c.there(ctx, f, "a take"); err != nil {
		return machineid.Grant{}, err
	}
	g, j, err := c.s.take(c, cl, f.stale)
	if err := c.back(ctx, f, "a take"); err != nil {
		return machineid.Grant{}, err
	}
	if err == nil {
		c.took(cl.Token, g)
		// The Holder read c.Now just before the call (up to a nap of the
		// schedule's before it), or before a pause of its clock: a step
		// since then, or a pause, leaves the offset it read unknown here.
		clk := c.p.clk
		j.moved = time.Unix(0, clk.moved.Load()).After(began.Add(-time.Millisecond)) ||
			clk.pausedDuring(began.Add(-2*c.w.p.ttl-time.Millisecond), time.Now()) > 0
		c.jmu.Lock()
		c.judge = j
		c.jmu.Unlock()
	}
	return g, err
}

// judged is what a take's answer gave the Holder to judge its clock by:
// whether it had a reading, the reference's offset from the true time
// (the fleet's, on etcd; 0 where the store reads its own clock) and the
// caller's clock's offset, when the store answered.
type judged struct {
	read   bool
	ref    time.Duration
	off    time.Duration
	source string
	moved  bool // the caller's clock stepped or paused while the take ran: off may not be what it read
	// weak: too few of the records agree on the reading's reference (etcd),
	// which is then tentative and may refuse no clock
	weak bool
}

// lastJudged returns what the latest take whose answer reached the Holder
// gave it.
func (c *client) lastJudged() judged {
	c.jmu.Lock()
	defer c.jmu.Unlock()
	return c.judge
}

// Renew is machineid.Store's Renew.
func (c *client) Renew(ctx context.Context, cl machineid.Claim, id int64) (machineid.Grant, error) {
	c.s.calls.Add(1)
	defer c.s.calls.Done()
	began := time.Now()
	f := c.draw()
	if err := c.there(ctx, f, "a renewal"); err != nil {
		return machineid.Grant{}, err
	}
	g, rs, err := c.s.renew(c, cl, id)
	if err := c.back(ctx, f, "a renewal"); err != nil {
		return machineid.Grant{}, err
	}
	c.renewed(cl.Token, began, g, rs, err)
	return g, err
}

// Release is machineid.Store's Release.
func (c *client) Release(ctx context.Context, cl machineid.Claim, id int64, issued time.Time) error {
	c.s.calls.Add(1)
	defer c.s.calls.Done()
	f := c.draw()
	if err := c.there(ctx, f, "a release"); err != nil {
		return err
	}
	err := c.s.release(c, cl, id, issued)
	if err := c.back(ctx, f, "a release"); err != nil {
		return err
	}
	return err
}

// incOf returns the generator of token. The caller holds server.mu.
func (c *client) incOf(token string) *incarnation {
	inc, ok := c.tokens[token]
	if !ok {
		inc = c.cur
		c.tokens[token] = inc
	}
	return inc
}

// setCurrent makes inc the generator whose tokens the store sees from now on.
func (c *client) setCurrent(inc *incarnation) {
	c.s.mu.Lock()
	c.cur = inc
	c.s.mu.Unlock()
}

// survey notes when each record of c's range listed in v was first seen in
// its version, as machineid_k8s does. The caller holds server.mu.
func (c *client) survey(cl machineid.Claim, v []record) {
	now := time.Now()
	for i := range v {
		id := cl.Lo + int64(i)
		if s, ok := c.seen[id]; !ok || s.version != v[i].version {
			c.seen[id] = sighting{version: v[i].version, since: now}
		}
	}
}

// free reports whether an observer may take a held record over: it has
// seen it unchanged for the lease's duration (the TTL in whole seconds,
// rounded up) plus its margin, on its own clock. The caller holds
// server.mu.
func (c *client) free(id int64, r *record, cl machineid.Claim) bool {
	s := c.seen[id]
	if s.version != r.version {
		return false
	}
	dur := (cl.TTL + time.Second - 1) / time.Second * time.Second
	return time.Duration(float64(time.Since(s.since))*c.rate) >= dur+cl.Margin
}
