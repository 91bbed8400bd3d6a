package ringflake

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/ringflake/ringflake/machineid"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hourLayout has hour-long ticks, so that a test can read the default
// clock's tick and act on it before the tick changes.
var hourLayout = Layout{TimeBits: 40, MachineBits: 10, SequenceBits: 13, Epoch: DefaultLayout().Epoch, Tick: time.Hour}

// fastCase runs fast on g with the current tick's slot set to old (a
// function of that tick) and, on a copy of the same ring, ring.claim, and
// returns both outcomes and the copy after its claim.
func fastCase(t *testing.T, g *Generator, old func(tick int64) uint64) (fastID ID, fastOK bool, claimID ID, claimOK bool, tick int64, ref *ring) {
	t.Helper()
	tick = g.stableTick(t)
	st := g.state.Load()
	g.ring.slot(tick).Store(old(tick))

	ref = new(ring)
	ref.init(len(g.ring.slots), g.layout.SequenceBits)
	for i := range g.ring.slots {
		ref.slots[i].Store(g.ring.slots[i].Load())
	}
	ref.retired.Store(g.ring.retired.Load())
	ref.skipped.Store(g.ring.skipped.Load())
	ct, seq, _, cs := ref.claim(tick, 1, st.b, uint64(st.part))
	claimOK = cs == claimed
	if claimOK {
		claimID = g.layout.compose(ct, st.machine, int64(seq))
	}
	fastID, fastOK = g.fast()
	return fastID, fastOK, claimID, claimOK, tick, ref
}

// stableTick returns the default clock's tick, first waiting out the end of
// the tick if less than a second of it is left, so that the caller can act
// on the tick before it changes.
func (g *Generator) stableTick(t *testing.T) int64 {
	t.Helper()
	d := subSat(g.wall.unixNano(), g.epochNano)
	if left := g.layout.Tick - d%g.layout.Tick; left < time.Second {
		time.Sleep(left + time.Millisecond)
	}
	return g.nowTick(t)
}

func (g *Generator) nowTick(t *testing.T) int64 {
	t.Helper()
	ticks, ok := g.layout.ticksAt(subSat(g.wall.unixNano(), g.epochNano), g.maxTicks, g.recip)
	require.True(t, ok)
	return ticks
}

// fast is an inlined step of ring.claim for the common slots; for every
// kind of slot it must issue what claim would, or nothing.
func TestFastMatchesClaim(t *testing.T) {
	t.Parallel()
	g, err := New(t.Context(), WithLayout(hourLayout), WithMachineID(5), WithRingSize(8))
	require.NoError(t, err)
	seqBits := uint(hourLayout.SequenceBits)
	mask := uint64(1)<<seqBits - 1
	packed := func(tick int64, seq uint64) uint64 { return uint64(tick+1)<<seqBits | seq }

	cases := []struct {
		name   string
		old    func(tick int64) uint64
		issues bool // whether fast itself issues (else it declines, and NextID's slow path takes over)
	}{
		{"empty slot", func(int64) uint64 { return 0 }, true},
		{"this tick, seq 0", func(tk int64) uint64 { return packed(tk, 0) }, true},
		{"this tick, seq 5", func(tk int64) uint64 { return packed(tk, 5) }, true},
		{"this tick, one left", func(tk int64) uint64 { return packed(tk, mask-1) }, true},
		{"this tick, full", func(tk int64) uint64 { return packed(tk, mask) }, false},
		{"older tick, a ring ago", func(tk int64) uint64 { return packed(tk-8, 7) }, true},
		{"older tick, full", func(tk int64) uint64 { return packed(tk-8, mask) }, true},
		{"newer tick, a ring ahead", func(tk int64) uint64 { return packed(tk+8, 3) }, true},
		{"newer tick, full", func(tk int64) uint64 { return packed(tk+8, mask) }, false},
	}
	for _, c := range cases {
		retired := g.ring.retired.Load()
		fastID, fastOK, claimID, claimOK, tick, ref := fastCase(t, g, c.old)
		assert.Equalf(t, c.issues, fastOK, "%s: fast issued", c.name)
		assert.Equalf(t, claimOK, fastOK, "%s: fast and claim agree on issuing", c.name)
		if fastOK {
			assert.Equalf(t, claimID, fastID, "%s: fast issues what claim would", c.name)
			p := g.layout.Decompose(fastID)
			if old := c.old(tick); old>>seqBits >= uint64(tick+1) { // this tick or a newer one: its sequence goes on
				assert.Equalf(t, old+1, g.ring.slot(tick).Load(), "%s: slot after", c.name)
			} else { // a fresh start, below half the sequence space
				assert.Equalf(t, packed(tick, uint64(p.Sequence)), g.ring.slot(tick).Load(), "%s: slot after", c.name)
				assert.Lessf(t, p.Sequence, int64(1)<<(seqBits-1), "%s: a fresh tick's start", c.name)
			}
			assert.Equalf(t, int64(5), p.Machine, "%s: machine", c.name)
		} else {
			assert.Equalf(t, c.old(tick), g.ring.slot(tick).Load(), "%s: a declined slot is unchanged", c.name)
		}
		assert.Equalf(t, ref.issued(), g.ring.issued(), "%s: issued counts as claim's does", c.name)
		if old := c.old(tick); old != 0 && old>>seqBits < uint64(tick+1) {
			assert.Equalf(t, retired+old&mask+1, g.ring.retired.Load(), "%s: the older tick's IDs are counted as retired", c.name)
		}
	}
}

// Random slot values around the current tick: fast never issues what
// claim would not, and always issues when claim would for its own tick.
func TestFastMatchesClaimRandom(t *testing.T) {
	t.Parallel()
	g, err := New(t.Context(), WithLayout(hourLayout), WithMachineID(1), WithRingSize(4))
	require.NoError(t, err)
	seqBits := uint(hourLayout.SequenceBits)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		dt := int64(rng.IntN(3)-1) * 4 // the tick a ring before, this one, or a ring after
		seq := uint64(rng.IntN(1 << seqBits))
		if rng.IntN(4) == 0 {
			seq = 1<<seqBits - 1 - uint64(rng.IntN(2))
		}
		empty := rng.IntN(8) == 0
		old := func(tk int64) uint64 {
			if empty {
				return 0
			}
			return uint64(tk+dt+1)<<seqBits | seq
		}
		fastID, fastOK, claimID, claimOK, _, _ := fastCase(t, g, old)
		require.Equalf(t, claimOK, fastOK, "slot %+d ticks, seq %d, empty %v", dt, seq, empty)
		if fastOK {
			require.Equal(t, claimID, fastID)
		}
	}
}

// fast leaves a lease's bounds to the slow path: a tick at or below the
// floor or above the ceiling is never issued by it.
func TestFastRespectsBounds(t *testing.T) {
	t.Parallel()
	g, err := New(t.Context(), WithLayout(hourLayout), WithMachineID(2))
	require.NoError(t, err)
	tick := g.stableTick(t)
	for _, b := range []bounds{{floor: tick, ceil: g.maxTicks}, {floor: -1, ceil: tick - 1}, {floor: tick + 5, ceil: tick + 10}} {
		g.state.Store(g.withPart(&machineState{machine: 2, b: b}))
		g.ring.slot(tick).Store(0)
		_, ok := g.fast()
		assert.Falsef(t, ok, "fast issued tick %d with bounds %+v", tick, b)
		assert.Zerof(t, g.ring.slot(tick).Load(), "fast claimed under bounds %+v", b)
	}
	g.state.Store(g.withPart(&machineState{machine: 2, b: bounds{floor: tick - 1, ceil: tick}}))
	id, ok := g.fast()
	require.True(t, ok, "a tick just inside the bounds")
	assert.Equal(t, tick, g.layout.Decompose(id).Ticks)
	assert.Equal(t, int64(2), g.layout.Decompose(id).Machine)
	for _, k := range []stateKind{pending, lost, closed} {
		g.state.Store(g.withPart(&machineState{machine: 2, b: bounds{floor: -1, ceil: g.maxTicks}, kind: k}))
		_, ok = g.fast()
		assert.False(t, ok, "state kind %d", k)
	}
}

// fast composes IDs with the machine's bits kept in the state: every state
// that can be held carries them, so a lease change reaches fast's IDs.
func TestFastUsesTheStatesMachine(t *testing.T) {
	t.Parallel()
	g, err := New(t.Context(), WithLayout(hourLayout), WithMachineID(5))
	require.NoError(t, err)
	seqBits := hourLayout.SequenceBits
	assert.Equal(t, int64(5)<<seqBits, g.state.Load().part, "fixed state")
	id, ok := g.fast()
	require.True(t, ok)
	assert.Equal(t, int64(5), g.layout.Decompose(id).Machine)

	g.setLease(machineid.Lease{ID: 9, Held: true})
	assert.Equal(t, int64(9)<<seqBits, g.state.Load().part, "state from a lease report")
	id, ok = g.fast()
	require.True(t, ok)
	assert.Equal(t, int64(9), g.layout.Decompose(id).Machine)
}

// fastEnd bounds the offset from the epoch that fast accepts: the
// layout's range, cut short where a wrapped difference could pass for one
// in range.
func TestFastEnd(t *testing.T) {
	t.Parallel()
	rangeEnd := func(l Layout) uint64 { return uint64(l.maxTicks()+1) * uint64(l.Tick) }
	late := Layout{TimeBits: 41, MachineBits: 10, SequenceBits: 12, Epoch: time.Date(2261, 6, 1, 0, 0, 0, 0, time.UTC), Tick: time.Millisecond}
	early := Layout{TimeBits: 40, MachineBits: 10, SequenceBits: 13, Epoch: time.Date(1678, 1, 2, 0, 0, 0, 0, time.UTC), Tick: time.Hour}
	tests := []struct {
		name string
		l    Layout
		want uint64
	}{
		{"default", DefaultLayout(), rangeEnd(DefaultLayout())},
		{"epoch before 1970", early, rangeEnd(early)},
		{"range past 2262", late, 1<<63 - uint64(late.Epoch.UnixNano())},
		{"invalid", Layout{}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, fastEnd(tt.l))
			assert.Less(t, tt.want, uint64(1)<<63, "divide needs offsets below 2^63")
		})
	}
}

// For any clock reading, fast's one comparison accepts only readings that
// ticksAt accepts, with the same tick, and every one of them where the
// layout's range ends before the year 2262.
func TestFastEndAgreesWithTicksAt(t *testing.T) {
	t.Parallel()
	layouts := map[string]Layout{
		"default":           DefaultLayout(),
		"1µs ticks":         {TimeBits: 41, MachineBits: 10, SequenceBits: 12, Epoch: DefaultLayout().Epoch, Tick: time.Microsecond},
		"epoch 1970":        {TimeBits: 41, MachineBits: 10, SequenceBits: 12, Epoch: time.Unix(0, 0), Tick: time.Millisecond},
		"epoch 1678, hours": {TimeBits: 40, MachineBits: 10, SequenceBits: 13, Epoch: time.Date(1678, 1, 2, 0, 0, 0, 0, time.UTC), Tick: time.Hour},
		"epoch 2261":        {TimeBits: 41, MachineBits: 10, SequenceBits: 12, Epoch: time.Date(2261, 6, 1, 0, 0, 0, 0, time.UTC), Tick: time.Millisecond},
		"epoch 2262, 1 ms":  {TimeBits: 41, MachineBits: 10, SequenceBits: 12, Epoch: time.Date(2262, 1, 1, 0, 0, 0, 0, time.UTC), Tick: time.Millisecond},
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for name, l := range layouts {
		t.Run(name, func(t *testing.T) {
			e, maxTicks, recip := l.Epoch.UnixNano(), l.maxTicks(), reciprocal(l.Tick)
			end := fastEnd(l)
			whole := end == uint64(maxTicks+1)*uint64(l.Tick)
			span := int64(maxTicks+1) * int64(l.Tick)
			readings := []int64{math.MinInt64, math.MinInt64 + 1, -1, 0, 1, math.MaxInt64 - 1, math.MaxInt64,
				e - 1, e, e + 1, e + span - 1, e + span, e + span + 1, e - math.MaxInt64, e + math.MinInt64}
			for range 20000 {
				switch rng.IntN(3) {
				case 0:
					readings = append(readings, int64(rng.Uint64()))
				case 1:
					readings = append(readings, e+rng.Int64N(span)) // may wrap: that is the point
				default:
					readings = append(readings, e+span+rng.Int64N(1<<40)-1<<39)
				}
			}
			for _, ns := range readings {
				d := uint64(ns - e)
				fastOK := d < end
				ticks, ok := l.ticksAt(subSat(ns, e), maxTicks, recip)
				if fastOK {
					require.Truef(t, ok, "reading %d: fast accepts what ticksAt refuses", ns)
					require.Equalf(t, ticks, int64(divide(d, uint64(l.Tick), recip)), "reading %d: tick", ns)
				}
				if whole {
					require.Equalf(t, ok, fastOK, "reading %d: a range before 2262 is accepted whole", ns)
				}
			}
		})
	}
}
