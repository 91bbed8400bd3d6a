package ringflake

import "math/bits"

// A tick that starts fresh starts its sequence at a spread value rather than
// at 0, so that at low traffic, when ticks hold a few IDs each, the IDs' low
// bits are even and id % N shards evenly. Started at 0, a fleet's IDs at low
// traffic all ended in the same bits and landed in one shard.
//
// What it costs: the sequences below a tick's start are never issued. A
// tick soon after a full one starts at 0, so saturation keeps the whole
// ceiling; but a burst into a tick after quiet ones has only the sequences
// from its start up (at least half plus one), and the rest of the burst
// waits for the next tick.

// start returns the sequence at which tick starts fresh for a claim of n:
// a hash of tick and key, reduced to [0, span) with a multiply-high rather
// than a division. span is half the sequence space, 2^(seqBits-1), or less
// where a start that high would leave too little room: at most
// 2^seqBits+1-need, where need is the larger of n and, for each of the
// lookBack ticks before tick whose slot still holds it, its last sequence
// L plus 1.
//
// Why: such a tick issued at most L+1 IDs, since it started at 0 or later,
// so the new tick holds again at least what each recent tick did. A demand
// that fills the ticks keeps the full ceiling (after a full tick, span is 1
// and the start 0), the same demand every tick, up to the whole tick, fits
// in every tick after the first, and a demand up to half plus one fits in
// any tick. A batch's first claim fits whole, up to the whole tick. At low
// traffic no recent tick went past half, span is half, and the starts
// spread evenly over it: the IDs' low seqBits-1 bits are even.
//
// It is computed once for each tick a slot starts (again by a caller whose
// CAS lost to another's start of the same tick), never once per ID. key is
// the machine's bits of an ID, so that generators of one tick start apart.
func (r *ring) start(tick int64, key, n uint64) uint64 {
	need := n
	for back := int64(1); back <= lookBack; back++ {
		if v := r.slot(tick - back).Load(); v>>r.seqBits == uint64(tick-back+1) {
			need = max(need, v&r.seqMask+1)
		}
	}
	span := min(r.half, r.seqMask+2-min(need, r.seqMask+1))
	s, _ := bits.Mul64(spread(tick, key), span)
	return s
}

// lookBack is how many ticks before a new one start looks at. Looking at
// tick-1 alone keeps the ceiling while every tick fills, but a process that
// misses a tick or two at saturation (descheduled on a busy machine, or a
// pause) came back to an unused or part-filled tick-1, and its next tick
// started up to half a tick high: on a loaded 2-core machine that passed
// over 2 to 5 % of the ceiling, and 0.1 % or less with 16 ticks. The cost is
// 16 loads of adjacent slots once per tick, and after a full tick, starts
// stay low for 16 ticks.
const lookBack = 16

// spread hashes tick and key to 64 bits: splitmix64's finalizer applied to
// the tick's multiple of the golden ratio, plus key. Any bit of either input
// changes about half the output's bits, and start uses the output's top
// bits, so consecutive ticks, and machines one apart, start far apart.
func spread(tick int64, key uint64) uint64 {
	z := uint64(tick)*0x9e3779b97f4a7c15 + key
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}
