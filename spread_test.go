package ringflake

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake/internal/fakeclock"
)

// The target of issue 23: at one ID every 2 ms, id % 16 passes a
// chi-square test at p = 0.001 (below 37.7 with 15 degrees of freedom) and
// id % 1024 uses at least 700 of its 1024 buckets (uniform gives about
// 880). N that are not powers of two are held to the same: id % 10 below
// 27.9 (9 degrees of freedom), id % 1000 using 700 buckets. The clocks are
// injected, so the figures are the same on every run.
const (
	chi2Max16   = 37.7
	chi2Max10   = 27.9
	minUsed1024 = 700
)

// modBuckets returns Pearson's chi-square statistic of ids counted by
// id % n, against n equal buckets, and how many of the buckets are used.
func modBuckets(ids []ID, n int) (chi2 float64, used int) {
	counts := make([]int, n)
	for _, id := range ids {
		counts[int64(id)%int64(n)]++
	}
	want := float64(len(ids)) / float64(n)
	for _, c := range counts {
		d := float64(c) - want
		chi2 += d * d / want
		if c > 0 {
			used++
		}
	}
	return chi2, used
}

// checkSpread asserts the target on ids.
func checkSpread(t *testing.T, what string, ids []ID) {
	t.Helper()
	chi2, _ := modBuckets(ids, 16)
	_, used := modBuckets(ids, 1024)
	chi2Ten, _ := modBuckets(ids, 10)
	_, usedThousand := modBuckets(ids, 1000)
	t.Logf("%s: %d IDs, id %% 16 chi-square %.1f, id %% 1024 uses %d buckets; id %% 10 chi-square %.1f, id %% 1000 uses %d",
		what, len(ids), chi2, used, chi2Ten, usedThousand)
	assert.Lessf(t, chi2, chi2Max16, "%s: chi-square of id %% 16", what)
	assert.GreaterOrEqualf(t, used, minUsed1024, "%s: buckets of id %% 1024 used", what)
	assert.Lessf(t, chi2Ten, chi2Max10, "%s: chi-square of id %% 10", what)
	assert.GreaterOrEqualf(t, usedThousand, minUsed1024, "%s: buckets of id %% 1000 used", what)
}

var spreadFrom = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// newSpreadGen returns a default-layout generator for machine on clock,
// which never waits: a tick too full for a call is an error.
func newSpreadGen(t *testing.T, machine int64, clock *fakeclock.Clock) *Generator {
	t.Helper()
	g, err := New(t.Context(), WithMachineID(machine), WithClock(clock.Now), WithMaxWait(-1))
	require.NoError(t, err)
	return g
}

// nextIDs issues n IDs from g and fails t on any error.
func nextIDs(t *testing.T, g *Generator, n int, into []ID) []ID {
	t.Helper()
	for range n {
		id, err := g.NextID()
		require.NoError(t, err)
		into = append(into, id)
	}
	return into
}

// One ID every 2 ms, from one generator and from four pooled: with every
// tick starting at 0, id % 16 put 2,254 of 2,259 IDs in bucket 0.
func TestSpreadLowTraffic(t *testing.T) {
	t.Parallel()
	for _, machine := range []int64{0, 1, 42, 1023} {
		clock := fakeclock.New(spreadFrom)
		g := newSpreadGen(t, machine, clock)
		var ids []ID
		for range 2000 {
			ids = nextIDs(t, g, 1, ids)
			clock.Add(2 * time.Millisecond)
		}
		checkSpread(t, "machine "+strconv.FormatInt(machine, 10), ids)
	}

	// Four machines at the same ticks, so that machines which started
	// their ticks alike would show it.
	clock := fakeclock.New(spreadFrom)
	var gens []*Generator
	for _, m := range []int64{1, 2, 3, 4} {
		gens = append(gens, newSpreadGen(t, m, clock))
	}
	var pooled []ID
	for range 500 {
		for _, g := range gens {
			pooled = nextIDs(t, g, 1, pooled)
		}
		clock.Add(2 * time.Millisecond)
	}
	checkSpread(t, "machines 1-4 pooled", pooled)
}

// Ticks of 10 and of 500 IDs: each tick starts where the one before it
// leaves room, which at these loads is still most of the lower half, and
// its IDs follow on from there. The IDs of one caller still increase.
func TestSpreadModerateTraffic(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		perTick, ticks int
	}{
		{10, 200},
		{500, 20},
	} {
		clock := fakeclock.New(spreadFrom)
		g := newSpreadGen(t, 7, clock)
		var ids []ID
		for range tt.ticks {
			ids = nextIDs(t, g, tt.perTick, ids) // MaxWait 0: every tick holds its demand
			clock.Add(time.Millisecond)
		}
		checkSpread(t, strconv.Itoa(tt.perTick)+" IDs a tick", ids)
		for i := 1; i < len(ids); i++ {
			require.Greaterf(t, ids[i], ids[i-1], "ID %d of one caller, under a clock that does not go back", i)
		}
	}
}

// Demand that fills every tick keeps the whole ceiling: the first tick
// holds what its start leaves, and every tick after a full one starts at 0
// and holds all 4096. Callers ask one ID at a time, as NextID's do; nothing
// waits (MaxWait 0), so the counts are exact.
func TestSpreadKeepsTheCeiling(t *testing.T) {
	t.Parallel()
	const ticks, perTick = 200, 4096 // the first tick's start can cost at most 0.25 %
	clock := fakeclock.New(spreadFrom)
	g := newSpreadGen(t, 9, clock)
	total := 0
	for tick := range ticks {
		start := g.ring.start(g.nowTicks(t, clock), uint64(g.state.Load().part), 1)
		var ids []ID
		for {
			id, err := g.NextID()
			if err != nil {
				require.ErrorIsf(t, err, ErrSequenceExhausted, "tick %d", tick)
				break
			}
			ids = append(ids, id)
		}
		total += len(ids)
		if tick == 0 {
			assert.Equal(t, perTick-int(start), len(ids), "the first tick holds what its start leaves")
		} else {
			require.Lenf(t, ids, perTick, "tick %d, after a full one", tick)
			assert.Zerof(t, g.layout.Decompose(ids[0]).Sequence, "tick %d, after a full one, starts at 0", tick)
			chi2, used := modBuckets(ids, 1024)
			require.Truef(t, chi2 == 0 && used == 1024, "tick %d: id %% 1024 puts 4 IDs in every bucket", tick)
			chi2, _ = modBuckets(ids, 10)
			assert.Lessf(t, chi2, chi2Max10, "tick %d: chi-square of id %% 10", tick)
		}
		clock.Add(time.Millisecond)
	}
	assert.GreaterOrEqual(t, float64(total)/(ticks*perTick), 0.995, "of the ceiling")
	assert.Equal(t, uint64(total), g.Stats().Issued, "Issued counts what was issued, not the sequences passed over")
}

// A process that misses a few ticks at saturation (descheduled, or a
// pause) comes back to a tick whose predecessors are unused or part-filled;
// it must still start at 0, as long as a full tick is within the last 16.
// After a longer pause the demand is new, and the start is spread again.
func TestSpreadKeepsTheCeilingAcrossAPause(t *testing.T) {
	t.Parallel()
	clock := fakeclock.New(spreadFrom)
	g := newSpreadGen(t, 9, clock)
	fill := func() []ID { // the tick's IDs, one NextID at a time, until it is used up
		var ids []ID
		for {
			id, err := g.NextID()
			if err != nil {
				require.ErrorIs(t, err, ErrSequenceExhausted)
				return ids
			}
			ids = append(ids, id)
		}
	}
	fill()
	clock.Add(time.Millisecond)
	require.Len(t, fill(), 4096, "a tick after a full one")
	for _, pause := range []int{1, 3, 15} {
		clock.Add(time.Millisecond)
		nextIDs(t, g, 1000, nil) // a tick the pause cut short
		clock.Add(time.Duration(pause) * time.Millisecond)
		ids := fill()
		assert.Lenf(t, ids, 4096, "the tick after a pause of %d ticks", pause)
		clock.Add(time.Millisecond)
		fill() // full again
	}
	clock.Add(100 * time.Millisecond)
	want := 4096 - int(g.ring.start(g.nowTicks(t, clock), uint64(g.state.Load().part), 1))
	assert.Equal(t, want, len(fill()), "after 100 quiet ticks, the tick holds what its start leaves")
	assert.Less(t, want, 4096, "and at this tick the start is above 0")
}

// A batch into a quiet tick starts low enough to fit whole, up to the
// whole tick; a NextID into the same quiet tick starts anywhere below half.
func TestSpreadBatchFitsWhole(t *testing.T) {
	t.Parallel()
	clock := fakeclock.New(spreadFrom)
	g := newSpreadGen(t, 9, clock)
	for _, n := range []int{1000, 2049, 3000, 4095, 4096} {
		dst := make([]ID, n)
		got, err := g.NextN(dst)
		require.NoErrorf(t, err, "a batch of %d into a quiet tick", n)
		require.Equal(t, n, got)
		p, q := g.layout.Decompose(dst[0]), g.layout.Decompose(dst[n-1])
		assert.Equalf(t, p.Ticks, q.Ticks, "a batch of %d in one tick", n)
		assert.LessOrEqualf(t, p.Sequence, int64(4096-n), "a batch of %d starts where it fits", n)
		clock.Add(2 * time.Millisecond) // a quiet tick between batches
	}
}

// nowTicks returns the tick clock shows, by g's layout.
func (g *Generator) nowTicks(t *testing.T, clock *fakeclock.Clock) int64 {
	t.Helper()
	ticks, ok := g.layout.ticksAt(clock.Now().Sub(g.layout.Epoch), g.maxTicks, g.recip)
	require.True(t, ok)
	return ticks
}

// Any demand that is the same every tick fits in every tick after the
// first, up to the whole tick, and up to half plus one in the first too,
// asked one at a time; asked as one batch, it fits from the first tick.
// Every sequence width of a small ring, every demand, many ticks.
func TestRingStartsLeaveRoomForSteadyDemand(t *testing.T) {
	t.Parallel()
	for seqBits := 1; seqBits <= 6; seqBits++ {
		size := uint64(1) << seqBits
		key := uint64(5) << uint(seqBits)
		for demand := uint64(1); demand <= size; demand++ {
			ones, batches := newTestRing(8, seqBits), newTestRing(8, seqBits)
			for tick := int64(100); tick < 300; tick++ {
				got := uint64(0)
				for range demand {
					if _, _, n, st := ones.claim(tick, 1, open, key); st == claimed {
						got += n
					}
				}
				if tick > 100 || demand <= ones.half+1 {
					require.Equalf(t, demand, got, "seqBits %d, demand %d one at a time, tick %d", seqBits, demand, tick)
				}
				_, _, n, st := batches.claim(tick, demand, open, key)
				require.Equal(t, claimed, st)
				require.Equalf(t, demand, n, "seqBits %d, a batch of %d, tick %d", seqBits, demand, tick)
			}
		}
	}
}

// A tick starts below half the sequence space, and low enough to hold both
// what each of the 16 ticks before it issued and the claim that starts it:
// span is half, or less, 9-need, where need is the larger of n and, for
// each of those ticks whose slot still holds it with last sequence L, L+1.
func TestRingStartLeavesRoom(t *testing.T) {
	t.Parallel()
	const half, key = 4, 9 << 3
	// used stores, for each back, tick-back used up to last.
	used := func(last uint64, backs ...int64) func(r *ring, tick int64) {
		return func(r *ring, tick int64) {
			for _, b := range backs {
				r.slot(tick - b).Store(uint64(tick-b+1)<<3 | last)
			}
		}
	}
	quiet := func(*ring, int64) {}
	tests := []struct {
		name  string
		setup func(r *ring, tick int64) // the slots before tick
		n     uint64
		span  uint64
	}{
		{"the ticks before unused", quiet, 1, half},
		{"tick-1 used up to 2", used(2, 1), 1, half},
		{"tick-1 used up to 5", used(5, 1), 1, 3},
		{"tick-1 used up to 6", used(6, 1), 1, 2},
		{"tick-1 full", used(7, 1), 1, 1},
		{"tick-3 full, tick-1 unused", used(7, 3), 1, 1},
		{"tick-16 full", used(7, 16), 1, 1},
		{"tick-17 full, past the look-back", used(7, 17), 1, half},
		{"tick-5 used up to 6, tick-1 up to 2", func(r *ring, tick int64) { used(6, 5)(r, tick); used(2, 1)(r, tick) }, 1, 2},
		{"the slot of tick-1 holds an older tick", func(r *ring, tick int64) { r.slot(tick - 1).Store(uint64(tick-32)<<3 | 7) }, 1, half},
		{"the slot of tick-1 holds a newer tick", func(r *ring, tick int64) { r.slot(tick - 1).Store(uint64(tick+32)<<3 | 7) }, 1, half},
		{"a batch of 5", quiet, 5, half},
		{"a batch of 6", quiet, 6, 3},
		{"a batch of 8, the whole tick", quiet, 8, 1},
		{"a batch of more than the tick", quiet, 100, 1},
		{"a batch of 6 after a tick used up to 6", used(6, 1), 6, 2},
		{"a batch of 7 after a tick used up to 2", used(2, 1), 7, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			seen := map[uint64]bool{}
			for tick := int64(1000); tick < 3000; tick++ {
				r := newTestRing(32, 3)
				tt.setup(r, tick)
				s := r.start(tick, key, tt.n)
				require.Lessf(t, s, tt.span, "tick %d starts at %d", tick, s)
				seen[s] = true
			}
			assert.Len(t, seen, int(tt.span), "2000 ticks start at every sequence below the span")
		})
	}
}
