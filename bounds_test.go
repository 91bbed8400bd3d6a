package ringflake_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake"
)

// Bounds is exact about ID times: an ID is in [lo, hi) exactly when its
// time is in [from, to), for IDs of every machine and sequence around the
// range's edges.
func TestBoundsAreExact(t *testing.T) {
	t.Parallel()
	tw := ringflake.DefaultLayout()
	tw.DatacenterBits = 5
	layouts := map[string]ringflake.Layout{
		"default":         ringflake.DefaultLayout(),
		"sonyflake, 10ms": {TimeBits: 39, MachineBits: 16, SequenceBits: 8, Tick: 10 * time.Millisecond},
		"twitter split":   tw,
		"javascript":      ringflake.JSLayout(),
		"53 bits, 10ms":   {TimeBits: 39, MachineBits: 6, SequenceBits: 8, Tick: 10 * time.Millisecond},
	}
	for name, l := range layouts {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(1, 2))
			base := time.Date(2025, 5, 15, 0, 0, 0, 0, time.UTC) // l.Epoch may be zero: the default
			for range 200 {
				from := base.Add(time.Duration(rng.Int64N(int64(50 * l.Tick))))
				to := from.Add(time.Duration(rng.Int64N(int64(20 * l.Tick))))
				lo, hi, err := l.Bounds(from, to)
				require.NoError(t, err)
				machine := rng.Int64N(l.MaxMachine() + 1)
				for tick := l.Decompose(lo).Ticks - 2; tick <= l.Decompose(hi).Ticks+2; tick++ {
					for _, m := range []int64{0, machine, l.MaxMachine()} {
						for _, seq := range []int64{0, 1, 1<<l.SequenceBits - 1} {
							id, err := l.Compose(ringflake.Parts{Ticks: tick, Machine: m, Sequence: seq})
							require.NoError(t, err)
							at := l.Decompose(id).Time
							in := !at.Before(from) && at.Before(to)
							assert.Equalf(t, in, lo <= id && id < hi, "ID %d (time %v) against Bounds(%v, %v) = [%d, %d)", id, at, from, to, lo, hi)
						}
					}
				}
			}
		})
	}
}

func TestBoundsRefuse(t *testing.T) {
	t.Parallel()
	l := ringflake.DefaultLayout()
	lastStart := l.End().Add(-l.Tick)
	tests := []struct {
		name     string
		from, to time.Time
		want     string
	}{
		{"to before from", l.Epoch.Add(time.Second), l.Epoch, "range from 2024-01-01T00:00:01Z to 2024-01-01T00:00:00Z: to is 1s before from"},
		{"from before the epoch", l.Epoch.Add(-time.Nanosecond), l.Epoch, "from = 2023-12-31T23:59:59.999999999Z; valid range 2024-01-01T00:00:00Z up to 2093-09-06T15:47:35.551Z, the layout's first and last tick"},
		{"to past the last tick", l.Epoch, lastStart.Add(time.Nanosecond), "to = 2093-09-06T15:47:35.551000001Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := l.Bounds(tt.from, tt.to)
			assert.ErrorIs(t, err, ringflake.ErrInvalidConfig)
			assert.ErrorContains(t, err, tt.want)
		})
	}
	lo, hi, err := l.Bounds(lastStart, lastStart)
	require.NoError(t, err, "up to the last tick's start")
	assert.Equal(t, lo, hi, "an empty range")
	_, _, err = ringflake.Layout{}.Bounds(l.Epoch, l.Epoch)
	assert.ErrorIs(t, err, ringflake.ErrInvalidConfig, "an invalid layout")
}

// IDs a generator issues fall in the bounds of the clock's reading, which
// is the time range query's use.
func TestBoundsHoldIssuedIDs(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	g, err := ringflake.New(t.Context(), ringflake.WithMachineID(7), ringflake.WithClock(func() time.Time { return at.Add(300 * time.Microsecond) }))
	require.NoError(t, err)
	id, err := g.NextID()
	require.NoError(t, err)
	lo, hi, err := g.Layout().Bounds(at, at.Add(time.Millisecond))
	require.NoError(t, err)
	assert.True(t, lo <= id && id < hi, "ID %d in [%d, %d)", id, lo, hi)
	lo, hi, err = g.Layout().Bounds(at.Add(time.Millisecond), at.Add(time.Hour))
	require.NoError(t, err)
	assert.False(t, lo <= id && id < hi, "not in a later range")
}

// Bounds' doc, against a generator: an ID made while the clock read within
// [from rounded up to a tick, to) is in the range; one made earlier in the
// tick that holds from is not, its time being before from; and one made at
// or after to, in the tick that holds to, is, its time being before to.
func TestBoundsAgainstTheClock(t *testing.T) {
	t.Parallel()
	l := ringflake.DefaultLayout()
	noon := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	from := noon.Add(1500 * time.Microsecond) // within the tick 12:00:00.001; rounded up to .002
	to := noon.Add(5500 * time.Microsecond)   // within the tick .005
	lo, hi, err := l.Bounds(from, to)
	require.NoError(t, err)
	for _, tt := range []struct {
		name string
		at   time.Duration // the clock's reading past noon
		in   bool
	}{
		{"before from's tick", 900 * time.Microsecond, false},
		{"in from's tick, before from", 1200 * time.Microsecond, false},
		{"in from's tick, at or after from: its time is before from", 1700 * time.Microsecond, false},
		{"from rounded up", 2 * time.Millisecond, true},
		{"within", 3500 * time.Microsecond, true},
		{"in to's tick, before to", 5200 * time.Microsecond, true},
		{"in to's tick, after to: its time is before to", 5800 * time.Microsecond, true},
		{"the next tick", 6 * time.Millisecond, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			at := noon.Add(tt.at)
			g, err := ringflake.New(t.Context(), ringflake.WithMachineID(3), ringflake.WithClock(func() time.Time { return at }))
			require.NoError(t, err)
			defer g.Close()
			id, err := g.NextID()
			require.NoError(t, err)
			assert.Equal(t, tt.in, lo <= id && id < hi, "an ID made at %v (time %v) against [%v, %v)", at, l.Decompose(id).Time, from, to)
		})
	}
}
