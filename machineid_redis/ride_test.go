package machineid_redis_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/machineid"
)

// ledger records the IDs that several generators issue, and the repeats.
type ledger struct {
	mu   sync.Mutex
	ids  map[ringflake.ID]string
	dups []ringflake.ID
}

func newLedger() *ledger { return &ledger{ids: map[ringflake.ID]string{}} }

func (l *ledger) add(id ringflake.ID, who string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, seen := l.ids[id]; seen {
		l.dups = append(l.dups, id)
	}
	l.ids[id] = who
}

func (l *ledger) repeats() []ringflake.ID {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]ringflake.ID(nil), l.dups...)
}

// run is one generator's issuing: about one ID a millisecond until stop,
// each recorded in the ledger, and the longest stretch without one.
type run struct {
	who     string
	gap     time.Duration // the longest time between two IDs issued
	gapEnd  time.Time     // when the ID that ended it was issued
	refused int           // calls refused
	issued  int
	last    time.Time // when the last ID was issued
}

func (r *run) issue(g *ringflake.Generator, led *ledger, stop func(*run) bool) {
	for !stop(r) {
		id, err := g.NextID()
		now := time.Now()
		if err != nil {
			r.refused++
		} else {
			led.add(id, r.who)
			if !r.last.IsZero() && now.Sub(r.last) > r.gap {
				r.gap, r.gapEnd = now.Sub(r.last), now
			}
			r.last = now
			r.issued++
		}
		time.Sleep(time.Millisecond)
	}
}

// cutter is a dialer that refuses new connections while cut, and closes
// those it made when cut, so that a holder can be kept away from Redis.
type cutter struct {
	mu    sync.Mutex // protects cut and conns
	cut   bool
	conns []net.Conn
}

func (c *cutter) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cut {
		return nil, errors.New("cut off by the test")
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, network, addr)
	if err == nil {
		c.conns = append(c.conns, conn)
	}
	return conn, err
}

// set cuts the holder off, closing its connections, or lets it dial again.
func (c *cutter) set(cut bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cut = cut
	for _, conn := range c.conns {
		_ = conn.Close()
	}
	c.conns = nil
}

func (c *cutter) client(t *testing.T, addr string) *redis.Client {
	rc := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, Dialer: c.dial, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = rc.Close() })
	return rc
}

// changes returns a channel that hears of every lease h reports from now
// on, and stops listening at the test's end.
func changes(t *testing.T, h *machineid.Holder) <-chan machineid.Lease {
	ch := make(chan machineid.Lease, 1024)
	stop := h.Watch(func(l machineid.Lease) {
		select {
		case ch <- l:
		default:
		}
	})
	t.Cleanup(stop)
	return ch
}

// TestLiveHoldersRideARestart restarts Redis, without persistence, under
// three live holders of a full range that issue about one ID a millisecond. Each finds its
// lease gone at its next renewal, from a server that started after that
// lease was last confirmed, and rides the restart out: it goes on issuing
// up to the mark Redis confirmed for it (about that confirmation + TTL),
// takes an ID again at once, and issues again once its clock passes the
// new holding's floor, the server's start + TTL + bound. The pause is
// therefore the time from the last confirmation to the restart, plus the
// downtime, plus how late the start is read (until the first call to the
// new server, a second at most), plus the bound: at most TTL/3 + the retry
// (TTL/10) + the downtime + 1s + bound, where it was TTL + bound before
// the ride; the check allows 2s for the start, for a loaded machine. No ID
// may repeat, and each holder
// takes back its own ID (Claim.Prefer) rather than the lowest free one,
// another's.
func TestLiveHoldersRideARestart(t *testing.T) {
	t.Parallel()
	const life = 3 * time.Second
	srv := settled(t, life+3*bound)
	led := newLedger()
	gens := make([]*ringflake.Generator, 3)
	runs := make([]*run, 3)
	for i := range gens {
		h := leased(t, client(t, srv.Addr), machineid.WithRange(0, 2), machineid.WithTTL(life))
		g, err := ringflake.New(t.Context(), ringflake.WithMachineIDSource(h), ringflake.WithMaxWait(-1))
		require.NoError(t, err)
		t.Cleanup(func() { _ = g.Close() })
		gens[i], runs[i] = g, &run{who: fmt.Sprintf("holder %d", i)}
	}
	var end atomic.Pointer[time.Time] // a second past the latest the pause may end
	stop := func(*run) bool {
		at := end.Load()
		return at != nil && time.Now().After(*at)
	}
	var eg errgroup.Group
	for i, g := range gens {
		eg.Go(func() error { runs[i].issue(g, led, stop); return nil })
	}
	time.Sleep(life / 2)
	ids := make([]int64, len(gens))
	for i, g := range gens {
		ids[i] = g.Lease().ID
	}
	down := time.Now()
	srv.Stop()
	srv.Restart()
	up := time.Now()
	downtime := up.Sub(down)
	limit := life/3 + life/10 + downtime + 2*time.Second + 2*bound
	stopAt := up.Add(life + bound + limit + time.Second) // past the ride's ceiling and the pause after it
	end.Store(&stopAt)
	require.NoError(t, eg.Wait())

	dups := led.repeats()
	assert.Zero(t, len(dups), "IDs issued twice, first ones: %v", dups[:min(len(dups), 3)])
	for i, g := range gens {
		assert.Equal(t, ids[i], g.Lease().ID, "holder %d took back its own machine ID", i)
	}
	for _, r := range runs {
		t.Logf("%s: longest pause %v (ended %v after the restart), %d calls refused, %d IDs issued; Redis down %v",
			r.who, r.gap.Round(time.Millisecond), r.gapEnd.Sub(up).Round(time.Millisecond), r.refused, r.issued, downtime.Round(time.Millisecond))
		assert.True(t, r.gapEnd.After(up), "%s never issued again after the restart: %+v", r.who, r)
		assert.LessOrEqual(t, r.gap, limit, "%s paused %v across the restart; want at most TTL/3 + TTL/10 + the downtime + 2s + 2·bound = %v", r.who, r.gap, limit)
	}
}

// renewed waits, up to d, for a held lease on ch whose Until is later than
// the first held one's: a renewal confirmed after a take. It returns it.
func renewed(t *testing.T, ch <-chan machineid.Lease, d time.Duration) machineid.Lease {
	t.Helper()
	var first time.Time
	timeout := time.After(d)
	for {
		select {
		case l := <-ch:
			switch {
			case !l.Held:
			case first.IsZero():
				first = l.Until
			case l.Until.After(first):
				return l
			}
		case <-timeout:
			require.FailNow(t, "no renewal confirmed", "within %v", d)
		}
	}
}

// TestRideAfterTwoRestarts is the world where a holder that rode a restart
// whenever its lease was confirmed before it (issue 31's first rule) would
// repeat IDs. Holder H on ID 0 is confirmed at c, and is cut off from
// Redis, which restarts (S1). A newcomer N takes ID 0 on S1, inheriting
// S1's start + TTL + bound, and renews once; then S1 dies too, and N is
// cut off: it issues until its lease's deadline, past S1's floor. S2
// starts before H's deadline and H reaches it: its lease is gone, from a
// server that started after c. H may go on below c + TTL + bound, which
// is below every tick N issues, and no further; keeping its old After
// past that, it would issue N's IDs.
func TestRideAfterTwoRestarts(t *testing.T) {
	t.Parallel()
	const (
		life  = 8 * time.Second
		tight = 400 * time.Millisecond // the clock bound and the safety margin
	)
	opts := []machineid.Option{machineid.WithRange(0, 0), machineid.WithTTL(life),
		machineid.WithMaxClockOffset(tight), machineid.WithSafetyMargin(tight)}
	srv := settled(t, life+2*tight)
	var hc, nc cutter
	h := leased(t, hc.client(t, srv.Addr), opts...)
	hs := changes(t, h)
	gh, err := ringflake.New(t.Context(), ringflake.WithMachineIDSource(h), ringflake.WithMaxWait(-1))
	require.NoError(t, err)
	t.Cleanup(func() { _ = gh.Close() })
	led := newLedger()
	var end atomic.Pointer[time.Time]
	stop := func(*run) bool {
		at := end.Load()
		return at != nil && time.Now().After(*at)
	}
	rh, rn := &run{who: "H"}, &run{who: "N"}
	var eg errgroup.Group
	eg.Go(func() error { rh.issue(gh, led, stop); return nil })
	defer func() {
		now := time.Now()
		end.CompareAndSwap(nil, &now)
		_ = eg.Wait()
	}()

	c := renewed(t, hs, life) // H's last confirmation, at c
	hc.set(true)
	srv.Stop()
	srv.Restart() // S1, without H's lease and mark

	n := leased(t, nc.client(t, srv.Addr), opts...)
	ns := changes(t, n)
	var gn *ringflake.Generator
	made := make(chan error, 1)
	go func() {
		var err error
		gn, err = ringflake.New(context.Background(), ringflake.WithMachineIDSource(n), ringflake.WithMaxWait(-1))
		made <- err
	}()
	nl := renewed(t, ns, life) // N took ID 0 on S1 and renewed once
	require.Equal(t, int64(0), nl.ID)
	require.True(t, nl.After.After(c.Until), "N's After %v should be past H's mark %v: S1's floor", nl.After, c.Until)
	nc.set(true)
	srv.Stop()
	srv.Restart() // S2, before H's deadline
	s2 := time.Now()
	hc.set(false)

	require.NoError(t, <-made, "N waits out S1's floor within its lease")
	t.Cleanup(func() { _ = gn.Close() })
	stopAt := time.Now().Add(life - 2*tight) // past N's deadline: it issues until then
	end.Store(&stopAt)
	eg.Go(func() error { rn.issue(gn, led, stop); return nil })
	require.NoError(t, eg.Wait())

	dups := led.repeats()
	assert.Zero(t, len(dups), "IDs issued by both H and N (%d by H, %d by N), first ones: %v", rh.issued, rn.issued, dups[:min(len(dups), 3)])
	assert.Positive(t, rn.issued, "N should issue after S1's floor, within its lease: the world this test is about")
	var rode int
	led.mu.Lock()
	for id, who := range led.ids {
		if at := gh.Layout().Decompose(id).Time; who == "H" && at.After(s2) && !at.After(nl.After) {
			rode++
		}
	}
	led.mu.Unlock()
	assert.Positive(t, rode, "H should ride S2's restart: issue after it, below N's After")
	t.Logf("H issued %d IDs (%d after S2 started, below N's After), N %d; H's longest pause %v", rh.issued, rode, rn.issued, rh.gap.Round(time.Millisecond))
}

// TestFlushDoesNotRide flushes Redis under a live holder, without a
// restart. Its lease is gone, but the server started before the lease was
// confirmed, and promises no floor above it: the holder does not ride; it
// reports the loss and takes an ID again, as before.
func TestFlushDoesNotRide(t *testing.T) {
	t.Parallel()
	const life = 3 * time.Second
	srv := settled(t, life+3*bound)
	h := leased(t, client(t, srv.Addr), machineid.WithRange(0, 0), machineid.WithTTL(life))
	hs := changes(t, h)
	_, err := h.MachineID(acquireCtx(t))
	require.NoError(t, err)
	before := renewed(t, hs, life)
	require.Equal(t, "OK", srv.Do("FLUSHALL"))
	timeout := time.After(life)
	for {
		select {
		case l := <-hs:
			if l.Held {
				require.Equal(t, before.After, l.After, "a new holding reported with no loss before it: %+v", l)
				continue // the same holding, renewed before the flush, or riding it
			}
			var re *machineid.RestartError
			require.ErrorAs(t, l.Err, &re, "the renewal's answer says when the server started")
			assert.ErrorIs(t, l.Err, machineid.ErrLeaseLost)
			assert.True(t, re.Start.Before(before.Until.Add(-life)), "the server started (%v) before the lease was confirmed (%v)", re.Start, before.Until.Add(-life))
			return
		case <-timeout:
			require.FailNow(t, "no loss reported", "within %v of the flush: the holding rode it, or was never renewed", life)
		}
	}
}

// TestLapsedHolderDoesNotRide has a holder H cut off from Redis until its
// lease runs out there; a newcomer N takes its ID on the same server,
// inheriting H's mark, and issues; then Redis restarts, and H's renewal
// reaches the new server: the lease is gone from a server that started
// after H was last confirmed, but the answer comes past H's deadline. H
// must not ride: N issued below H's ceiling (H's last confirmation's Redis
// time + TTL + bound) on the old server, and goes on doing so.
func TestLapsedHolderDoesNotRide(t *testing.T) {
	t.Parallel()
	const life = 3 * time.Second
	opts := []machineid.Option{machineid.WithRange(0, 0), machineid.WithTTL(life)}
	srv := settled(t, life+3*bound)
	var hc cutter
	h := leased(t, hc.client(t, srv.Addr), opts...)
	hs := changes(t, h)
	gh, err := ringflake.New(t.Context(), ringflake.WithMachineIDSource(h), ringflake.WithMaxWait(-1))
	require.NoError(t, err)
	t.Cleanup(func() { _ = gh.Close() })
	led := newLedger()
	var end atomic.Pointer[time.Time]
	stop := func(*run) bool {
		at := end.Load()
		return at != nil && time.Now().After(*at)
	}
	rh, rn := &run{who: "H"}, &run{who: "N"}
	var eg errgroup.Group
	eg.Go(func() error { rh.issue(gh, led, stop); return nil })
	defer func() {
		now := time.Now()
		end.CompareAndSwap(nil, &now)
		_ = eg.Wait()
	}()

	c := renewed(t, hs, life)
	hc.set(true)
	for leaseOf(h).Held { // H's deadline, before its lease runs out on the server
		time.Sleep(10 * time.Millisecond)
	}
	n := leased(t, client(t, srv.Addr), opts...)
	ctx, cancel := context.WithTimeout(context.Background(), 3*life)
	defer cancel()
	gn, err := ringflake.New(ctx, ringflake.WithMachineIDSource(n), ringflake.WithMaxWait(-1))
	require.NoError(t, err, "N takes ID 0 once H's lease has run out on the server")
	t.Cleanup(func() { _ = gn.Close() })
	require.True(t, gn.Lease().After.Before(c.Until.Add(bound)), "N inherits H's mark %v, below H's ceiling: the case this test is about; got %v", c.Until, gn.Lease().After)
	eg.Go(func() error { rn.issue(gn, led, stop); return nil })
	time.Sleep(300 * time.Millisecond)
	srv.Stop()
	srv.Restart()
	hc.set(false)
	stopAt := c.Until.Add(2 * bound) // past H's ceiling
	end.Store(&stopAt)
	require.NoError(t, eg.Wait())

	dups := led.repeats()
	assert.Zero(t, len(dups), "IDs issued by both H and N (%d by H, %d by N), first ones: %v", rh.issued, rn.issued, dups[:min(len(dups), 3)])
	assert.Positive(t, rn.issued, "N should issue: the world this test is about")
}

// TestRideWhenANewcomerTookTheID restarts Redis under a live holder H of
// ID 0, in a range of two, and has a newcomer N take ID 0 on the restarted
// server before H's next renewal. That renewal finds another owner on a
// server that started after H's last confirmation, at c: N inherited that
// start + TTL + bound, past the mark Redis confirmed for H, as any take on
// that server does. So H rides as if it had found the ID free: it goes on
// issuing on ID 0 up to that mark and no further, takes ID 1 (ID 0, which
// it asks for, is N's), and issues on it once its clock passes the floor.
// Its pause is bounded as TestLiveHoldersRideARestart's, where stopping at
// the renewal cost it the whole floor, and no ID may repeat.
func TestRideWhenANewcomerTookTheID(t *testing.T) {
	t.Parallel()
	const life = 3 * time.Second
	srv := settled(t, life+3*bound)
	var hc cutter
	h := leased(t, hc.client(t, srv.Addr), machineid.WithRange(0, 1), machineid.WithTTL(life))
	hs := changes(t, h)
	gh, err := ringflake.New(t.Context(), ringflake.WithMachineIDSource(h), ringflake.WithMaxWait(-1))
	require.NoError(t, err)
	t.Cleanup(func() { _ = gh.Close() })
	led := newLedger()
	var end atomic.Pointer[time.Time]
	stop := func(*run) bool {
		at := end.Load()
		return at != nil && time.Now().After(*at)
	}
	rh, rn := &run{who: "H"}, &run{who: "N"}
	var eg errgroup.Group
	eg.Go(func() error { rh.issue(gh, led, stop); return nil })
	defer func() {
		now := time.Now()
		end.CompareAndSwap(nil, &now)
		_ = eg.Wait()
	}()

	c := renewed(t, hs, life) // H's last confirmation before the restart
	require.Equal(t, int64(0), c.ID)
	hc.set(true) // H's next renewal comes after N's take
	down := time.Now()
	srv.Stop()
	srv.Restart()
	up := time.Now()
	downtime := up.Sub(down)
	n := leased(t, client(t, srv.Addr), machineid.WithRange(0, 0), machineid.WithTTL(life))
	id, err := n.MachineID(acquireCtx(t))
	require.NoError(t, err)
	require.Equal(t, int64(0), id, "N takes H's ID on the restarted server")
	hc.set(false)

	var gn *ringflake.Generator
	made := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*life)
		defer cancel()
		var err error
		gn, err = ringflake.New(ctx, ringflake.WithMachineIDSource(n), ringflake.WithMaxWait(-1))
		made <- err
	}()
	require.NoError(t, <-made, "N waits out the restart floor")
	t.Cleanup(func() { _ = gn.Close() })
	stopAt := time.Now().Add(2 * time.Second)
	end.Store(&stopAt)
	eg.Go(func() error { rn.issue(gn, led, stop); return nil })
	require.NoError(t, eg.Wait())

	dups := led.repeats()
	assert.Zero(t, len(dups), "IDs issued by both H and N (%d by H, %d by N), first ones: %v", rh.issued, rn.issued, dups[:min(len(dups), 3)])
	assert.Positive(t, rn.issued, "N should issue on ID 0 once past the floor: the world this test is about")
	var rode, past, moved int
	led.mu.Lock()
	for id, who := range led.ids {
		p := gh.Layout().Decompose(id)
		switch {
		case who != "H":
		case p.Machine == 0 && p.Time.After(c.Until):
			past++
		case p.Machine == 0 && p.Time.After(up):
			rode++
		case p.Machine == 1:
			moved++
		}
	}
	led.mu.Unlock()
	assert.Positive(t, rode, "H should ride: issue on ID 0 after the restart, up to its last confirmed mark %v, after N took the ID", c.Until)
	assert.Zero(t, past, "H issued on ID 0 past its last confirmed mark %v, which N inherited or passed", c.Until)
	assert.Positive(t, moved, "H should take ID 1 and issue on it")
	limit := life/3 + life/10 + downtime + 2*time.Second + 2*bound
	assert.LessOrEqual(t, rh.gap, limit, "H paused %v across the restart; want at most TTL/3 + TTL/10 + the downtime + 2s + 2·bound = %v", rh.gap, limit)
	t.Logf("H: longest pause %v, %d calls refused, %d IDs issued (%d on ID 0 after the restart, %d on ID 1); N: %d issued; Redis down %v",
		rh.gap.Round(time.Millisecond), rh.refused, rh.issued, rode, moved, rn.issued, downtime.Round(time.Millisecond))
}
