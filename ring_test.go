package ringflake

import (
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"
)

var open = bounds{floor: -1, ceil: 1<<62 - 1}

func TestRingSlotEncoding(t *testing.T) {
	t.Parallel()
	r := newTestRing(4, 3) // 8 sequences per tick
	tests := []struct {
		name      string
		tick      int64
		seq       uint64
		wantValue uint64
	}{
		{"tick 0 seq 0 is not the empty slot", 0, 0, 1 << 3},
		{"tick 0 last seq", 0, 7, 1<<3 | 7},
		{"tick 5 seq 2", 5, 2, 6<<3 | 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newTestRing(4, 3)
			slot := &r.slots[uint64(tt.tick)%r.size]
			if tt.seq > 0 {
				slot.Store(uint64(tt.tick+1)<<3 | (tt.seq - 1))
			}
			got, seq, n, st := r.claim(tt.tick, 1, open)
			require.Equal(t, claimed, st)
			assert.Equal(t, tt.tick, got, "tick")
			assert.Equal(t, tt.seq, seq, "sequence")
			assert.Equal(t, uint64(1), n, "count")
			assert.Equal(t, tt.wantValue, slot.Load(), "packed slot value")
		})
	}
	// Packed values order like (tick, sequence) pairs.
	assert.Less(t, uint64(1)<<r.seqBits|r.seqMask, uint64(2)<<r.seqBits, "(0,max) < (1,0)")
}

// The seed design stored the last ID itself and used 0 for "empty", so at
// tick 0 with machine 0 it issued ID 0 twice. The packed (tick+1) avoids it.
func TestRingTickZeroIsNotReissued(t *testing.T) {
	t.Parallel()
	r := newTestRing(1, 2)
	var got []uint64
	for {
		tick, seq, _, st := r.claim(0, 1, open)
		if st != claimed {
			assert.Equal(t, exhausted, st)
			break
		}
		require.Equal(t, int64(0), tick)
		got = append(got, seq)
	}
	assert.Equal(t, []uint64{0, 1, 2, 3}, got, "each sequence of tick 0 exactly once")
}

func TestRingClaimBranches(t *testing.T) {
	t.Parallel()
	type step struct {
		tick     int64
		n        uint64
		wantTick int64
		wantSeq  uint64
		wantN    uint64
		want     claimStatus
	}
	tests := []struct {
		name  string
		size  int
		b     bounds
		steps []step
	}{
		{"fresh then continue", 8, open, []step{
			{10, 1, 10, 0, 1, claimed},
			{10, 1, 10, 1, 1, claimed},
		}},
		{"older slot starts the new tick fresh", 8, open, []step{
			{2, 1, 2, 0, 1, claimed},
			{10, 1, 10, 0, 1, claimed}, // 10 ≡ 2 mod 8
		}},
		{"step back inside the ring continues the used tick", 8, open, []step{
			{10, 1, 10, 0, 1, claimed},
			{11, 1, 11, 0, 1, claimed},
			{10, 1, 10, 1, 1, claimed},
		}},
		{"step back inside the ring to an unused tick starts it", 8, open, []step{
			{12, 1, 12, 0, 1, claimed},
			{11, 1, 11, 0, 1, claimed},
		}},
		{"step back beyond the ring continues the newer tick", 8, open, []step{
			{18, 1, 18, 0, 1, claimed},
			{10, 1, 18, 1, 1, claimed},
			{2, 1, 18, 2, 1, claimed},
		}},
		{"exhausted reports the slot's tick", 8, open, []step{
			{18, 4, 18, 0, 4, claimed},
			{18, 1, 18, 0, 0, exhausted},
			{10, 1, 18, 0, 0, exhausted},
		}},
		{"batch stops at the end of the tick", 8, open, []step{
			{3, 3, 3, 0, 3, claimed},
			{3, 3, 3, 3, 1, claimed},
			{3, 1, 3, 0, 0, exhausted},
		}},
		{"floor refuses ticks at or below it", 8, bounds{floor: 5, ceil: 100}, []step{
			{5, 1, 5, 0, 0, belowFloor},
			{6, 1, 6, 0, 1, claimed},
		}},
		{"a newer slot's tick above the floor is used", 4, bounds{floor: 7, ceil: 100}, []step{
			{8, 1, 8, 0, 1, claimed},
			{4, 1, 8, 1, 1, claimed},
		}},
		{"ceiling refuses ticks above it", 8, bounds{floor: -1, ceil: 5}, []step{
			{6, 1, 6, 0, 0, aboveCeil},
			{5, 1, 5, 0, 1, claimed},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newTestRing(tt.size, 2)
			for i, s := range tt.steps {
				tick, seq, n, st := r.claim(s.tick, s.n, tt.b)
				require.Equalf(t, s.want, st, "step %d: claim(%d) status", i, s.tick)
				assert.Equalf(t, s.wantTick, tick, "step %d: tick", i)
				if st == claimed {
					assert.Equalf(t, s.wantSeq, seq, "step %d: sequence", i)
					assert.Equalf(t, s.wantN, n, "step %d: count", i)
				}
			}
		})
	}
}

// Many goroutines hammer one slot: every sequence of the tick is issued
// exactly once and then the slot reports exhausted to everyone.
func TestRingConcurrentClaimsOneSlot(t *testing.T) {
	t.Parallel()
	const goroutines, seqBits = 16, 10
	r := newTestRing(3, seqBits)
	results := make([][]uint64, goroutines)
	var g errgroup.Group
	for i := range goroutines {
		g.Go(func() error {
			for {
				_, seq, n, st := r.claim(7, uint64(1+i%3), open)
				if st != claimed {
					return nil
				}
				for k := range n {
					results[i] = append(results[i], seq+k)
				}
			}
		})
	}
	require.NoError(t, g.Wait())
	var all []uint64
	for _, r := range results {
		all = append(all, r...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	require.Len(t, all, 1<<seqBits, "every sequence issued")
	for i, s := range all {
		require.Equal(t, uint64(i), s, "sequence %d issued once", i)
	}
}

// A frozen clock drains the tick and then only ever sees exhausted; the
// ring never wraps into another tick's space.
func TestRingFrozenClock(t *testing.T) {
	t.Parallel()
	r := newTestRing(2, 3)
	for i := range 8 {
		_, seq, _, st := r.claim(41, 1, open)
		require.Equal(t, claimed, st)
		require.Equal(t, uint64(i), seq)
	}
	for range 100 {
		tick, _, _, st := r.claim(41, 1, open)
		require.Equal(t, exhausted, st)
		require.Equal(t, int64(41), tick)
	}
}

func TestDivideMatchesDivision(t *testing.T) {
	t.Parallel()
	divisors := []uint64{1, 2, 3, 7, 1000, 1e6, 1e6 + 1, 1e9, 3600e9, 1<<62 + 1, 1<<63 - 1}
	xs := []uint64{0, 1, 2, 999, 1000, 1001, 1e6 - 1, 1e6, 1<<32 - 1, 1 << 32, 1<<62 - 1, 1 << 62, 1<<63 - 2, 1<<63 - 1}
	for _, d := range divisors {
		r := ^uint64(0) / d
		for _, x := range xs {
			for _, v := range []uint64{x, x - x%d, x - x%d + d - 1} {
				if v >= 1<<63 {
					continue
				}
				require.Equalf(t, v/d, divide(v, d, r), "divide(%d, %d)", v, d)
			}
		}
	}
}

func FuzzDivide(f *testing.F) {
	f.Add(uint64(123456789), uint64(1e6))
	f.Fuzz(func(t *testing.T, x, d uint64) {
		x &= 1<<63 - 1
		if d == 0 || d >= 1<<63 {
			return
		}
		if got := divide(x, d, ^uint64(0)/d); got != x/d {
			t.Fatalf("divide(%d, %d) = %d; want %d", x, d, got, x/d)
		}
	})
}

func newTestRing(size, seqBits int) *ring {
	r := new(ring)
	r.init(size, seqBits)
	return r
}

func TestRingNextServable(t *testing.T) {
	t.Parallel()
	full := func(r *ring, tick int64) { r.slot(tick).Store(uint64(tick+1)<<r.seqBits | r.seqMask) }
	part := func(r *ring, tick int64) { r.slot(tick).Store(uint64(tick+1) << r.seqBits) }
	tests := []struct {
		name  string
		size  int
		setup func(r *ring)
		tick  int64
		want  int64
	}{
		{"empty ring: the next tick", 4, func(*ring) {}, 10, 11},
		{"next slot older: the next tick", 4, func(r *ring) { full(r, 7) }, 10, 11},
		{"next slot later with room: the next tick serves it", 4, func(r *ring) { part(r, 19) }, 10, 11},
		{"every slot full at later ticks: the first reading past one of them", 4,
			func(r *ring) { full(r, 17); full(r, 18); full(r, 19); full(r, 20) }, 10, 21},
		{"one slot of four free further on", 4,
			func(r *ring) { full(r, 19); full(r, 20); full(r, 17) }, 10, 14},
		{"a ring of one, full at a later tick: the tick after it", 1, func(r *ring) { full(r, 500) }, 400, 501},
		{"a ring of one at normal saturation: the next tick", 1, func(r *ring) { full(r, 400) }, 400, 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newTestRing(tt.size, 2)
			tt.setup(r)
			got := r.nextServable(tt.tick)
			assert.Equal(t, tt.want, got, "nextServable(%d)", tt.tick)
			// What it promises: no tick before it can be claimed now.
			for u := tt.tick + 1; u < got; u++ {
				_, _, _, st := r.claim(u, 1, open)
				assert.Equal(t, exhausted, st, "tick %d, before %d, should be exhausted", u, got)
			}
		})
	}
	t.Run("a ring larger than the scan", func(t *testing.T) {
		r := newTestRing(1024, 2)
		for u := int64(2000); u < 2000+1024; u++ {
			full(r, u)
		}
		got := r.nextServable(1000)
		assert.Equal(t, int64(1000+scanSlots+1), got, "past what it looked at, it says to look again")
	})
}

// nextServable's answer holds for the widest sequences a layout may have.
// (u+1)<<seqBits no longer fits in 64 bits once u+1 reaches 2^(64-seqBits),
// which a scan of 256 slots past a layout's last tick reaches with 55 or
// more sequence bits; a comparison made that way took a slot exhausted more
// than a ring's span ago for one exhausted later. The ticks here lie past
// any layout's last tick (a generator's slots never hold those, so its
// scan stops before them); the scan must not depend on that.
func TestRingNextServableWidestSequences(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		seqBits int
		size    int
		full    []int64 // ticks whose slots are exhausted
		tick    int64
		want    int64
	}{
		{"62 bits, a ring of one full at the tick", 62, 1, []int64{2}, 2, 3},
		{"62 bits, a ring of two", 62, 2, []int64{1, 2}, 1, 3},
		{"61 bits, a slot two spans old", 61, 2, []int64{6, 3}, 6, 7},
		{"55 bits, a slot two spans old", 55, 8, []int64{505, 506, 507, 508, 509, 510, 495, 504}, 505, 511},
		{"54 bits, a slot two spans old", 54, 8, []int64{1017, 1018, 1019, 1020, 1021, 1022, 1007, 1016}, 1017, 1023},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newTestRing(tt.size, tt.seqBits)
			for _, u := range tt.full {
				r.slot(u).Store(uint64(u+1)<<r.seqBits | r.seqMask)
			}
			got := r.nextServable(tt.tick)
			assert.Equal(t, tt.want, got, "nextServable(%d)", tt.tick)
			assert.Greater(t, got, tt.tick, "the servable tick comes after the one exhausted")
			for u := tt.tick + 1; u < got; u++ {
				_, _, _, st := r.claim(u, 1, open)
				assert.Equal(t, exhausted, st, "tick %d, before %d, should be exhausted", u, got)
			}
		})
	}
}
