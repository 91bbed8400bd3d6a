package ringflake_test

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/internal/fakeclock"
	"github.com/ringflake/ringflake/machineid"
)

// tiny is a layout with 16 sequences per 1 ms tick, so tests reach
// exhaustion and step-back edge cases in a few calls.
var tiny = ringflake.Layout{
	TimeBits: 54, MachineBits: 5, SequenceBits: 4,
	Epoch: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), Tick: time.Millisecond,
}

// at returns the instant of tick n of tiny, plus off.
func at(n int64, off time.Duration) time.Time {
	return tiny.Epoch.Add(time.Duration(n)*tiny.Tick + off)
}

// readClock is a clock whose k-th reading (counting from 0, across all
// goroutines) is f(k). It is safe for concurrent use.
type readClock struct {
	reads atomic.Int64
	f     func(k int64) time.Time
}

func (c *readClock) Now() time.Time { return c.f(c.reads.Add(1) - 1) }

// hostileClocks are the clocks every concurrency test runs against. ring is
// the generator's ring size in ticks.
func hostileClocks(ring int64) map[string]func(k int64) time.Time {
	const perTick = 24 // reads per tick: more than the 16 sequences, so ticks run out
	walk := randomWalk(1, 4096, 5*ring)
	return map[string]func(k int64) time.Time{
		"steady": func(k int64) time.Time { return at(1000+k/perTick, 0) },
		"step back within ring": func(k int64) time.Time {
			n := 1000 + k/perTick
			if k > 600 {
				n -= ring / 2
			}
			return at(n, 0)
		},
		"step back beyond ring": func(k int64) time.Time {
			n := 1000 + k/perTick
			if k > 600 {
				n -= 3 * ring
			}
			return at(n, 0)
		},
		"repeated step backs": func(k int64) time.Time {
			return at(1000+(k%700)/perTick, 0)
		},
		"frozen":       func(int64) time.Time { return at(1000, 0) },
		"jump forward": func(k int64) time.Time { return at(1000+k/perTick+(k/500)*10*ring, 0) },
		"random walk":  func(k int64) time.Time { return at(walk[k%int64(len(walk))], time.Duration(k%7)*100*time.Microsecond) },
	}
}

// randomWalk returns n tick positions that jump up to ±span ticks at a time
// and stay above 0.
func randomWalk(seed uint64, n int, span int64) []int64 {
	rng := rand.New(rand.NewPCG(seed, seed))
	out := make([]int64, n)
	pos := int64(10 * span)
	for i := range out {
		switch rng.IntN(4) {
		case 0:
			pos -= rng.Int64N(span)
		case 1:
			pos += rng.Int64N(span)
		default:
			pos += rng.Int64N(2)
		}
		pos = max(pos, 1)
		out[i] = pos
	}
	return out
}

// drain runs goroutines × perG calls of NextID and returns the IDs issued
// and the errors seen.
func drain(t *testing.T, g *ringflake.Generator, goroutines, perG int) ([]ringflake.ID, []error) {
	t.Helper()
	ids := make([][]ringflake.ID, goroutines)
	errs := make([][]error, goroutines)
	var eg errgroup.Group
	for i := range goroutines {
		eg.Go(func() error {
			for range perG {
				id, err := g.NextID()
				if err != nil {
					errs[i] = append(errs[i], err)
					continue
				}
				ids[i] = append(ids[i], id)
			}
			return nil
		})
	}
	done := make(chan error, 1)
	go func() { done <- eg.Wait() }()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(60 * time.Second):
		t.Fatal("NextID calls did not return within 60s: an unbounded wait")
	}
	var allIDs []ringflake.ID
	var allErrs []error
	for i := range goroutines {
		allIDs = append(allIDs, ids[i]...)
		allErrs = append(allErrs, errs[i]...)
	}
	return allIDs, allErrs
}

func TestGeneratorHostileClocksConcurrent(t *testing.T) {
	t.Parallel()
	const ring, machine, goroutines, perG = 8, 21, 12, 300
	for name, f := range hostileClocks(ring) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			clock := &readClock{f: f}
			g, err := ringflake.New(t.Context(), ringflake.WithLayout(tiny), ringflake.WithMachineID(machine),
				ringflake.WithClock(clock.Now), ringflake.WithRingSize(ring),
				ringflake.WithMaxWait(2*time.Millisecond))
			require.NoError(t, err)
			frozenStart := ringflake.FreshStart(g, at(1000, 0))
			ids, errs := drain(t, g, goroutines, perG)

			seen := make(map[ringflake.ID]struct{}, len(ids))
			for _, id := range ids {
				_, dup := seen[id]
				require.Falsef(t, dup, "ID %d issued twice: %+v", id, tiny.Decompose(id))
				seen[id] = struct{}{}
				p := tiny.Decompose(id)
				require.Equal(t, int64(machine), p.Machine, "machine bits of every ID")
				require.Positive(t, int64(id), "IDs are positive")
			}
			for _, err := range errs {
				var ce *ringflake.ClockError
				require.ErrorAs(t, err, &ce, "failures are *ClockError")
				assert.Truef(t, errors.Is(err, ringflake.ErrClockBehind) || errors.Is(err, ringflake.ErrSequenceExhausted),
					"only clock-behind or exhausted failures are expected, got %v", err)
			}
			assert.Equal(t, goroutines*perG, len(ids)+len(errs), "every call returned")
			if name == "frozen" {
				assert.Len(t, ids, 16-frozenStart, "a frozen clock yields exactly one tick's sequences, from its start")
			} else {
				assert.Greater(t, len(ids), 16, "a moving clock keeps serving")
			}
		})
	}
}

func TestGeneratorOrderingWithMonotonicClock(t *testing.T) {
	t.Parallel()
	// The clock moves only when read, so a call waiting for the next tick
	// needs more readings, not more time: MaxWait is generous so that a
	// loaded machine's slow sleeps cannot turn this into a timing test.
	clock := fakeclock.NewTicker(at(5, 0), 37*time.Microsecond)
	g, err := ringflake.New(t.Context(), ringflake.WithMachineID(1), ringflake.WithLayout(tiny), ringflake.WithClock(clock.Now), ringflake.WithRingSize(4),
		ringflake.WithMaxWait(time.Minute))
	require.NoError(t, err)
	var last ringflake.ID
	for i := range 3000 {
		id, err := g.NextID()
		require.NoError(t, err)
		require.Greaterf(t, id, last, "call %d: NextID() = %d; want more than %d", i, id, last)
		last = id
	}
}

func TestGeneratorStepBackServesSpareSpace(t *testing.T) {
	t.Parallel()
	clock := fakeclock.New(at(100, 0))
	g, err := ringflake.New(t.Context(), ringflake.WithMachineID(1), ringflake.WithLayout(tiny), ringflake.WithClock(clock.Now),
		ringflake.WithRingSize(64), ringflake.WithMaxWait(-1))
	require.NoError(t, err)
	first, err := g.NextID()
	require.NoError(t, err)

	// Back 10 ticks, inside the ring: tick 90 was never used, so it starts
	// fresh, at its start, and carries the clock's own time.
	clock.Set(at(90, 0))
	start := ringflake.FreshStart(g, at(90, 0))
	id, err := g.NextID()
	require.NoError(t, err)
	p := tiny.Decompose(id)
	assert.Equal(t, int64(90), p.Ticks, "ticks after a step back inside the ring")
	assert.Equal(t, int64(start), p.Sequence, "an unused tick starts fresh")

	// Back to tick 100 again: its slot continues after the first ID.
	clock.Set(at(100, 0))
	id, err = g.NextID()
	require.NoError(t, err)
	assert.Equal(t, first+1, id, "tick 100 continues its sequence")

	// Back 64 ticks, a whole ring: the slot holds tick 100, which still has
	// spare sequences, so IDs continue it rather than failing.
	clock.Set(at(36, 0))
	id, err = g.NextID()
	require.NoError(t, err)
	assert.Equal(t, first+2, id, "a step back beyond the ring borrows the newer tick's spare space")
}

func TestGeneratorErrorsSayHowFar(t *testing.T) {
	t.Parallel()
	clock := fakeclock.New(at(100, 0))
	g, err := ringflake.New(t.Context(), ringflake.WithMachineID(1), ringflake.WithLayout(tiny), ringflake.WithClock(clock.Now),
		ringflake.WithRingSize(4), ringflake.WithMaxWait(-1))
	require.NoError(t, err)
	for range 16 - ringflake.FreshStart(g, at(100, 0)) { // the tick's sequence, from its start
		_, err := g.NextID()
		require.NoError(t, err)
	}

	_, err = g.NextID()
	var ce *ringflake.ClockError
	require.ErrorAs(t, err, &ce)
	assert.ErrorIs(t, err, ringflake.ErrSequenceExhausted, "frozen clock, full tick")

	clock.Set(at(96, 0)) // same slot as 100, which is full
	_, err = g.NextID()
	require.ErrorAs(t, err, &ce)
	assert.ErrorIs(t, err, ringflake.ErrClockBehind)
	assert.Equal(t, 4*time.Millisecond, ce.By, "how far behind the slot's tick")
	assert.Equal(t, time.Duration(0), ce.Waited, "a negative MaxWait never waits")
	assert.Contains(t, err.Error(), "4ms behind")

	clock.Set(tiny.Epoch.Add(-time.Second))
	_, err = g.NextID()
	require.ErrorAs(t, err, &ce)
	assert.ErrorIs(t, err, ringflake.ErrClockBeforeEpoch)
	assert.Equal(t, time.Second, ce.By)

	end := ringflake.Layout{TimeBits: 8, MachineBits: 1, SequenceBits: 54, Epoch: tiny.Epoch, Tick: time.Second}
	clock.Set(end.End().Add(-time.Millisecond)) // New checks that the layout can issue now
	g2, err := ringflake.New(t.Context(), ringflake.WithMachineID(1), ringflake.WithLayout(end), ringflake.WithClock(clock.Now))
	require.NoError(t, err)
	clock.Set(end.End().Add(time.Millisecond))
	_, err = g2.NextID()
	require.ErrorAs(t, err, &ce)
	assert.ErrorIs(t, err, ringflake.ErrTimeOverflow)
	assert.Equal(t, time.Millisecond, ce.By, "how far past the end")

	clock.Set(end.End().Add(-time.Nanosecond)) // the last instant of the last tick
	id, err := g2.NextID()
	require.NoError(t, err)
	assert.Equal(t, int64(255), end.Decompose(id).Ticks, "the last tick is usable")
}

func TestGeneratorWaitsForNextTick(t *testing.T) {
	t.Parallel()
	// The clock moves 0.25 ms per reading, so a full tick frees up after a
	// few short sleeps; with a generous MaxWait no call fails, however
	// slowly a loaded machine sleeps.
	clock := fakeclock.NewTicker(at(7, 0), 250*time.Microsecond)
	g, err := ringflake.New(t.Context(), ringflake.WithMachineID(1), ringflake.WithLayout(tiny), ringflake.WithClock(clock.Now),
		ringflake.WithMaxWait(time.Minute))
	require.NoError(t, err)
	ids, errs := drain(t, g, 8, 200)
	assert.Empty(t, errs)
	assert.Len(t, ids, 1600)
}

func TestNewRejectsBadOptions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		opts []ringflake.Option
		want string
	}{
		{"no machine ID", nil, "no machine ID: give WithMachineID, or WithMachineIDSource"},
		{"nil source only", []ringflake.Option{ringflake.WithMachineIDSource(nil)}, "no machine ID"},
		{"both machine ID kinds", []ringflake.Option{ringflake.WithMachineID(1), ringflake.WithMachineIDSource(machineid.FromFunc(9, nil))}, "both WithMachineID and WithMachineIDSource given"},
		{"negative machine", []ringflake.Option{ringflake.WithMachineID(-1)}, "machine ID = -1; valid range 0..1023"},
		{"machine too big", []ringflake.Option{ringflake.WithMachineID(1024)}, "machine ID = 1024; valid range 0..1023"},
		{"negative ring", []ringflake.Option{ringflake.WithMachineID(1), ringflake.WithRingSize(-1)}, "ring size = -1; valid range 1..4194304"},
		{"ring too big", []ringflake.Option{ringflake.WithMachineID(1), ringflake.WithRingSize(math.MaxInt)}, "valid range 1..4194304"},
		{"bits over 63", []ringflake.Option{ringflake.WithMachineID(1), ringflake.WithLayout(ringflake.Layout{TimeBits: 41, MachineBits: 10, SequenceBits: 13, Tick: time.Millisecond, Epoch: tiny.Epoch})}, "41+10+13 = 64; want a sum of at most 63"},
		{"tick under 1µs", []ringflake.Option{ringflake.WithMachineID(1), ringflake.WithLayout(ringflake.Layout{TimeBits: 41, MachineBits: 10, SequenceBits: 12, Epoch: tiny.Epoch, Tick: time.Microsecond - 1})}, "Layout.Tick = 999ns; valid range at least 1µs (0 means 1ms)"},
		{"epoch ahead of the clock", []ringflake.Option{ringflake.WithMachineID(1), ringflake.WithLayout(ringflake.Layout{TimeBits: 41, MachineBits: 10, SequenceBits: 12, Tick: time.Millisecond, Epoch: time.Now().Add(time.Hour)})}, "is ahead of the clock"},
		{"epoch ahead of an injected clock", []ringflake.Option{ringflake.WithMachineID(1), ringflake.WithClock(func() time.Time { return tiny.Epoch.Add(-time.Nanosecond) }), ringflake.WithLayout(tiny)}, "is ahead of the clock"},
		{"layout already ended", []ringflake.Option{ringflake.WithMachineID(1), ringflake.WithLayout(ringflake.Layout{TimeBits: 20, MachineBits: 10, SequenceBits: 33, Tick: time.Millisecond, Epoch: tiny.Epoch})}, "the layout's range ended at 2024-01-01T00:17:28.576Z"},
		{"machine bits too few", []ringflake.Option{ringflake.WithLayout(tiny), ringflake.WithMachineID(32)}, "machine ID = 32; valid range 0..31"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g, err := ringflake.New(t.Context(), tt.opts...)
			assert.Nil(t, g)
			require.ErrorIs(t, err, ringflake.ErrInvalidConfig)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
	var none context.Context
	_, err := ringflake.New(none, ringflake.WithMachineID(1))
	require.ErrorIs(t, err, ringflake.ErrInvalidConfig, "a nil context")
	assert.Contains(t, err.Error(), "New's context is nil")
}

// TestZeroMeansTheDefault checks that 0 means the default for the options
// that take a size or a duration, and that a negative MaxWait never waits:
// with a frozen clock and its tick used up, MaxWait 0 waits the default
// 100 ms before it fails, and -1 fails at once.
func TestZeroMeansTheDefault(t *testing.T) {
	t.Parallel()
	frozen := func() time.Time { return at(5000, 0) }
	for _, tt := range []struct {
		name    string
		maxWait time.Duration
		waits   bool
	}{
		{"zero is the default 100ms", 0, true},
		{"negative never waits", -1, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g, err := ringflake.New(t.Context(), ringflake.WithMachineID(1), ringflake.WithLayout(tiny), ringflake.WithClock(frozen),
				ringflake.WithMaxWait(tt.maxWait), ringflake.WithRingSize(0))
			require.NoError(t, err)
			issued := 0
			for ; err == nil; issued++ {
				_, err = g.NextID()
			}
			issued-- // the call that failed
			assert.GreaterOrEqual(t, issued, 9, "a fresh tick starts below half of its 16 sequences")
			require.ErrorIs(t, err, ringflake.ErrSequenceExhausted)
			var ce *ringflake.ClockError
			require.ErrorAs(t, err, &ce)
			if tt.waits {
				assert.Greater(t, ce.Waited, 90*time.Millisecond, "MaxWait 0 waits the default 100ms, less at most the tick it would overrun")
			} else {
				assert.Zero(t, ce.Waited, "a negative MaxWait never waits")
			}
		})
	}
}

func TestZeroAndClosedGenerator(t *testing.T) {
	t.Parallel()
	var zero ringflake.Generator
	_, err := zero.NextID()
	assert.ErrorIs(t, err, ringflake.ErrClosed, "zero Generator")
	var nilGen *ringflake.Generator
	_, err = nilGen.NextID()
	assert.ErrorIs(t, err, ringflake.ErrClosed, "nil *Generator")
	assert.NoError(t, nilGen.Close())
	assert.Equal(t, int64(-1), nilGen.Lease().ID)
	assert.ErrorIs(t, zero.Lease().Err, ringflake.ErrClosed)

	g, err := ringflake.New(t.Context(), ringflake.WithMachineID(9))
	require.NoError(t, err)
	assert.Equal(t, machineid.Lease{ID: 9, Held: true}, g.Lease())
	assert.Equal(t, ringflake.DefaultLayout(), g.Layout())
	require.NoError(t, g.Close())
	require.NoError(t, g.Close(), "Close twice")
	_, err = g.NextID()
	assert.ErrorIs(t, err, ringflake.ErrClosed)
	assert.Equal(t, int64(-1), g.Lease().ID)
	assert.False(t, g.Lease().Held)
	assert.ErrorIs(t, g.Lease().Err, ringflake.ErrClosed)
}

func TestNextIDAllocatesNothing(t *testing.T) {
	g, err := ringflake.New(t.Context(), ringflake.WithMachineID(1))
	require.NoError(t, err)
	allocs := testing.AllocsPerRun(1000, func() {
		if _, err := g.NextID(); err != nil {
			t.Fatal(err)
		}
	})
	assert.Zero(t, allocs, "allocations per NextID")
}

func TestDefaultClockIsWallClock(t *testing.T) {
	t.Parallel()
	g, err := ringflake.New(t.Context(), ringflake.WithMachineID(3))
	require.NoError(t, err)
	before := time.Now().Truncate(time.Millisecond)
	id, err := g.NextID()
	require.NoError(t, err)
	after := time.Now()
	p := g.Layout().Decompose(id)
	assert.False(t, p.Time.Before(before), "ID time %v is not before %v", p.Time, before)
	assert.False(t, p.Time.After(after), "ID time %v is not after %v", p.Time, after)
	assert.Equal(t, int64(3), p.Machine)
}

// The real wall clock, many goroutines, far more IDs than one tick holds:
// callers wait for ticks and every ID is distinct.
func TestGeneratorRealClockConcurrent(t *testing.T) {
	t.Parallel()
	g, err := ringflake.New(t.Context(), ringflake.WithMachineID(1023), ringflake.WithMaxWait(10*time.Second))
	require.NoError(t, err)
	ids, errs := drain(t, g, 16, 5000)
	require.Empty(t, errs, "a steady real clock never fails within a generous wait")
	seen := make(map[ringflake.ID]struct{}, len(ids))
	for _, id := range ids {
		_, dup := seen[id]
		require.False(t, dup, "ID %d issued twice", id)
		seen[id] = struct{}{}
	}
	assert.Len(t, seen, 80000)
	s := g.Stats()
	assert.Equal(t, uint64(80000), s.Issued)
	assert.Zero(t, s.Failed, "no errors counted")
}
