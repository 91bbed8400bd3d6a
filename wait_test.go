package ringflake

import (
	"context"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRoundTakeHandsOutDisjointShares(t *testing.T) {
	t.Parallel()
	l := Layout{TimeBits: 50, MachineBits: 3, SequenceBits: 10, Epoch: time.Unix(0, 0), Tick: time.Millisecond}
	r := &round{}
	r.ranges[0] = claimRange{tick: 7, machine: 2, seq: 1020, count: 4}
	r.ranges[1] = claimRange{tick: 8, machine: 2, seq: 0, count: 3}
	r.n = 2
	var all []ID
	for _, share := range []struct{ offset, k, want int }{{0, 2, 2}, {2, 3, 3}, {5, 1, 1}, {6, 4, 1}, {7, 5, 0}} {
		dst := make([]ID, share.k)
		got := r.take(l, share.offset, dst)
		require.Equalf(t, share.want, got, "take(offset %d, %d)", share.offset, share.k)
		all = append(all, dst[:got]...)
	}
	want := []ID{
		l.compose(7, 2, 1020), l.compose(7, 2, 1021), l.compose(7, 2, 1022), l.compose(7, 2, 1023),
		l.compose(8, 2, 0), l.compose(8, 2, 1), l.compose(8, 2, 2),
	}
	assert.Equal(t, want, all, "shares cover the claims once, in order")
}

// Far more closed-loop callers than a tick has IDs, on the real clock:
// every ID is distinct, and a call fails only with ErrSequenceExhausted, the
// error of demand above the layout's ceiling. How many fail, and whether
// callers are served in turn, depends on how the machine schedules them:
// BenchmarkOverload measures it.
func TestOverloadKeepsIDsUnique(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		l       Layout
		callers int
	}{
		{"256 callers, default layout", DefaultLayout(), 256},
		{"32 callers, 2 IDs a tick", Layout{TimeBits: 57, MachineBits: 5, SequenceBits: 1, Epoch: DefaultLayout().Epoch, Tick: time.Millisecond}, 32},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g, err := New(t.Context(), WithMachineID(1), WithLayout(tt.l), WithMaxWait(100*time.Millisecond))
			require.NoError(t, err)
			ids, failed := loopCallers(t, g, tt.callers, 300*time.Millisecond)
			all := slices.Concat(ids...)
			assert.NotEmpty(t, all)
			assert.Equal(t, uint64(len(all)), g.Stats().Issued, "every ID claimed reached a caller")
			assert.Equal(t, uint64(failed), g.Stats().Failed.SequenceExhausted, "failures counted")
		})
	}
}

// loopCallers runs n goroutines calling g.NextID in a loop for d and
// returns the IDs each got and the number of calls that failed, which must
// have failed with ErrSequenceExhausted. It fails the test if an ID was
// issued twice.
func loopCallers(t *testing.T, g *Generator, n int, d time.Duration) (ids [][]ID, failed int64) {
	t.Helper()
	var (
		stop  atomic.Bool
		wg    sync.WaitGroup
		fails atomic.Int64
	)
	ids = make([][]ID, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				id, err := g.NextID()
				if err != nil {
					assert.ErrorIs(t, err, ErrSequenceExhausted)
					fails.Add(1)
					continue
				}
				ids[i] = append(ids[i], id)
			}
		}()
	}
	time.Sleep(d)
	stop.Store(true)
	wg.Wait()
	all := slices.Concat(ids...)
	slices.Sort(all)
	for i := 1; i < len(all); i++ {
		require.NotEqual(t, all[i-1], all[i], "ID issued twice")
	}
	return ids, fails.Load()
}

// TestRoundShareServesLongestWaitingFirst checks share: with enough IDs
// for everyone, offsets follow the order of joining; with too few, the
// callers that lost the most rounds go first and the rest get nothing.
func TestRoundShareServesLongestWaitingFirst(t *testing.T) {
	t.Parallel()
	r := &round{joiners: []joiner{{want: 1, lost: 0}, {want: 2, lost: 3}, {want: 1, lost: 1}, {want: 1, lost: 3}}}
	offsets := func() []int {
		var o []int
		for _, j := range r.joiners {
			o = append(o, j.offset)
		}
		return o
	}
	r.share(5, 5)
	assert.Equal(t, []int{0, 1, 3, 4}, offsets(), "enough for all: join order")
	r.share(3, 5)
	assert.Equal(t, []int{3, 0, 3, 2}, offsets(), "3 IDs: the two that lost 3 rounds, in join order; the rest nothing")
	r.share(4, 5)
	assert.Equal(t, []int{4, 0, 3, 2}, offsets(), "4 IDs: then the one that lost 1 round")
	r.share(0, 5)
	assert.Equal(t, []int{0, 0, 0, 0}, offsets(), "nothing claimed: every share is empty")
}

// waitLayout has 4 IDs per 1 ms tick, so that callers wait for the next
// tick every few IDs.
var waitLayout = Layout{TimeBits: 51, MachineBits: 10, SequenceBits: 2, Epoch: DefaultLayout().Epoch, Tick: time.Millisecond}

// A lone caller that waits for every other tick allocates nothing: the
// round is reused, and there is no channel and no error to build.
func TestLoneWaiterAllocatesNothing(t *testing.T) {
	g, err := New(t.Context(), WithMachineID(1), WithLayout(waitLayout), WithMaxWait(time.Second))
	require.NoError(t, err)
	allocs := testing.AllocsPerRun(100, func() {
		for range 5 { // 5 IDs from a 4-ID tick: at least one wait per run
			if _, err := g.NextID(); err != nil {
				t.Fatal(err)
			}
		}
	})
	assert.Zero(t, allocs, "allocations per run of 5 NextIDs, with a wait")
	assert.GreaterOrEqual(t, g.Stats().Waits, uint64(100), "the runs waited")
}

// Followers wait on the round's gate, and rounds are reused, so many
// callers waiting for every tick allocate nothing either. The bound
// tolerates the runtime's own stray allocations (sudogs for blocked
// goroutines, until its caches settle); a scheme that allocated per tick,
// or per waiter, would make hundreds.
func TestFollowersAllocateNothing(t *testing.T) {
	g, err := New(t.Context(), WithMachineID(1), WithLayout(waitLayout), WithMaxWait(time.Second))
	require.NoError(t, err)
	const goroutines = 8
	var (
		stop   atomic.Bool
		failed atomic.Int64
		wg     sync.WaitGroup
	)
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Nanosecond) // a goroutine's first sleep makes its timer
			for !stop.Load() {
				if _, err := g.NextID(); err != nil {
					failed.Add(1)
				}
			}
		}()
	}
	// Collect what earlier tests left, so that no collection starts while
	// measuring: one empties the runtime's central cache of the records a
	// blocked goroutine needs (sudogs), and refilling it allocates. Then
	// warm up: rounds made, stacks grown, the runtime's caches (sudogs,
	// timer heaps) filled, which under load can take a while, since
	// goroutines block on one processor and are woken on the other.
	runtime.GC()
	time.Sleep(100 * time.Millisecond)
	// The best of three windows: the runtime's caches may still be
	// settling in the first, but a per-tick cost shows in every one.
	best, bestTicks := uint64(math.MaxUint64), uint64(0)
	for range 3 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		issued := g.Stats().Issued
		time.Sleep(100 * time.Millisecond)
		runtime.ReadMemStats(&after)
		ticks := (g.Stats().Issued - issued) / 4
		allocs := after.Mallocs - before.Mallocs
		t.Logf("%d allocations over %d ticks", allocs, ticks)
		if allocs < best {
			best, bestTicks = allocs, ticks
		}
	}
	stop.Store(true)
	wg.Wait()

	require.Greater(t, bestTicks, uint64(25), "ticks served while measuring")
	assert.LessOrEqualf(t, best, bestTicks/10, "%d allocations over %d ticks of %d waiting callers", best, bestTicks, goroutines)
	assert.Zero(t, failed.Load(), "failed calls")
}

// TestFrozenClockWaitSleeps waits on an injected clock that never moves,
// so the tick it waits for never comes. The first wait yields the processor
// for its last stretch, as every wait does; once that stretch has passed
// without the tick, the call must sleep, not go on yielding (reading the
// clock in a loop) for all of MaxWait. It counts clock reads: a spinning
// wait made hundreds of thousands in 200 ms.
func TestFrozenClockWaitSleeps(t *testing.T) {
	t.Parallel()
	l16 := Layout{TimeBits: 49, MachineBits: 10, SequenceBits: 4, Epoch: DefaultLayout().Epoch, Tick: time.Millisecond}
	fine := l16
	fine.Tick = 50 * time.Microsecond
	for _, tt := range []struct {
		name string
		l    Layout
		into time.Duration // how far into its tick the clock is frozen
	}{
		{"1 ms tick, 950 µs in", l16, 950 * time.Microsecond},
		{"1 ms tick, at its start", l16, 0},
		{"50 µs tick", fine, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			now := tt.l.Epoch.Add(1000*tt.l.Tick + tt.into)
			var reads atomic.Int64
			g, err := New(t.Context(), WithMachineID(1), WithLayout(tt.l), WithMaxWait(200*time.Millisecond), WithClock(func() time.Time {
				reads.Add(1)
				return now
			}))
			require.NoError(t, err)
			for range 16 - g.ring.start(1000, uint64(g.state.Load().part), 1) { // the frozen tick's whole sequence, from its start
				_, err := g.NextID()
				require.NoError(t, err)
			}
			reads.Store(0)
			_, err = g.NextID()
			require.ErrorIs(t, err, ErrSequenceExhausted)
			assert.Less(t, reads.Load(), int64(5000), "clock reads while waiting 200 ms for a tick a frozen clock never shows")
			t.Logf("%d clock reads", reads.Load())
		})
	}
}

// TestTickWaitOnHealthyClockShowsTheTick has the leader's sleep wait for
// the next tick 500 times on the default clock. However late the sleep or
// a yield wakes, sleepUntil must report the tick reached, or the call would
// give up precise waits for plain sleeps (about 1 ms late) on a healthy
// clock. Ending the yield window without reading the clock again reported
// a miss in 3-16 of 500 waits.
func TestTickWaitOnHealthyClockShowsTheTick(t *testing.T) {
	t.Parallel()
	g, err := New(t.Context(), WithMachineID(1), WithLayout(waitLayout))
	require.NoError(t, err)
	misses := 0
	for range 500 {
		_, off := g.read()
		tick, ok := g.layout.ticksAt(off, g.maxTicks, g.recip)
		require.True(t, ok)
		if !g.sleepUntil(tick+1, g.span(tick+1)-off, true) {
			misses++
		}
	}
	assert.Zero(t, misses, "waits for the next tick that reported it not reached, on the default clock")
}

// An injected clock that panics while a round's leader holds the gate
// must not strand the followers: the leader's caller gets the panic, each
// follower still returns within MaxWait, and later callers can lead rounds
// again. With 20 ms ticks the leader's sleep is a plain one, so its first
// clock read after the follower joined is its claim's; the clock panics on
// that read, so the test does not depend on timing. TestAbandon covers a
// panic earlier in the leader's sleep.
func TestLeaderPanicLetsFollowersGo(t *testing.T) {
	for _, tt := range []struct {
		name  string
		moved bool // the clock reaches the tick the round waits for
	}{
		{"frozen clock", false},
		{"moved clock", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l := Layout{TimeBits: 55, MachineBits: 7, SequenceBits: 1, Epoch: time.Unix(0, 0), Tick: 20 * time.Millisecond}
			var now atomic.Int64
			now.Store(int64(1000 * l.Tick))
			var fuse atomic.Bool // the clock panics on the first read once set
			g, err := New(t.Context(), WithMachineID(1), WithLayout(l), WithMaxWait(300*time.Millisecond), WithClock(func() time.Time {
				if fuse.CompareAndSwap(true, false) {
					panic("clock failed")
				}
				return time.Unix(0, now.Load())
			}))
			require.NoError(t, err)
			for range 2 { // the tick's two IDs
				_, err := g.NextID()
				require.NoError(t, err)
			}
			leader := make(chan any, 1)
			go func() {
				defer func() { leader <- recover() }()
				_, _ = g.NextID() // leads the round for the next tick
			}()
			require.Eventually(t, func() bool { return roundUsers(g) == 1 }, time.Second, 100*time.Microsecond, "the leader should start a round")
			follower := make(chan error, 1)
			go func() {
				_, err := g.NextID()
				follower <- err
			}()
			require.Eventually(t, func() bool { return roundUsers(g) == 2 }, time.Second, 100*time.Microsecond, "the follower should join the round")
			if tt.moved {
				now.Add(int64(l.Tick))
			}
			fuse.Store(true)

			select {
			case v := <-leader:
				assert.Equal(t, "clock failed", v, "the leader's caller gets the clock's panic")
			case <-time.After(5 * time.Second):
				t.Fatal("the leader never read the clock again")
			}
			select {
			case err := <-follower:
				if !tt.moved {
					assert.ErrorIs(t, err, ErrSequenceExhausted, "the clock stays frozen, so the follower runs out of MaxWait")
				} else {
					assert.NoError(t, err, "the follower gets an ID of the tick the clock reached")
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the follower is still waiting 5 s after the leader's panic, with MaxWait 300ms")
			}
			now.Add(int64(l.Tick))
			_, err = g.NextID()
			assert.NoError(t, err, "the generator serves again once the clock moves")
		})
	}
}

// roundUsers returns how many callers share the round being slept, or 0.
func roundUsers(g *Generator) int32 {
	g.ticks.mu.Lock()
	defer g.ticks.mu.Unlock()
	if g.ticks.cur == nil {
		return 0
	}
	return g.ticks.cur.users.Load()
}

// TestAbandon ends a round whose leader stopped in its sleep, with claims
// already in its ranges and no offsets written: both kinds of follower
// (one waiting on the gate, one whose context can be done) return at once
// with nothing, rather than all take the same IDs from offset 0, and the
// round is no longer open to join.
func TestAbandon(t *testing.T) {
	g, err := New(t.Context(), WithMachineID(1), WithLayout(waitLayout), WithMaxWait(time.Minute))
	require.NoError(t, err)
	tw := &g.ticks
	r := newRound()
	r.tick, r.wakeAt = 7, time.Now()
	r.joiners = append(r.joiners, joiner{want: 1})
	r.ranges[0] = claimRange{tick: 7, seq: 0, count: 4}
	r.n = 1
	r.users.Store(1)
	r.open = true
	tw.cur = r

	results := make(chan int, 2)
	for range 2 {
		go func() {
			a := attempt{start: time.Now()}
			results <- tw.wait(g, &a, 7, time.Hour, make([]ID, 1))
		}()
	}
	require.Eventually(t, func() bool { return r.users.Load() == 3 }, 5*time.Second, 100*time.Microsecond, "both followers should join")
	tw.abandon(r)
	for range 2 {
		select {
		case res := <-results:
			assert.Zero(t, res, "a follower of an abandoned round gets nothing")
		case <-time.After(5 * time.Second):
			t.Fatal("a follower is still waiting after the round was abandoned")
		}
	}
	tw.mu.Lock()
	defer tw.mu.Unlock()
	assert.Nil(t, tw.cur, "no one may join an abandoned round")
	assert.Same(t, r, tw.free, "the round is reused once its followers are done")
}

// A step back longer than the ring, once the ring's later ticks are used
// up: no tick before the clock passes them can serve, so a caller sleeps
// until then instead of waking every tick (which, with thousands of
// callers, burned the CPU), and fails at once when that is past MaxWait.
func TestExhaustedRingWaitsForTheServableTick(t *testing.T) {
	t.Parallel()
	l := Layout{TimeBits: 51, MachineBits: 10, SequenceBits: 2, Epoch: DefaultLayout().Epoch, Tick: time.Millisecond}
	var (
		reads atomic.Int64
		back  atomic.Int64 // how far the clock is stepped back
	)
	start := time.Now()
	clock := func() time.Time {
		reads.Add(1)
		return l.Epoch.Add(1000*l.Tick + time.Since(start) - time.Duration(back.Load()))
	}
	g, err := New(t.Context(), WithMachineID(1), WithLayout(l), WithRingSize(1), WithMaxWait(time.Second), WithClock(clock))
	require.NoError(t, err)
	fillSlot(t, g) // the current tick's whole sequence, from its start
	latest := g.latest.Load()
	back.Store(int64(40 * time.Millisecond))
	reads.Store(0)
	id, err := g.NextID()
	require.NoError(t, err, "the clock passes the full tick within MaxWait")
	assert.Greater(t, l.Decompose(id).Ticks, latest, "the ID comes from a tick after the full one")
	assert.Less(t, reads.Load(), int64(20), "clock reads while waiting about 40 ticks (one wake-up per tick would read far more)")
	t.Logf("%d clock reads", reads.Load())

	g2, err := New(t.Context(), WithMachineID(1), WithLayout(l), WithRingSize(1), WithMaxWait(10*time.Millisecond), WithClock(clock))
	require.NoError(t, err)
	back.Store(0)
	fillSlot(t, g2)
	back.Store(int64(500 * time.Millisecond))
	_, err = g2.NextID()
	require.ErrorIs(t, err, ErrClockBehind)
	var ce *ClockError
	require.ErrorAs(t, err, &ce)
	assert.Zero(t, ce.Waited, "a wait that cannot end within MaxWait fails at once")
}

// fillSlot issues from g, a generator with a ring of one slot, until the
// slot's tick is used up.
func fillSlot(t *testing.T, g *Generator) {
	t.Helper()
	for g.ring.slots[0].Load()&g.ring.seqMask != g.ring.seqMask {
		_, err := g.NextID()
		require.NoError(t, err)
	}
}

// A caller that read the clock at tick 1000 and was descheduled while
// ticks 1001-1029 were used up finds them exhausted; the clock meanwhile
// shows 1030, which has room. Judged from the old reading, the wait would
// be 29 ticks, past MaxWait: pause must read the clock again and send the
// caller round at once rather than sleep or fail.
func TestPauseRereadsAStaleReading(t *testing.T) {
	t.Parallel()
	l := Layout{TimeBits: 51, MachineBits: 10, SequenceBits: 2, Epoch: DefaultLayout().Epoch, Tick: time.Millisecond}
	now := l.Epoch.Add(1030*time.Millisecond + 100*time.Microsecond)
	g, err := New(t.Context(), WithMachineID(1), WithLayout(l), WithRingSize(64), WithMaxWait(20*time.Millisecond), WithClock(func() time.Time { return now }))
	require.NoError(t, err)
	r := &g.ring
	for u := int64(1000); u < 1030; u++ {
		r.slot(u).Store(uint64(u+1)<<r.seqBits | r.seqMask) // used up while the caller was away
	}
	g.latest.Store(1030)
	stale := 1000*time.Millisecond + 500*time.Microsecond
	a := attempt{r: reading{t: now}, d: stale, ticks: 1000, latest: 1030, st: g.state.Load(), cs: exhausted, t: 1000}
	start := time.Now()
	n, err := g.pause(&a, make([]ID, 1))
	assert.NoError(t, err, "the clock already shows a tick with room")
	assert.Zero(t, n)
	assert.True(t, a.start.IsZero(), "pause should not have slept (it took %v)", time.Since(start))
	id, err := g.NextID()
	require.NoError(t, err)
	assert.Equal(t, int64(1030), l.Decompose(id).Ticks)
}

// A clock that flips between two readings, a tick apart, at a point where
// the ring is used up for many ticks: the fresh reading is always ahead of
// the one the claim used, and going round again on it each time would never
// end. The call must end, within its MaxWait.
func TestFlippingClockCannotLoopTheCall(t *testing.T) {
	t.Parallel()
	l := Layout{TimeBits: 51, MachineBits: 10, SequenceBits: 2, Epoch: DefaultLayout().Epoch, Tick: time.Millisecond}
	var reads atomic.Int64
	g, err := New(t.Context(), WithMachineID(1), WithLayout(l), WithRingSize(64), WithMaxWait(-1), WithClock(func() time.Time {
		return l.Epoch.Add(time.Duration(1000+(reads.Add(1)+1)%2) * time.Millisecond) // 1000, 1001, 1000, ...: each claim reads 1000
	}))
	require.NoError(t, err)
	r := &g.ring
	for u := int64(1000); u < 1064; u++ {
		r.slot(u).Store(uint64(u+1+64)<<r.seqBits | r.seqMask) // every slot used up 64 ticks on
	}
	done := make(chan error, 1)
	go func() {
		_, err := g.NextID()
		done <- err
	}()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, ErrClockBehind)
	case <-time.After(5 * time.Second):
		t.Fatalf("NextID still going round after 5 s and %d clock reads, with a MaxWait that never waits", reads.Load())
	}
}

// TestWaitsEndUnderSynctest checks that the waits for a tick end inside a
// testing/synctest bubble, whose virtual time moves only while every
// goroutine in it is durably blocked. A follower of a tick's round blocked
// on a mutex, or a leader yielding the processor until the clock shows the
// tick, keeps virtual time still: the tick never comes and the call hangs.
// Each case issues three ticks' worth of IDs at one instant, so that the
// callers wait for the next ticks; a case that has not ended after a
// minute of real time has hung.
func TestWaitsEndUnderSynctest(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		callers int
		opts    []Option
	}{
		// A 1 ms tick on the default clock: the leader's wait is a precise
		// sleep and then a yield until the clock shows the tick.
		{"one caller, default clock", 1, []Option{WithLayout(layoutOf(time.Millisecond))}},
		// A 10 ms tick: the leader sleeps on a timer, and the followers wait
		// for its claim.
		{"four callers, a 10 ms tick", 4, []Option{WithClock(time.Now), WithLayout(layoutOf(10 * time.Millisecond))}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ended := make(chan struct{})
			var ids []ID
			go func() {
				defer close(ended)
				synctest.Test(t, func(t *testing.T) {
					g, err := New(context.Background(), append(tc.opts, WithMachineID(1))...)
					require.NoError(t, err)
					var mu sync.Mutex
					var wg sync.WaitGroup
					for range tc.callers {
						wg.Go(func() {
							got := make([]ID, 0, 3*4096/tc.callers)
							for range cap(got) {
								id, err := g.NextID()
								if !assert.NoError(t, err) {
									return
								}
								got = append(got, id)
							}
							mu.Lock()
							ids = append(ids, got...)
							mu.Unlock()
						})
					}
					wg.Wait()
				})
			}()
			select {
			case <-ended:
			case <-time.After(time.Minute):
				t.Fatal("the calls did not end within a minute of real time: a wait keeps the bubble's virtual time still")
			}
			seen := make(map[ID]bool, len(ids))
			for _, id := range ids {
				require.Falsef(t, seen[id], "ID %d issued twice", id)
				seen[id] = true
			}
			assert.Len(t, ids, 3*4096/tc.callers*tc.callers, "every call returned an ID")
		})
	}
}

// layoutOf is the default split with tick, from an epoch before the
// bubble's time, which starts in 2000.
func layoutOf(tick time.Duration) Layout {
	return Layout{TimeBits: 41, MachineBits: 10, SequenceBits: 12, Tick: tick, Epoch: time.Date(1999, 1, 1, 0, 0, 0, 0, time.UTC)}
}
