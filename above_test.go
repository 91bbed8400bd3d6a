package ringflake_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/internal/fakeclock"
	"github.com/ringflake/ringflake/machineid"
)

// aboveAt returns the largest ID of the default layout in the tick that
// starts at t: the newest ID an old fleet of the same layout could have
// issued by the end of that tick.
func aboveAt(t *testing.T, at time.Time) ringflake.ID {
	t.Helper()
	l := ringflake.DefaultLayout()
	id, err := l.Compose(ringflake.Parts{Time: at, Machine: l.MaxMachine(), Sequence: 1<<l.SequenceBits - 1})
	require.NoError(t, err)
	return id
}

// A generator given WithAbove issues nothing at or below the ID: New waits
// for the clock to pass the ID's tick and fails, naming WithAbove and how
// far the clock is short, if it cannot; once the clock is past, every ID is
// above; and a clock that steps back to the ID's tick or before gets
// ErrMarkAhead, not an ID below the floor. With the floor taken out of a
// fixed machine ID's state (floor -1 in place of g.above), New issues at
// once and the test fails.
func TestWithAboveFloorsEveryID(t *testing.T) {
	t.Parallel()
	above := aboveAt(t, leaseStart.Add(2*time.Millisecond))
	clock := fakeclock.New(leaseStart)
	opts := []ringflake.Option{ringflake.WithMachineID(0), ringflake.WithClock(clock.Now), ringflake.WithMaxWait(-1), ringflake.WithAbove(above)}

	_, err := ringflake.New(within(t, 50*time.Millisecond), opts...)
	require.ErrorIs(t, err, ringflake.ErrMarkAhead)
	var ce *ringflake.ClockError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, 3*time.Millisecond, ce.By, "the clock is three ticks short of the first tick above the ID")
	assert.Contains(t, err.Error(), "the floor set by WithAbove(")
	assert.Contains(t, err.Error(), "whose tick ends at 2026-03-01T12:00:00.003Z, is ahead of the clock")
	assert.NotContains(t, err.Error(), "lease", "no lease is involved")

	clock.Set(leaseStart.Add(2 * time.Millisecond)) // the ID's own tick: still not above it
	_, err = ringflake.New(within(t, 50*time.Millisecond), opts...)
	require.ErrorIs(t, err, ringflake.ErrMarkAhead)

	clock.Set(leaseStart.Add(3 * time.Millisecond))
	g, err := ringflake.New(t.Context(), opts...)
	require.NoError(t, err)
	defer g.Close()
	ids := make([]ringflake.ID, 100)
	n, err := g.NextN(ids)
	require.NoError(t, err)
	for _, id := range ids[:n] {
		require.Greater(t, id, above, "every ID is above WithAbove's")
	}
	require.NoError(t, g.Ready())

	clock.Set(leaseStart.Add(time.Millisecond)) // a step back across the floor
	_, err = g.NextID()
	require.ErrorIs(t, err, ringflake.ErrMarkAhead, "a clock back below the floor issues nothing")
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, 2*time.Millisecond, ce.By)
	assert.ErrorIs(t, g.Ready(), ringflake.ErrMarkAhead, "and Ready says so")
}

// Under a lease, the floor is the higher of the lease's inherited mark and
// WithAbove's tick, in New and for every lease report after it, and the
// error names whichever it is.
func TestWithAboveAndTheLeasesMark(t *testing.T) {
	t.Parallel()
	above := aboveAt(t, leaseStart.Add(5*time.Millisecond))
	clock := fakeclock.New(leaseStart.Add(4 * time.Millisecond))
	f := newFakeLeaser(machineid.Lease{ID: 5, Held: true, After: leaseStart.Add(time.Millisecond)})
	opts := []ringflake.Option{ringflake.WithMachineIDSource(f), ringflake.WithClock(clock.Now), ringflake.WithMaxWait(-1), ringflake.WithAbove(above)}
	_, err := ringflake.New(within(t, 50*time.Millisecond), opts...)
	require.ErrorIs(t, err, ringflake.ErrMarkAhead, "the lease's mark is passed, WithAbove's is not")
	assert.Contains(t, err.Error(), "WithAbove(")

	clock.Set(leaseStart.Add(6 * time.Millisecond))
	f = newFakeLeaser(machineid.Lease{ID: 5, Held: true, After: leaseStart.Add(time.Millisecond)})
	opts[0] = ringflake.WithMachineIDSource(f)
	g, err := ringflake.New(t.Context(), opts...)
	require.NoError(t, err)
	defer g.Close()
	id, err := g.NextID()
	require.NoError(t, err)
	assert.Greater(t, id, above)

	f.set(machineid.Lease{ID: 6, Held: true}) // a new lease, with no mark: the floor stays
	clock.Set(leaseStart.Add(5 * time.Millisecond))
	_, err = g.NextID()
	require.ErrorIs(t, err, ringflake.ErrMarkAhead, "WithAbove's floor outlives a lease report")
	assert.Contains(t, err.Error(), "WithAbove(")

	f.set(machineid.Lease{ID: 6, Held: true, After: leaseStart.Add(7 * time.Millisecond)})
	_, err = g.NextID()
	require.ErrorIs(t, err, ringflake.ErrMarkAhead)
	assert.Contains(t, err.Error(), "the mark the machine ID's lease inherited", "the lease's mark is the higher floor")
}

// WithAbove refuses an ID that no ID of the layout can be above: a
// negative one, or one of a wider layout, whose time field the layout
// reads past its end.
func TestWithAboveRefusesWhatNoIDIsAbove(t *testing.T) {
	t.Parallel()
	def := aboveAt(t, leaseStart)
	tests := []struct {
		name  string
		above ringflake.ID
		opts  []ringflake.Option
		want  string
	}{
		{"negative", -1, nil, "WithAbove's ID = -1"},
		{"a default ID under the js layout", def, []ringflake.Option{ringflake.WithLayout(ringflake.JSLayout())},
			"is at tick 69938380801023 of the layout, whose last tick is 2199023255551: no ID of the layout is above it"},
		{"the last tick's ID", ringflake.ID(1<<63 - 1), nil, "no ID of the layout is above it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			opts := append([]ringflake.Option{ringflake.WithMachineID(1), ringflake.WithAbove(tt.above)}, tt.opts...)
			_, err := ringflake.New(t.Context(), opts...)
			require.ErrorIs(t, err, ringflake.ErrInvalidConfig)
			assert.ErrorContains(t, err, tt.want)
		})
	}
}
