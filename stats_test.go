package ringflake_test

import (
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/internal/fakeclock"
)

func TestStatsCountsStepBacksSpareAndErrors(t *testing.T) {
	t.Parallel()
	clock := fakeclock.New(at(100, 0))
	g, err := ringflake.New(t.Context(), ringflake.WithMachineID(1), ringflake.WithLayout(tiny), ringflake.WithClock(clock.Now), ringflake.WithMaxWait(-1))
	require.NoError(t, err)
	issue := func(n int) {
		for range n {
			_, err := g.NextID()
			require.NoError(t, err)
		}
	}
	// Tick 100 and tick 40 each start fresh, at their start; the test
	// leaves tick 100's last 6 IDs and uses up tick 40.
	first := 16 - ringflake.FreshStart(g, at(100, 0)) - 6
	issue(first)
	clock.Set(at(50, 0)) // back 50 ticks
	issue(5)
	clock.Set(at(40, 0)) // further back: the same step back, now larger
	all40 := 16 - ringflake.FreshStart(g, at(40, 0))
	issue(all40)
	_, err = g.NextID()
	require.ErrorIs(t, err, ringflake.ErrClockBehind, "tick 40's spare sequence is used up while the clock is behind")
	var ce *ringflake.ClockError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, 60*time.Millisecond, ce.By, "how far behind the latest tick")
	clock.Set(at(100, 0))
	issue(6) // the latest tick's last 6 IDs
	_, err = g.NextID()
	require.ErrorIs(t, err, ringflake.ErrSequenceExhausted, "the latest tick used up is demand's, not the clock's")
	clock.Set(at(40, 0))
	clock.Set(tiny.Epoch.Add(-time.Millisecond))
	_, err = g.NextID()
	require.ErrorIs(t, err, ringflake.ErrClockBeforeEpoch)

	s := g.Stats()
	assert.Equal(t, uint64(first+5+all40+6), s.Issued, "IDs issued")
	assert.Equal(t, uint64(1), s.StepBacks, "one step back until the clock passes tick 100 again")
	assert.Equal(t, 60*time.Millisecond, s.LargestStepBack)
	assert.Equal(t, uint64(5+all40), s.SpareIssued, "IDs issued while behind")
	assert.Equal(t, uint64(1), s.Failed.ClockBehind)
	assert.Equal(t, uint64(1), s.Failed.SequenceExhausted)
	assert.Equal(t, uint64(1), s.Failed.BeforeEpoch)
	assert.Zero(t, s.Waits, "a negative MaxWait never waits")

	clock.Set(at(101, 0)) // past the latest tick: a new step back counts again
	issue(1)
	clock.Set(at(90, 0))
	issue(1)
	assert.Equal(t, uint64(2), g.Stats().StepBacks)
}

func TestStatsIssuedSurvivesRingReuse(t *testing.T) {
	t.Parallel()
	clock := fakeclock.NewTicker(at(1, 0), 20*time.Microsecond)
	g, err := ringflake.New(t.Context(), ringflake.WithMachineID(1), ringflake.WithLayout(tiny), ringflake.WithClock(clock.Now), ringflake.WithRingSize(2),
		ringflake.WithMaxWait(time.Minute)) // the clock moves per reading, not with time: see TestGeneratorOrderingWithMonotonicClock
	require.NoError(t, err)
	ids, errs := drain(t, g, 4, 500)
	require.Empty(t, errs)
	assert.Equal(t, uint64(len(ids)), g.Stats().Issued, "issued counts retired ticks of reused slots too")
	assert.Positive(t, g.Stats().Waits, "a 16-per-tick layout at this rate waits for ticks")
}

func TestNextN(t *testing.T) {
	t.Parallel()
	clock := fakeclock.NewTicker(at(9, 0), 50*time.Microsecond)
	g, err := ringflake.New(t.Context(), ringflake.WithLayout(tiny), ringflake.WithClock(clock.Now), ringflake.WithMachineID(1),
		ringflake.WithMaxWait(time.Minute))
	require.NoError(t, err)
	dst := make([]ringflake.ID, 100)
	n, err := g.NextN(dst)
	require.NoError(t, err)
	require.Equal(t, 100, n)
	assert.True(t, sort.SliceIsSorted(dst, func(i, j int) bool { return dst[i] < dst[j] }), "a batch from a monotonic clock is sorted")
	for i := 1; i < n; i++ {
		require.NotEqual(t, dst[i-1], dst[i], "IDs in a batch are distinct")
	}
	assert.Equal(t, uint64(100), g.Stats().Issued)

	frozen := fakeclock.New(at(3, 0))
	g, err = ringflake.New(t.Context(), ringflake.WithMachineID(1), ringflake.WithLayout(tiny), ringflake.WithClock(frozen.Now), ringflake.WithMaxWait(-1))
	require.NoError(t, err)
	n, err = g.NextN(dst)
	assert.Equal(t, 16, n, "a frozen clock fills one tick: a batch larger than the tick starts it at 0")
	assert.ErrorIs(t, err, ringflake.ErrSequenceExhausted)
	n, err = g.NextN(nil)
	assert.Zero(t, n)
	assert.NoError(t, err)
}

func TestNextNAllocatesNothing(t *testing.T) {
	g, err := ringflake.New(t.Context(), ringflake.WithMachineID(1))
	require.NoError(t, err)
	dst := make([]ringflake.ID, 64)
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := g.NextN(dst); err != nil {
			t.Fatal(err)
		}
	})
	assert.Zero(t, allocs)
}
