package machineid_redis_test

import (
	"context"
	"flag"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/internal/mutant"
	"github.com/ringflake/ringflake/internal/redistest"
	"github.com/ringflake/ringflake/machineid"
)

// The worlds of issue 36, which the docs allow and the ride before it
// repeated IDs in, against a real redis-server. Each runs at tight
// settings and at the defaults, and requires that no ID repeats.
//
// With -void.mutant NAME (and -tags ringflake_mutant) the engine's or the
// store's old logic is back, and the world must repeat IDs: .ci/run runs
// each so (renew-across-restart, own-lease-no-floor, ride-past-mark).
var voidMutant = flag.String("void.mutant", "", "switch on this mutant (needs -tags ringflake_mutant) for the issue 36 worlds, which must then fail")

// setting is a Holder's TTL, clock bound and safety margin; zero fields
// are the defaults (10s, 2s, 2s).
type setting struct {
	name               string
	ttl, bound, margin time.Duration
}

func (s setting) opts(lo, hi int64) []machineid.Option {
	o := []machineid.Option{machineid.WithRange(lo, hi), machineid.WithTTL(s.ttl)}
	if s.bound > 0 {
		o = append(o, machineid.WithMaxClockOffset(s.bound), machineid.WithSafetyMargin(s.margin))
	}
	return o
}

// life is the TTL in force.
func (s setting) life() time.Duration {
	if s.ttl == 0 {
		return 10 * time.Second
	}
	return s.ttl
}

// slack is the clock bound in force.
func (s setting) slack() time.Duration {
	if s.bound == 0 {
		return 2 * time.Second
	}
	return s.bound
}

// forEachSetting runs world at the settings named, in parallel.
func forEachSetting(t *testing.T, world func(*testing.T, setting), settings ...setting) {
	if *voidMutant != "" {
		require.True(t, mutant.Set(*voidMutant), "switching the mutant %q on needs -tags ringflake_mutant", *voidMutant)
		t.Cleanup(func() { _ = mutant.Set("") })
	}
	for _, s := range settings {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			world(t, s)
		})
	}
}

// world is one run of an issue 36 world: holders, each feeding a
// generator that issues about one ID a millisecond into one ledger, until
// the end set.
type world struct {
	t   *testing.T
	srv *redistest.Server
	led *ledger
	end atomic.Pointer[time.Time]
	eg  errgroup.Group
}

func newWorld(t *testing.T, s setting) *world {
	w := &world{t: t, srv: settled(t, s.life()+3*s.slack()), led: newLedger()}
	t.Cleanup(func() {
		now := time.Now()
		w.end.CompareAndSwap(nil, &now)
		_ = w.eg.Wait()
	})
	return w
}

func (w *world) stop(*run) bool {
	at := w.end.Load()
	return at != nil && time.Now().After(*at)
}

// issue makes a generator of h, which may wait up to wait for its first
// mark, and issues with it until the world ends.
func (w *world) issue(r *run, h *machineid.Holder, wait time.Duration) <-chan error {
	made := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		g, err := ringflake.New(ctx, ringflake.WithMachineIDSource(h), ringflake.WithMaxWait(-1))
		made <- err
		if err != nil {
			return
		}
		w.t.Cleanup(func() { _ = g.Close() })
		w.eg.Go(func() error { r.issue(g, w.led, w.stop); return nil })
	}()
	return made
}

// until ends the world d from now, waits for its issuers, and requires that
// no ID repeated.
func (w *world) until(d time.Duration, runs ...*run) {
	at := time.Now().Add(d)
	w.end.Store(&at)
	require.NoError(w.t, w.eg.Wait())
	dups := w.led.repeats()
	for _, r := range runs {
		w.t.Logf("%s: %d IDs issued, %d calls refused, longest pause %v", r.who, r.issued, r.refused, r.gap.Round(time.Millisecond))
	}
	assert.Zero(w.t, len(dups), "%d IDs issued twice, first ones: %v", len(dups), dups[:min(len(dups), 3)])
}

var (
	tight    = setting{name: "tight", ttl: 6 * time.Second, bound: 400 * time.Millisecond, margin: 400 * time.Millisecond}
	defaults = setting{name: "defaults"}
)

// TestOlderSnapshotAfterAForgettingRestart: H holds ID 0 and Redis saves a
// snapshot (S_a); H is cut off; S_a dies and S_b starts empty; K takes ID
// 0 on S_b, waits out its floor, issues and renews; S_b dies and S_c
// starts from S_a's snapshot, with H's lease in it; H reaches it. H's
// lease there was recorded by another process: void. (At the defaults,
// S_b's floor, TTL + 2·bound, is past the mark K can be confirmed before S_b
// dies, so K issues only after it takes again on S_c.) H's renewal is
// answered as a restart, and K's too; neither issues past the mark the
// store confirmed for it, and each takes again with S_c's floor. Before
// issue 36, H's renewal extended the revived lease (mutant
// renew-across-restart) and H issued K's ticks.
func TestOlderSnapshotAfterAForgettingRestart(t *testing.T) {
	t.Parallel()
	forEachSetting(t, func(t *testing.T, s setting) {
		w := newWorld(t, s)
		var hc cutter
		h := leased(t, hc.client(t, w.srv.Addr), s.opts(0, 0)...)
		hs := changes(t, h)
		rh, rk := &run{who: "H"}, &run{who: "K"}
		require.NoError(t, <-w.issue(rh, h, time.Minute))
		renewed(t, hs, s.life())
		snap := w.srv.Snapshot() // S_a, with H's lease
		hc.set(true)
		w.srv.Stop()
		w.srv.DropSnapshot()
		w.srv.Restart() // S_b, empty

		// K takes ID 0, the lowest; ID 1 lets it issue after S_c too,
		// where H takes ID 0 back.
		k := leased(t, client(t, w.srv.Addr), s.opts(0, 1)...)
		ks := changes(t, k)
		made := w.issue(rk, k, 3*s.life()) // waits out S_b's floor
		renewed(t, ks, s.life())           // K renewed once since it took
		w.srv.Stop()
		w.srv.UseSnapshot(snap)
		w.srv.Restart() // S_c, from S_a's snapshot, H's lease not yet expired in it
		hc.set(false)   // before H's deadline
		require.NoError(t, <-made, "K's generator waits out S_b's floor, and issues up to K's mark")
		w.until(s.life()+3*s.slack(), rh, rk)
		assert.Positive(t, rk.issued, "K should issue: the world this test is about")
	}, tight, defaults)
}

// TestOwnLeaseFromAnOlderSnapshot is the first world without the
// partition: H's range is 0..1. While S_b starts empty, K takes ID 0
// first; H's renewal finds it K's, H rides and takes ID 1. S_c starts
// from S_a's snapshot, in which H's token holds ID 0: H's next take finds
// it as its own. Recorded by another process, it is void, and the take
// is a new one, with S_c's floor; before issue 36 it kept the snapshot's
// After (mutant own-lease-no-floor) and H issued K's ticks on ID 0.
func TestOwnLeaseFromAnOlderSnapshot(t *testing.T) {
	t.Parallel()
	forEachSetting(t, func(t *testing.T, s setting) {
		w := newWorld(t, s)
		var hc cutter
		h := leased(t, hc.client(t, w.srv.Addr), s.opts(0, 1)...)
		hs := changes(t, h)
		rh, rk := &run{who: "H"}, &run{who: "K"}
		require.NoError(t, <-w.issue(rh, h, time.Minute))
		require.Equal(t, int64(0), renewed(t, hs, s.life()).ID)
		snap := w.srv.Snapshot() // S_a, with H's lease on ID 0
		hc.set(true)             // only while K takes ID 0: H's renewal then finds it K's
		w.srv.Stop()
		w.srv.DropSnapshot()
		w.srv.Restart() // S_b, empty
		k := leased(t, client(t, w.srv.Addr), s.opts(0, 1)...) // ID 1 for K after S_c, where ID 0 may be H's
		ks := changes(t, k)
		id, err := k.MachineID(acquireCtx(t))
		require.NoError(t, err)
		require.Equal(t, int64(0), id)
		hc.set(false)
		made := w.issue(rk, k, 3*s.life()) // waits out S_b's floor
		renewed(t, ks, s.life())
		w.srv.Stop()
		w.srv.UseSnapshot(snap)
		w.srv.Restart() // S_c, from S_a's snapshot, H's lease on ID 0 not yet expired in it
		require.NoError(t, <-made, "K's generator waits out S_b's floor, and issues up to K's mark")
		w.until(s.life()+3*s.slack(), rh, rk)
		assert.Positive(t, rk.issued, "K should issue: the world this test is about")
	}, tight, defaults)
}

// TestEarlyExpiryThenRestart: H holds ID 0 and is cut off; its lease ends
// on Redis before H's deadline, as a jump of Redis's clock inside the
// bound ends it (here the lease is deleted, which is the same to every
// script: a redis-server under libfaketime's LD_PRELOAD does not start
// here); K takes ID 0 and inherits H's mark; Redis restarts, and H's
// renewal, before its deadline, is answered as a restart. H rides up to
// the mark Redis confirmed for it, which K's ticks are past; before issue
// 36 it rode to its last confirmation + TTL + bound (mutant
// ride-past-mark), into K's ticks.
func TestEarlyExpiryThenRestart(t *testing.T) {
	t.Parallel()
	forEachSetting(t, func(t *testing.T, s setting) {
		w := newWorld(t, s)
		var hc cutter
		h := leased(t, hc.client(t, w.srv.Addr), s.opts(0, 0)...)
		hs := changes(t, h)
		rh, rk := &run{who: "H"}, &run{who: "K"}
		require.NoError(t, <-w.issue(rh, h, time.Minute))
		c := renewed(t, hs, s.life())
		hc.set(true)
		require.Equal(t, "1", w.srv.Do("DEL", "{ringflake}:LEASE:0"))
		// K takes well after H's last confirmation, so that its own mark
		// is well past H's; H's renewal still comes before its deadline.
		time.Sleep(2 * s.life() / 5)
		k := leased(t, client(t, w.srv.Addr), s.opts(0, 0)...)
		id, err := k.MachineID(acquireCtx(t))
		require.NoError(t, err)
		require.Equal(t, int64(0), id)
		require.False(t, k.Lease().After.Before(c.Until), "K inherits H's mark %v", c.Until)
		made := w.issue(rk, k, 3*s.life())
		w.srv.Stop()
		w.srv.Restart()
		hc.set(false)
		require.NoError(t, <-made, "K waits out H's mark")
		w.until(s.life()+3*s.slack(), rh, rk)
		assert.Positive(t, rk.issued, "K should issue: the world this test is about")
	}, setting{name: "tight", ttl: 3 * time.Second, bound: 2 * time.Second, margin: 100 * time.Millisecond}, defaults)
}

// TestRedisClockStepBackThenRestart (found by an outside review): H, its
// clock 1.8s ahead of Redis's, within the bound of 2s, issues on ID 0, its
// marks capped at Redis's time + TTL + bound, and crashes. Redis's clock
// then steps back 1.8s while it runs, within the bound, and Redis restarts
// and forgets. N, on the true clock, takes ID 0 and inherits the restart
// floor, counted from the new start on the stepped clock: at TTL + bound
// past it (mutant floor-one-bound) it is 1.8s short of H's marks, and N
// repeated H's IDs (528 of 9,134 in the review); at TTL + 2·bound it
// covers them.
func TestRedisClockStepBackThenRestart(t *testing.T) {
	t.Parallel()
	if *voidMutant != "" {
		require.True(t, mutant.Set(*voidMutant), "switching the mutant %q on needs -tags ringflake_mutant", *voidMutant)
		t.Cleanup(func() { _ = mutant.Set("") })
	}
	const life, lead = time.Second, 1800 * time.Millisecond
	opts := []machineid.Option{machineid.WithRange(0, 0), machineid.WithTTL(life),
		machineid.WithMaxClockOffset(bound), machineid.WithSafetyMargin(200 * time.Millisecond)}
	srv := redistest.StartClocked(t)
	srv.WaitUptime(life + 3*bound)
	led := newLedger()

	var hc cutter
	h := leased(t, hc.client(t, srv.Addr), opts...)
	ahead := func() time.Time { return time.Now().Add(lead) }
	gh, err := ringflake.New(t.Context(), ringflake.WithMachineIDSource(h), ringflake.WithClock(ahead), ringflake.WithMaxWait(-1))
	require.NoError(t, err)
	rh := &run{who: "H"}
	until := time.Now().Add(2 * life)
	rh.issue(gh, led, func(*run) bool { return time.Now().After(until) })
	hc.set(true) // H crashes: nothing more reaches Redis from it

	srv.ShiftClock(-lead)
	time.Sleep(50 * time.Millisecond)
	srv.Stop()
	srv.Restart() // empty, its clock where the step left it

	n := leased(t, client(t, srv.Addr), opts...)
	ctx, cancel := context.WithTimeout(context.Background(), 4*(life+2*bound))
	defer cancel()
	gn, err := ringflake.New(ctx, ringflake.WithMachineIDSource(n), ringflake.WithMaxWait(-1))
	require.NoError(t, err, "N waits out the restart floor")
	t.Cleanup(func() { _ = gn.Close() })
	rn := &run{who: "N"}
	until = time.Now().Add(2 * life)
	rn.issue(gn, led, func(*run) bool { return time.Now().After(until) })

	dups := led.repeats()
	t.Logf("H issued %d, N %d", rh.issued, rn.issued)
	assert.Positive(t, rh.issued)
	assert.Positive(t, rn.issued)
	assert.Zero(t, len(dups), "%d IDs issued twice, first ones: %v", len(dups), dups[:min(len(dups), 3)])
}
