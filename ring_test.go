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
		name string
		tick int64
		last int64 // the slot holds (tick, last) before the claim; -1 for empty
		want uint64
	}{
		{"tick 0 at its start is not the empty slot", 0, -1, 1<<3 | r.start(0, 0, 1)},
		{"tick 0 last seq", 0, 6, 1<<3 | 7},
		{"tick 5 seq 2", 5, 1, 6<<3 | 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newTestRing(4, 3)
			slot := &r.slots[uint64(tt.tick)%r.size]
			if tt.last >= 0 {
				slot.Store(uint64(tt.tick+1)<<3 | uint64(tt.last))
			}
			got, seq, n, st := r.claim(tt.tick, 1, open, 0)
			require.Equal(t, claimed, st)
			assert.Equal(t, tt.tick, got, "tick")
			assert.Equal(t, tt.want&7, seq, "sequence")
			assert.Equal(t, uint64(1), n, "count")
			assert.Equal(t, tt.want, slot.Load(), "packed slot value")
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
	start := r.start(0, 0, 1)
	var got []uint64
	for {
		tick, seq, _, st := r.claim(0, 1, open, 0)
		if st != claimed {
			assert.Equal(t, exhausted, st)
			break
		}
		require.Equal(t, int64(0), tick)
		got = append(got, seq)
	}
	assert.Equal(t, seqs(start, 4), got, "each sequence of tick 0 from its start, exactly once")
}

// seqs returns the sequences from first up to end, exclusive.
func seqs(first, end uint64) []uint64 {
	var s []uint64
	for q := first; q < end; q++ {
		s = append(s, q)
	}
	return s
}

// TestRingClaimBranches walks claim through its cases. A claimed step must
// issue its tick's next sequence: the tick's start, computed beforehand,
// if the step starts it, else one past the tick's last; and as many as the
// step asked for, up to the end of the tick.
func TestRingClaimBranches(t *testing.T) {
	t.Parallel()
	type step struct {
		tick     int64
		n        uint64
		wantTick int64
		want     claimStatus
	}
	tests := []struct {
		name  string
		size  int
		b     bounds
		steps []step
	}{
		{"fresh then continue", 8, open, []step{
			{10, 1, 10, claimed},
			{10, 1, 10, claimed},
		}},
		{"older slot starts the new tick fresh", 8, open, []step{
			{2, 1, 2, claimed},
			{10, 1, 10, claimed}, // 10 ≡ 2 mod 8
		}},
		{"step back inside the ring continues the used tick", 8, open, []step{
			{10, 1, 10, claimed},
			{11, 1, 11, claimed},
			{10, 1, 10, claimed},
		}},
		{"step back inside the ring to an unused tick starts it", 8, open, []step{
			{12, 1, 12, claimed},
			{11, 1, 11, claimed},
		}},
		{"step back beyond the ring continues the newer tick", 8, open, []step{
			{18, 1, 18, claimed},
			{10, 1, 18, claimed},
			{2, 1, 18, claimed},
		}},
		{"exhausted reports the slot's tick", 8, open, []step{
			{18, 8, 18, claimed},
			{18, 1, 18, exhausted},
			{10, 1, 18, exhausted},
		}},
		{"batch stops at the end of the tick", 8, open, []step{
			{3, 4, 3, claimed},
			{3, 4, 3, claimed},
			{3, 1, 3, exhausted},
		}},
		{"floor refuses ticks at or below it", 8, bounds{floor: 5, ceil: 100}, []step{
			{5, 1, 5, belowFloor},
			{6, 1, 6, claimed},
		}},
		{"a newer slot's tick above the floor is used", 4, bounds{floor: 7, ceil: 100}, []step{
			{8, 1, 8, claimed},
			{4, 1, 8, claimed},
		}},
		{"ceiling refuses ticks above it", 8, bounds{floor: -1, ceil: 5}, []step{
			{6, 1, 6, aboveCeil},
			{5, 1, 5, claimed},
		}},
	}
	const key = 3 << 3
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newTestRing(tt.size, 3)
			next := map[int64]uint64{} // each tick's next sequence, once started
			for i, s := range tt.steps {
				first, started := next[s.wantTick]
				if !started {
					first = r.start(s.wantTick, key, s.n)
				}
				tick, seq, n, st := r.claim(s.tick, s.n, tt.b, key)
				require.Equalf(t, s.want, st, "step %d: claim(%d) status", i, s.tick)
				assert.Equalf(t, s.wantTick, tick, "step %d: tick", i)
				if st == claimed {
					assert.Equalf(t, first, seq, "step %d: sequence", i)
					assert.Equalf(t, min(s.n, 8-first), n, "step %d: count", i)
					next[tick] = seq + n
				}
			}
		})
	}
}

// Many goroutines hammer one slot: every sequence of the tick from its start
// is issued exactly once and then the slot reports exhausted to everyone.
func TestRingConcurrentClaimsOneSlot(t *testing.T) {
	t.Parallel()
	const goroutines, seqBits = 16, 10
	r := newTestRing(3, seqBits)
	start := r.start(7, 0, 1) // every claim here asks for 3 at most, far below half the tick
	results := make([][]uint64, goroutines)
	var g errgroup.Group
	for i := range goroutines {
		g.Go(func() error {
			for {
				_, seq, n, st := r.claim(7, uint64(1+i%3), open, 0)
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
	require.Equal(t, seqs(start, 1<<seqBits), all, "every sequence from the tick's start issued once")
}

// A frozen clock drains the tick and then only ever sees exhausted; the
// ring never wraps into another tick's space.
func TestRingFrozenClock(t *testing.T) {
	t.Parallel()
	r := newTestRing(2, 3)
	start := r.start(41, 0, 1)
	for i := start; i < 8; i++ {
		_, seq, _, st := r.claim(41, 1, open, 0)
		require.Equal(t, claimed, st)
		require.Equal(t, i, seq)
	}
	for range 100 {
		tick, _, _, st := r.claim(41, 1, open, 0)
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
				_, _, _, st := r.claim(u, 1, open, 0)
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
				_, _, _, st := r.claim(u, 1, open, 0)
				assert.Equal(t, exhausted, st, "tick %d, before %d, should be exhausted", u, got)
			}
		})
	}
}

// FuzzRingClaim drives a ring through claims at the ticks of a fuzzed walk,
// with steps back shorter and longer than the ring, and batches of fuzzed
// sizes. Each claim must do what its case says: a tick that starts fresh
// starts below half its sequence space, and low enough to hold again what
// each recent tick issued; any other claim goes on from the slot's last
// sequence, or reports the slot exhausted. Across all claims no (tick, sequence) is
// issued twice, and issued counts exactly what was issued.
func FuzzRingClaim(f *testing.F) {
	f.Add(uint8(4), uint8(3), uint16(7), []byte{1, 2, 0, 9, 1, 1, 0xFC, 3, 4, 0, 0x80, 1, 0x7F, 15})
	f.Add(uint8(0), uint8(0), uint16(0), []byte{0, 0, 0, 0, 1, 0, 0xFF, 0})
	f.Add(uint8(15), uint8(7), uint16(1023), []byte{1, 200, 1, 255, 1, 100, 0xF0, 1, 0x10, 1})
	f.Fuzz(func(t *testing.T, size, seqBits uint8, key uint16, steps []byte) {
		sb := 1 + int(seqBits%8)
		r := newTestRing(1+int(size%16), sb)
		k := uint64(key) << uint(sb)
		tick := int64(1000)
		seen := make(map[[2]uint64]bool)
		total := uint64(0)
		for i := 0; i+1 < len(steps); i += 2 {
			tick = max(tick+int64(int8(steps[i])), 0)
			n := 1 + uint64(steps[i+1])%(2<<uint(sb)) // up to two ticks' worth
			old := r.slot(tick).Load()
			room := r.seqMask // the highest start that leaves room for each recent tick
			for back := int64(1); back <= lookBack; back++ {
				if v := r.slot(tick - back).Load(); v>>uint(sb) == uint64(tick-back+1) {
					room = min(room, r.seqMask-v&r.seqMask)
				}
			}
			fresh := uint64(tick+1) << uint(sb)
			tk, seq, got, st := r.claim(tick, n, open, k)
			switch {
			case old >= fresh && old&r.seqMask == r.seqMask:
				require.Equalf(t, exhausted, st, "claim(%d) on a full slot", tick)
				require.Equal(t, int64(old>>uint(sb))-1, tk, "an exhausted claim names the slot's tick")
				continue
			case old >= fresh:
				require.Equal(t, claimed, st)
				require.Equal(t, int64(old>>uint(sb))-1, tk, "a slot of this tick or a newer one goes on")
				require.Equal(t, old&r.seqMask+1, seq, "from the slot's last sequence")
			default:
				require.Equal(t, claimed, st)
				require.Equal(t, tick, tk, "an older or empty slot starts the tick")
				require.Less(t, seq, r.half, "a fresh tick starts below half its sequence")
				require.LessOrEqual(t, seq, room, "room for what each recent tick issued")
				require.Equal(t, min(n, r.seqMask+1), got, "a batch's first claim fits whole, up to the whole tick")
			}
			require.Equal(t, min(n, r.seqMask+1-seq), got, "a batch runs to its size or the tick's end")
			for q := seq; q < seq+got; q++ {
				require.Falsef(t, seen[[2]uint64{uint64(tk), q}], "(%d, %d) issued twice", tk, q)
				seen[[2]uint64{uint64(tk), q}] = true
			}
			total += got
			require.Equal(t, total, r.issued(), "issued after claim %d", i/2)
		}
	})
}
