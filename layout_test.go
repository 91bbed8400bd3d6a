package ringflake_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake"
)

func TestLayoutValidate(t *testing.T) {
	t.Parallel()
	ok := ringflake.DefaultLayout()
	with := func(f func(*ringflake.Layout)) ringflake.Layout { l := ok; f(&l); return l }
	tests := []struct {
		name string
		l    ringflake.Layout
		want string // empty: valid
	}{
		{"default", ok, ""},
		{"one bit of time", with(func(l *ringflake.Layout) { l.TimeBits, l.MachineBits, l.SequenceBits = 1, 0, 62 }), ""},
		{"one bit of sequence", with(func(l *ringflake.Layout) { l.TimeBits, l.MachineBits, l.SequenceBits = 62, 0, 1 }), ""},
		{"61 machine bits", with(func(l *ringflake.Layout) { l.TimeBits, l.MachineBits, l.SequenceBits = 1, 61, 1 }), ""},
		{"no time bits", with(func(l *ringflake.Layout) { l.TimeBits, l.SequenceBits = 0, 53 }), "Layout.TimeBits = 0"},
		{"no sequence bits", with(func(l *ringflake.Layout) { l.SequenceBits, l.TimeBits = 0, 53 }), "Layout.SequenceBits = 0"},
		{"negative machine bits", with(func(l *ringflake.Layout) { l.MachineBits, l.TimeBits = -1, 52 }), "Layout.MachineBits = -1"},
		{"sum 64", with(func(l *ringflake.Layout) { l.TimeBits = 42 }), "want a sum of 63"},
		{"negative tick", with(func(l *ringflake.Layout) { l.Tick = -1 }), "Layout.Tick = -1ns"},
		{"epoch too early", with(func(l *ringflake.Layout) { l.Epoch = time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC) }), "Layout.Epoch = 1600"},
		{"epoch too late", with(func(l *ringflake.Layout) { l.Epoch = time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC) }), "Layout.Epoch = 2300"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := ringflake.LayoutValidate(tt.l)
			if tt.want == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, ringflake.ErrInvalidConfig)
			assert.ErrorContains(t, err, tt.want)
		})
	}
}

func TestLayoutDecomposeEdges(t *testing.T) {
	t.Parallel()
	l := ringflake.DefaultLayout()
	tests := []struct {
		name string
		id   ringflake.ID
		want ringflake.Parts
	}{
		{"zero is the epoch", 0, ringflake.Parts{Time: l.Epoch}},
		{"max ID", math.MaxInt64, ringflake.Parts{Ticks: 1<<41 - 1, Machine: 1023, Sequence: 4095, Time: l.Epoch.Add((1<<41 - 1) * time.Millisecond)}},
		{"negative ID ignores the sign bit", -1, ringflake.Parts{Ticks: 1<<41 - 1, Machine: 1023, Sequence: 4095, Time: l.Epoch.Add((1<<41 - 1) * time.Millisecond)}},
		{"one of each", 1<<22 | 1<<12 | 1, ringflake.Parts{Ticks: 1, Machine: 1, Sequence: 1, Time: l.Epoch.Add(time.Millisecond)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := l.Decompose(tt.id)
			assert.Equal(t, tt.want.Ticks, got.Ticks)
			assert.Equal(t, tt.want.Machine, got.Machine)
			assert.Equal(t, tt.want.Sequence, got.Sequence)
			assert.Truef(t, tt.want.Time.Equal(got.Time), "Time = %v; want %v", got.Time, tt.want.Time)
		})
	}
	assert.Equal(t, ringflake.Parts{}, ringflake.Layout{}.Decompose(123), "an invalid layout decodes to zero Parts")
}

func TestLayoutHugeSpanSaturates(t *testing.T) {
	t.Parallel()
	// 62 bits of hours cannot be expressed as a time.Duration or even a
	// time.Time: decoding saturates instead of wrapping, and generating is
	// limited to what fits in a Duration.
	l := ringflake.Layout{TimeBits: 62, MachineBits: 0, SequenceBits: 1, Epoch: time.Unix(0, 0).UTC(), Tick: time.Hour}
	require.NoError(t, ringflake.LayoutValidate(l))
	assert.Equal(t, int64(math.MaxInt64)/int64(time.Hour)-1, ringflake.LayoutMaxTicks(l), "(MaxTicks+1)×Tick fits in a Duration")
	assert.False(t, l.End().After(l.Epoch.Add(math.MaxInt64)), "End is within a Duration of the epoch")
	p := l.Decompose(math.MaxInt64)
	assert.Equal(t, int64(1<<62-1), p.Ticks)
	assert.True(t, p.Time.After(time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)), "saturated time %v is far in the future", p.Time)
	assert.True(t, l.End().After(l.Epoch.Add(290*365*24*time.Hour)))
}

func TestLayoutComposeEdges(t *testing.T) {
	t.Parallel()
	l := ringflake.DefaultLayout()
	id, err := l.Compose(ringflake.Parts{Ticks: 1<<41 - 1, Machine: 1023, Sequence: 4095})
	require.NoError(t, err)
	assert.Equal(t, ringflake.ID(math.MaxInt64), id, "all fields at their maximum")
	id, err = l.Compose(ringflake.Parts{})
	require.NoError(t, err)
	assert.Equal(t, ringflake.ID(0), id)
	for _, p := range []ringflake.Parts{{Ticks: -1}, {Ticks: 1 << 41}, {Machine: -1}, {Sequence: 4096}, {Sequence: -1}} {
		_, err := l.Compose(p)
		assert.ErrorIsf(t, err, ringflake.ErrInvalidConfig, "Compose(%+v)", p)
	}
}

func TestLayoutMethodsOnInvalidLayouts(t *testing.T) {
	t.Parallel()
	for _, l := range []ringflake.Layout{{}, {TimeBits: -1, MachineBits: -5, SequenceBits: 99}, {TimeBits: 70, MachineBits: 70, SequenceBits: -70, Tick: -1}} {
		assert.NotPanics(t, func() {
			assert.Equal(t, int64(-1), ringflake.LayoutMaxTicks(l))
			assert.True(t, l.End().IsZero())
			_ = l.MaxMachine()
			_ = ringflake.LayoutMaxSequence(l)
			_ = l.Decompose(12345)
			_, err := l.Compose(ringflake.Parts{})
			assert.ErrorIs(t, err, ringflake.ErrInvalidConfig)
		}, "layout %+v", l)
	}
	assert.Equal(t, int64(-1), ringflake.Layout{MachineBits: -1}.MaxMachine())
	assert.Equal(t, int64(-1), ringflake.LayoutMaxSequence(ringflake.Layout{SequenceBits: 63}))
}

func TestZeroTimeClockReportsAPositiveGap(t *testing.T) {
	t.Parallel()
	now := time.Now() // New checks that the layout can issue now
	g, err := ringflake.New(ringflake.WithMachineID(1), ringflake.WithClock(func() time.Time { return now }))
	require.NoError(t, err)
	now = time.Time{}
	_, err = g.NextID()
	var ce *ringflake.ClockError
	require.ErrorAs(t, err, &ce)
	assert.ErrorIs(t, err, ringflake.ErrClockBeforeEpoch)
	assert.Positive(t, ce.By, "how far before the epoch, saturated rather than wrapped")
}
