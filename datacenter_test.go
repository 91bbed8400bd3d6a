package ringflake_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/machineid"
)

// twitter is the default layout with Twitter's split of the machine ID: 5
// bits of datacenter, 5 of worker.
func twitter() ringflake.Layout {
	l := ringflake.DefaultLayout()
	l.DatacenterBits = 5
	return l
}

// A generator takes its datacenter from WithDatacenter and its worker from
// WithMachineID or its source; its IDs decompose into both.
func TestDatacenterAndWorker(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		worker ringflake.Option
	}{
		{"fixed worker", ringflake.WithMachineID(7)},
		{"worker from a source", ringflake.WithMachineIDSource(machineid.FromFunc(1023, func(context.Context) (int64, error) { return 7, nil }))},
		{"worker from a lease", ringflake.WithMachineIDSource(newFakeLeaser(machineid.Lease{ID: 7, Held: true}))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g, err := ringflake.New(ringflake.WithLayout(twitter()), ringflake.WithDatacenter(3), tt.worker)
			require.NoError(t, err)
			defer g.Close()
			ids := make([]ringflake.ID, 5000)
			_, err = g.NextN(ids)
			require.NoError(t, err)
			id, err := g.NextID()
			require.NoError(t, err)
			for _, id := range append(ids, id) {
				p := g.Layout().Decompose(id)
				require.Equal(t, int64(3), p.Datacenter, "ID %d", id)
				require.Equal(t, int64(7), p.Worker, "ID %d", id)
				require.Equal(t, int64(3<<5|7), p.Machine, "ID %d", id)
			}
			assert.Equal(t, int64(3<<5|7), g.Lease().ID, "Lease reports the whole machine ID")
		})
	}
}

func TestDatacenterRefused(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		opts []ringflake.Option
		want string
	}{
		{"split without a datacenter", []ringflake.Option{ringflake.WithLayout(twitter()), ringflake.WithMachineID(1)},
			"the layout splits the machine ID into 5 bits of datacenter and 5 of worker (Layout.DatacenterBits 5); give WithDatacenter(0..31)"},
		{"datacenter without a split", []ringflake.Option{ringflake.WithDatacenter(1), ringflake.WithMachineID(1)},
			"WithDatacenter(1) given, but the layout has no datacenter split"},
		{"datacenter too big", []ringflake.Option{ringflake.WithLayout(twitter()), ringflake.WithDatacenter(32), ringflake.WithMachineID(1)},
			"datacenter = 32; valid range 0..31"},
		{"fixed worker too big", []ringflake.Option{ringflake.WithLayout(twitter()), ringflake.WithDatacenter(1), ringflake.WithMachineID(32)},
			"machine ID (the worker within datacenter 1) = 32; valid range 0..31"},
		{"source's worker too big", []ringflake.Option{ringflake.WithLayout(twitter()), ringflake.WithDatacenter(1),
			ringflake.WithMachineIDSource(machineid.FromFunc(1023, func(context.Context) (int64, error) { return 40, nil }))},
			"worker from the machine ID source (datacenter 1) = 40; valid range 0..31 (Layout.MaxWorker)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ringflake.New(tt.opts...)
			assert.ErrorIs(t, err, ringflake.ErrInvalidConfig)
			assert.ErrorContains(t, err, tt.want)
		})
	}
}

// A lease whose worker does not fit is not held, and released; a lease
// that later reports such a worker stops the generator rather than let the
// worker spill into the datacenter's bits.
func TestDatacenterLeaseOutsideTheWorkers(t *testing.T) {
	t.Parallel()
	f := newFakeLeaser(machineid.Lease{ID: 32, Held: true})
	_, err := ringflake.New(ringflake.WithLayout(twitter()), ringflake.WithDatacenter(1), ringflake.WithMachineIDSource(f))
	require.ErrorContains(t, err, "worker from the machine ID source (datacenter 1) = 32")
	assert.Equal(t, 1, f.closeCount(), "the lease taken is released")

	f = newFakeLeaser(machineid.Lease{ID: 4, Held: true})
	g, err := ringflake.New(ringflake.WithLayout(twitter()), ringflake.WithDatacenter(1), ringflake.WithMachineIDSource(f), ringflake.WithMaxWait(0))
	require.NoError(t, err)
	defer g.Close()
	f.set(machineid.Lease{ID: 33, Held: true})
	_, err = g.NextID()
	assert.ErrorIs(t, err, ringflake.ErrLeaseLost)
	assert.ErrorContains(t, err, "worker from the machine ID source (datacenter 1) = 33")
	assert.False(t, g.Lease().Held)
}

// One Leaser serves one generator, with a datacenter split too, and is
// free again after Close.
func TestDatacenterLeaserServesOneGenerator(t *testing.T) {
	t.Parallel()
	f := newFakeLeaser(machineid.Lease{ID: 5, Held: true})
	g, err := ringflake.New(ringflake.WithLayout(twitter()), ringflake.WithDatacenter(1), ringflake.WithMachineIDSource(f))
	require.NoError(t, err)
	for _, opts := range [][]ringflake.Option{
		{ringflake.WithLayout(twitter()), ringflake.WithDatacenter(2), ringflake.WithMachineIDSource(f)},
		{ringflake.WithMachineIDSource(f)},
	} {
		_, err = ringflake.New(opts...)
		assert.ErrorContains(t, err, "already serves a live generator")
	}
	require.NoError(t, g.Close())
	g2, err := ringflake.New(ringflake.WithMachineIDSource(f))
	require.NoError(t, err, "free after Close")
	require.NoError(t, g2.Close())
}

// New warns of a layout that ends within a year of its clock, and not of
// one that ends later.
func TestNewWarnsOfALayoutNearItsEnd(t *testing.T) {
	t.Parallel()
	// The 43/10/10 layout with a 1µs tick and an epoch of today:
	// accepted, it ends in 101 days.
	short := ringflake.Layout{TimeBits: 43, MachineBits: 10, SequenceBits: 10, Tick: time.Microsecond,
		Epoch: time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)}
	require.Equal(t, "2027-03-06", short.End().Format(time.DateOnly))
	def := ringflake.DefaultLayout()
	tests := []struct {
		name  string
		l     ringflake.Layout
		clock time.Time
		left  time.Duration // 0: no warning
	}{
		{"ends in 101 days", short, short.Epoch.Add(time.Hour), short.End().Sub(short.Epoch.Add(time.Hour))},
		{"ends within a year", def, def.End().Add(-364 * 24 * time.Hour), 364 * 24 * time.Hour},
		{"ends in more than a year", def, def.End().Add(-366 * 24 * time.Hour), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var rec records
			g, err := ringflake.New(ringflake.WithMachineID(1), ringflake.WithLayout(tt.l), ringflake.WithLogger(slog.New(&rec)),
				ringflake.WithClock(func() time.Time { return tt.clock }))
			require.NoError(t, err)
			defer g.Close()
			got := rec.get("ringflake: the layout's range ends within a year; IDs fail with ErrTimeOverflow from then on")
			if tt.left == 0 {
				assert.Empty(t, got)
				return
			}
			require.Len(t, got, 1)
			assert.True(t, tt.l.End().Equal(got[0]["ends"].(time.Time)), "ends %v; want %v", got[0]["ends"], tt.l.End())
			assert.Equal(t, tt.left, got[0]["left"])
		})
	}
}
