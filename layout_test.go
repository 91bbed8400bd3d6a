package ringflake_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/internal/fakeclock"
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
		{"sum 64", with(func(l *ringflake.Layout) { l.TimeBits = 42 }), "42+10+12 = 64; want a sum of at most 63"},
		{"sum 62", with(func(l *ringflake.Layout) { l.TimeBits = 40 }), ""},
		{"the JavaScript layout, 53 bits", ringflake.JSLayout(), ""},
		{"the smallest, 2 bits", ringflake.Layout{TimeBits: 1, SequenceBits: 1}, ""},
		{"a bit of each, 3 bits", ringflake.Layout{TimeBits: 1, MachineBits: 1, SequenceBits: 1}, ""},
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
	g, err := ringflake.New(t.Context(), ringflake.WithMachineID(1), ringflake.WithClock(func() time.Time { return now }))
	require.NoError(t, err)
	now = time.Time{}
	_, err = g.NextID()
	var ce *ringflake.ClockError
	require.ErrorAs(t, err, &ce)
	assert.ErrorIs(t, err, ringflake.ErrClockBeforeEpoch)
	assert.Positive(t, ce.By, "how far before the epoch, saturated rather than wrapped")
}

// A zero Tick and a zero Epoch mean the defaults, so a custom split needs
// only its bits, and the one minimum tick is stated the same way by the
// layout and by New.
func TestLayoutDefaults(t *testing.T) {
	t.Parallel()
	sony := ringflake.Layout{TimeBits: 39, MachineBits: 16, SequenceBits: 8}
	require.NoError(t, ringflake.LayoutValidate(sony), "the README's sonyflake split with no Tick or Epoch")
	def := ringflake.DefaultLayout()
	assert.True(t, sony.End().Equal(def.Epoch.Add((1<<39)*time.Millisecond)), "End %v: 2^39 ms from 2024-01-01", sony.End())
	p := sony.Decompose(1<<24 | 5<<8 | 3)
	assert.Equal(t, ringflake.Parts{Time: def.Epoch.Add(time.Millisecond), Ticks: 1, Machine: 5, Worker: 5, Sequence: 3}, p)
	g, err := ringflake.New(t.Context(), ringflake.WithMachineID(5), ringflake.WithLayout(sony))
	require.NoError(t, err, "New takes the layout with its defaults")
	assert.Equal(t, time.Millisecond, g.Layout().Tick, "Layout reports the default it used")
	assert.True(t, g.Layout().Epoch.Equal(def.Epoch))

	for _, tick := range []time.Duration{time.Nanosecond, time.Microsecond - 1, -time.Millisecond} {
		l := sony
		l.Tick = tick
		want := "Layout.Tick = " + tick.String() + "; valid range at least 1µs (0 means 1ms)"
		assert.ErrorContains(t, ringflake.LayoutValidate(l), want, "the layout's own check")
		_, err := ringflake.New(t.Context(), ringflake.WithMachineID(1), ringflake.WithLayout(l))
		assert.ErrorContains(t, err, want, "New states the same minimum")
		assert.True(t, l.End().IsZero(), "an invalid tick has no End")
	}
}

// Compose honours every field it is given, Time and Datacenter/Worker
// included, or refuses; it round-trips Decompose's Parts.
func TestLayoutComposeHonoursEveryField(t *testing.T) {
	t.Parallel()
	l := ringflake.DefaultLayout()
	tw := l
	tw.DatacenterBits = 5
	at := l.Epoch.Add(90*24*time.Hour + 1500*time.Microsecond) // inside tick 7776000001
	const tick = 7776000001
	tests := []struct {
		name string
		l    ringflake.Layout
		p    ringflake.Parts
		want ringflake.ID
		err  string
	}{
		{"time alone is its tick", l, ringflake.Parts{Time: at}, tick << 22, ""},
		{"time and the same ticks", l, ringflake.Parts{Time: at, Ticks: tick, Machine: 3}, tick<<22 | 3<<12, ""},
		{"time and other ticks", l, ringflake.Parts{Time: at, Ticks: 5}, 0, "Parts.Time 2024-03-31T00:00:00.0015Z is tick 7776000001, but Parts.Ticks is 5"},
		{"time before the epoch", l, ringflake.Parts{Time: l.Epoch.Add(-time.Millisecond)}, 0, "Parts.Time = 2023-12-31T23:59:59.999Z; valid range 2024-01-01T00:00:00Z up to 2093-09-06T15:47:35.552Z"},
		{"time past the end", l, ringflake.Parts{Time: l.End()}, 0, "Parts.Time = 2093-09-06T15:47:35.552Z"},
		{"datacenter and worker", tw, ringflake.Parts{Ticks: 1, Datacenter: 3, Worker: 7}, 1<<22 | (3<<5|7)<<12, ""},
		{"machine agreeing with them", tw, ringflake.Parts{Machine: 3<<5 | 7, Datacenter: 3, Worker: 7}, (3<<5 | 7) << 12, ""},
		{"machine disagreeing", tw, ringflake.Parts{Machine: 7, Datacenter: 3, Worker: 7}, 0, "Parts.Machine is 7, but Parts.Datacenter 3 and Parts.Worker 7 make machine 103"},
		{"worker too wide", tw, ringflake.Parts{Datacenter: 1, Worker: 32}, 0, "Parts.Worker = 32; valid range 0..31"},
		{"datacenter too wide", tw, ringflake.Parts{Datacenter: 32}, 0, "Parts.Datacenter = 32; valid range 0..31"},
		{"datacenter without a split", l, ringflake.Parts{Datacenter: 1}, 0, "Parts.Datacenter = 1; valid range 0..0 (Layout.DatacenterBits 0)"},
		{"worker without a split is the machine", l, ringflake.Parts{Worker: 9}, 9 << 12, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			id, err := tt.l.Compose(tt.p)
			if tt.err != "" {
				assert.ErrorIs(t, err, ringflake.ErrInvalidConfig)
				assert.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, id)
			back, err := tt.l.Compose(tt.l.Decompose(id))
			require.NoError(t, err, "Decompose's Parts compose")
			assert.Equal(t, id, back, "round trip")
		})
	}
}

// Decompose shows the datacenter and the worker of a split layout.
func TestLayoutDecomposeDatacenter(t *testing.T) {
	t.Parallel()
	l := ringflake.DefaultLayout()
	l.DatacenterBits = 5
	p := l.Decompose(ringflake.ID(2<<22 | (17<<5|30)<<12 | 9))
	assert.Equal(t, int64(17<<5|30), p.Machine)
	assert.Equal(t, int64(17), p.Datacenter)
	assert.Equal(t, int64(30), p.Worker)
	l.DatacenterBits = 11
	assert.ErrorContains(t, ringflake.LayoutValidate(l), "Layout.DatacenterBits = 11; valid range 0..10 (Layout.MachineBits)")
	assert.Equal(t, ringflake.Parts{}, l.Decompose(1), "an invalid split decodes to zero Parts")
}

// Workers gives a datacenter's machine IDs, whose IDs decompose to that
// datacenter and each worker, and refuses a datacenter out of range or a
// layout without a split.
func TestLayoutWorkers(t *testing.T) {
	t.Parallel()
	l := ringflake.DefaultLayout()
	l.DatacenterBits = 5
	for _, dc := range []int64{0, 3, 31} {
		lo, hi, err := l.Workers(dc)
		require.NoError(t, err)
		assert.Equal(t, int64(31), hi-lo, "datacenter %d has 32 workers", dc)
		for w := int64(0); w <= hi-lo; w++ {
			id, err := l.Compose(ringflake.Parts{Ticks: 1, Machine: lo + w})
			require.NoError(t, err)
			p := l.Decompose(id)
			assert.Equal(t, dc, p.Datacenter, "machine ID %d", lo+w)
			assert.Equal(t, w, p.Worker, "machine ID %d", lo+w)
		}
	}
	one := ringflake.Layout{TimeBits: 41, MachineBits: 10, SequenceBits: 12, DatacenterBits: 10}
	lo, hi, err := one.Workers(1023)
	require.NoError(t, err)
	assert.Equal(t, [2]int64{1023, 1023}, [2]int64{lo, hi}, "all bits datacenter: one worker each")
	for _, tt := range []struct {
		name string
		l    ringflake.Layout
		dc   int64
		want string
	}{
		{"no split", ringflake.DefaultLayout(), 0, "no datacenter split"},
		{"datacenter too big", l, 32, "datacenter = 32; valid range 0..31 (Layout.DatacenterBits 5)"},
		{"negative datacenter", l, -1, "datacenter = -1"},
		{"invalid layout", ringflake.Layout{TimeBits: 1}, 0, "Layout"},
	} {
		_, _, err := tt.l.Workers(tt.dc)
		assert.ErrorIs(t, err, ringflake.ErrInvalidConfig, tt.name)
		assert.ErrorContains(t, err, tt.want, tt.name)
	}
}

// JSLayout's figures, as its doc and the README give them: 53 bits, so
// every ID is exact as a JavaScript Number; the default's time field; 64
// machines of 64 IDs per millisecond.
func TestJSLayout(t *testing.T) {
	t.Parallel()
	l, def := ringflake.JSLayout(), ringflake.DefaultLayout()
	require.NoError(t, ringflake.LayoutValidate(l))
	assert.Equal(t, 53, l.TimeBits+l.MachineBits+l.SequenceBits)
	assert.True(t, l.End().Equal(def.End()), "the default's lifetime: End %v", l.End())
	assert.Equal(t, "2093-09-06T15:47:35.552Z", l.End().Format(time.RFC3339Nano))
	assert.Equal(t, int64(63), l.MaxMachine())
	assert.Equal(t, int64(63), ringflake.LayoutMaxSequence(l), "64 IDs per millisecond")
	top, err := l.Compose(ringflake.Parts{Ticks: ringflake.LayoutMaxTicks(l), Machine: l.MaxMachine(), Sequence: ringflake.LayoutMaxSequence(l)})
	require.NoError(t, err)
	assert.Equal(t, ringflake.ID(1<<53-1), top, "its largest ID is JavaScript's Number.MAX_SAFE_INTEGER")
	assert.Equal(t, float64(top), float64(int64(top)), "and exact as a float64")
	assert.Equal(t, int64(top), int64(float64(top)))
}

// The edges of narrow layouts: the smallest ones issue every ID they have
// and then fail with ErrTimeOverflow; a 53-bit and a 63-bit layout issue
// their largest ID in their last tick, and nothing after it.
func TestNarrowLayoutEdges(t *testing.T) {
	t.Parallel()
	epoch := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		l       ringflake.Layout
		machine int64
		from    int64          // the tick the clock starts at
		want    []ringflake.ID // every ID issued, one tick after another, until ErrTimeOverflow
	}{
		{"2 bits: one of time, one of sequence", ringflake.Layout{TimeBits: 1, SequenceBits: 1, Epoch: epoch}, 0, 0, []ringflake.ID{0, 1, 2, 3}},
		{"3 bits, machine 1", ringflake.Layout{TimeBits: 1, MachineBits: 1, SequenceBits: 1, Epoch: epoch}, 1, 0, []ringflake.ID{2, 3, 6, 7}},
		{"3 bits, machine 0", ringflake.Layout{TimeBits: 1, MachineBits: 1, SequenceBits: 1, Epoch: epoch}, 0, 0, []ringflake.ID{0, 1, 4, 5}},
		{"53 bits, the last tick", ringflake.Layout{TimeBits: 50, MachineBits: 2, SequenceBits: 1, Epoch: epoch, Tick: time.Microsecond}, 3, 1<<50 - 1,
			[]ringflake.ID{1<<53 - 2, 1<<53 - 1}},
		{"63 bits, the last tick", ringflake.Layout{TimeBits: 41, MachineBits: 20, SequenceBits: 2, Epoch: epoch}, 1<<20 - 1, 1<<41 - 1,
			[]ringflake.ID{1<<63 - 4, 1<<63 - 3, 1<<63 - 2, 1<<63 - 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tick := tt.l.Tick
			if tick == 0 {
				tick = time.Millisecond
			}
			clock := fakeclock.New(tt.l.Epoch.Add(time.Duration(tt.from) * tick))
			g, err := ringflake.New(t.Context(), ringflake.WithMachineID(tt.machine), ringflake.WithLayout(tt.l),
				ringflake.WithClock(clock.Now), ringflake.WithMaxWait(-1))
			require.NoError(t, err)
			defer g.Close()
			l := g.Layout()
			var got []ringflake.ID
			for range 100 {
				id, err := g.NextID()
				switch {
				case errors.Is(err, ringflake.ErrSequenceExhausted):
					clock.Add(l.Tick)
					continue
				case errors.Is(err, ringflake.ErrTimeOverflow):
				default:
					require.NoError(t, err)
					got = append(got, id)
					continue
				}
				break
			}
			// A tick starts at its spread start, at or below half its
			// sequence: the IDs below a start are never issued.
			assert.Subset(t, tt.want, got, "IDs within the layout")
			assert.NotEmpty(t, got)
			last := got[len(got)-1]
			assert.Equal(t, tt.want[len(tt.want)-1], last, "the last tick's last ID is the layout's largest of the machine")
			p := l.Decompose(last)
			assert.Equal(t, ringflake.LayoutMaxTicks(l), p.Ticks, "issued in the last tick")
			assert.Equal(t, tt.machine, p.Machine)
			back, err := l.Compose(p)
			require.NoError(t, err)
			assert.Equal(t, last, back)
			lo, hi, err := l.Bounds(p.Time, p.Time)
			require.NoError(t, err, "the last tick's start is in Bounds' range")
			assert.Equal(t, lo, hi)
			assert.LessOrEqual(t, lo, last, "the last tick's IDs are at or above its bound")
			_, _, err = l.Bounds(p.Time, l.End())
			assert.ErrorIs(t, err, ringflake.ErrInvalidConfig, "End is past the last tick's start: no ID has that time")
		})
	}
}

// TestJSLayoutMillionIDs is issue 23's check of a 53-bit layout: a
// generator on JSLayout, run up to the end of its range with its largest
// machine ID, issues a million unique IDs, every one below 2^53; each
// decomposes to its parts and composes back, lies in the Bounds of its
// tick, and survives JSON both as an ID (a string) and as a NumberID (a
// number read back as a float64, as JavaScript reads it).
func TestJSLayoutMillionIDs(t *testing.T) {
	t.Parallel()
	const n = 1_000_000
	l := ringflake.JSLayout()
	// 16 readings a millisecond: a tick holds at most 16 calls, well within
	// the 33 a tick after quiet ones is sure to hold, so no call waits. The
	// run takes n/16 ms and ends 10s before the layout does.
	start := l.End().Add(-n/16*time.Millisecond - 10*time.Second)
	clock := fakeclock.NewTicker(start, time.Millisecond/16)
	g, err := ringflake.New(t.Context(), ringflake.WithLayout(l), ringflake.WithMachineID(l.MaxMachine()), ringflake.WithClock(clock.Now))
	require.NoError(t, err)
	defer g.Close()
	ids := make([]ringflake.ID, n)
	for i := range ids {
		ids[i], err = g.NextID()
		require.NoError(t, err, "ID %d", i)
	}
	for i, id := range ids {
		if id < 0 || id > 1<<53-1 || i > 0 && id <= ids[i-1] {
			t.Fatalf("ID %d is %d, after %d: want increasing IDs below 2^53", i, id, ids[max(i-1, 0)])
		}
		p := l.Decompose(id)
		if p.Machine != l.MaxMachine() || p.Time.Before(start) || !p.Time.Before(l.End()) {
			t.Fatalf("ID %d decomposes to %+v; want machine 63 and a time in [%v, %v)", id, p, start, l.End())
		}
		back, err := l.Compose(p)
		if err != nil || back != id {
			t.Fatalf("Compose(Decompose(%d)) = %d, %v", id, back, err)
		}
		lo, hi, err := l.Bounds(p.Time, p.Time.Add(l.Tick))
		if err != nil || id < lo || id >= hi {
			t.Fatalf("ID %d (time %v) outside Bounds of its tick [%d, %d): %v", id, p.Time, lo, hi, err)
		}
	}
	assert.True(t, l.Decompose(ids[n-1]).Time.After(l.End().Add(-11*time.Second)), "the run reached the top of the range: %d", ids[n-1])

	nums := make([]ringflake.NumberID, n)
	for i, id := range ids {
		nums[i] = ringflake.NumberID(id)
	}
	b, err := json.Marshal(nums)
	require.NoError(t, err)
	require.Equal(t, byte('['), b[0])
	require.NotEqual(t, byte('"'), b[1], "numbers, not strings")
	var floats []float64 // what JavaScript's JSON.parse makes of them
	require.NoError(t, json.Unmarshal(b, &floats))
	var back []ringflake.NumberID
	require.NoError(t, json.Unmarshal(b, &back))
	b, err = json.Marshal(ids)
	require.NoError(t, err)
	var strs []ringflake.ID
	require.NoError(t, json.Unmarshal(b, &strs))
	for i, id := range ids {
		if int64(floats[i]) != int64(id) || ringflake.ID(back[i]) != id || strs[i] != id {
			t.Fatalf("ID %d came back from JSON as float64 %v, NumberID %d and ID %d", id, floats[i], back[i], strs[i])
		}
	}
}

// MachineLow swaps the low fields, as sonyflake lays them out (39 bits of
// time, 8 of sequence, 16 of machine ID): Decompose reads the machine ID
// from the lowest bits, Compose writes it there, Bounds is the same as
// without it, and New refuses to issue with it.
func TestLayoutMachineLow(t *testing.T) {
	t.Parallel()
	l := ringflake.Layout{TimeBits: 39, MachineBits: 16, SequenceBits: 8, Tick: 10 * time.Millisecond,
		Epoch: time.Date(2014, time.September, 1, 0, 0, 0, 0, time.UTC), MachineLow: true}
	const ticks, seq, machine = 123456789, 0xab, 0x1234
	id := ringflake.ID(ticks<<24 | seq<<16 | machine)
	p := l.Decompose(id)
	assert.Equal(t, int64(ticks), p.Ticks)
	assert.Equal(t, int64(machine), p.Machine)
	assert.Equal(t, int64(machine), p.Worker)
	assert.Equal(t, int64(seq), p.Sequence)
	assert.Equal(t, l.Epoch.Add(ticks*10*time.Millisecond), p.Time)
	back, err := l.Compose(ringflake.Parts{Ticks: ticks, Machine: machine, Sequence: seq})
	require.NoError(t, err)
	assert.Equal(t, id, back, "Compose puts the machine ID lowest")
	_, err = l.Compose(ringflake.Parts{Sequence: 256})
	assert.ErrorContains(t, err, "Parts.Sequence = 256; valid range 0..255")

	high := l
	high.MachineLow = false
	q := high.Decompose(id)
	assert.Equal(t, [2]int64{0xab12, 0x34}, [2]int64{q.Machine, q.Sequence}, "without it the low 24 bits read as machine 0xab12, sequence 0x34")
	from, to := l.Epoch.Add(time.Hour), l.Epoch.Add(2*time.Hour)
	lo, hi, err := l.Bounds(from, to)
	require.NoError(t, err)
	wantLo, wantHi, err := high.Bounds(from, to)
	require.NoError(t, err)
	assert.Equal(t, [2]ringflake.ID{wantLo, wantHi}, [2]ringflake.ID{lo, hi}, "the time field is where it was")

	_, err = ringflake.New(context.Background(), ringflake.WithLayout(l), ringflake.WithMachineID(1))
	assert.ErrorIs(t, err, ringflake.ErrInvalidConfig)
	assert.ErrorContains(t, err, "Layout.MachineLow is set")
}
