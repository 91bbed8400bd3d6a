package strict_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/internal/fakeclock"
	"github.com/ringflake/ringflake/internal/strict"
)

func TestStrict(t *testing.T) {
	t.Parallel()
	layout := ringflake.DefaultLayout()
	start := layout.Epoch.Add(time.Hour)
	clock := fakeclock.New(start)
	g, err := strict.New(layout, 3, clock.Now, 0)
	require.NoError(t, err)

	a, err := g.NextID()
	require.NoError(t, err)
	b, err := g.NextID()
	require.NoError(t, err)
	assert.Greater(t, b, a, "second ID in the same tick")
	p := layout.Decompose(b)
	assert.Equal(t, ringflake.Parts{Time: start, Ticks: 3600000, Machine: 3, Worker: 3, Sequence: 1}, p)

	clock.Add(-5 * time.Millisecond)
	_, err = g.NextID()
	assert.ErrorIs(t, err, strict.ErrClockBackwards, "clock 5 ticks behind")

	clock.Add(6 * time.Millisecond)
	c, err := g.NextID()
	require.NoError(t, err, "clock past the last tick again")
	assert.Greater(t, c, b)
}

func TestStrictExhausted(t *testing.T) {
	t.Parallel()
	layout := ringflake.Layout{TimeBits: 60, MachineBits: 1, SequenceBits: 2, Epoch: ringflake.DefaultLayout().Epoch, Tick: time.Millisecond}
	clock := fakeclock.New(layout.Epoch.Add(time.Second))
	g, err := strict.New(layout, 0, clock.Now, 0)
	require.NoError(t, err)
	for i := range 4 {
		_, err := g.NextID()
		require.NoError(t, err, "ID %d of 4 in one tick", i)
	}
	_, err = g.NextID()
	assert.ErrorIs(t, err, strict.ErrSpinTimeout, "fifth ID in one tick with a frozen clock")
}

func TestStrictNewInvalid(t *testing.T) {
	t.Parallel()
	_, err := strict.New(ringflake.Layout{}, 0, time.Now, 0)
	assert.ErrorIs(t, err, ringflake.ErrInvalidConfig)
	_, err = strict.New(ringflake.DefaultLayout(), 1024, time.Now, 0)
	assert.Error(t, err)
}
