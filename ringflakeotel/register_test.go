package ringflakeotel_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/machineid"
	"github.com/ringflake/ringflake/ringflakeotel"
)

// small is a layout whose ticks hold 16 IDs and whose range ends after
// 4096 ticks, so that exhaustion and overflow are easy to reach.
var small = ringflake.Layout{
	TimeBits: 12, MachineBits: 47, SequenceBits: 4,
	Epoch: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), Tick: time.Millisecond,
}

// at returns the instant of tick n of small.
func at(n int64) time.Time { return small.Epoch.Add(time.Duration(n) * small.Tick) }

// clock is a manual clock, safe for concurrent use.
type clock struct{ ns atomic.Int64 }

func newClock(t time.Time) *clock {
	c := &clock{}
	c.Set(t)
	return c
}

func (c *clock) Now() time.Time  { return time.Unix(0, c.ns.Load()).UTC() }
func (c *clock) Set(t time.Time) { c.ns.Store(t.UnixNano()) }

// leaser is a machineid.Leaser whose lease the test sets.
type leaser struct {
	mu    sync.Mutex // protects lease and watch, and keeps calls to watch from overlapping
	lease machineid.Lease
	watch func(machineid.Lease)
}

func (l *leaser) MachineID(context.Context) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lease.ID, nil
}

func (l *leaser) Watch(fn func(machineid.Lease)) (stop func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.watch = fn
	fn(l.lease)
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.watch = nil
	}
}

func (l *leaser) Release(time.Time) error { return nil }

// set changes the lease and tells the watcher, as a renewal would.
func (l *leaser) set(lease machineid.Lease) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lease = lease
	if l.watch != nil {
		l.watch(lease)
	}
}

const scope = "github.com/ringflake/ringflake/ringflakeotel"

// collect collects r and returns its data points, keyed by instrument name
// and attributes as in `name{k="v"}`, and a description of each instrument
// with points: its kind and unit.
func collect(t *testing.T, r *sdkmetric.ManualReader) (map[string]float64, map[string]string) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, r.Collect(context.Background(), &rm))
	samples, kinds := map[string]float64{}, map[string]string{}
	for _, sm := range rm.ScopeMetrics {
		require.Equal(t, scope, sm.Scope.Name, "the scope is the package's path")
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				require.True(t, d.IsMonotonic && d.Temporality == metricdata.CumulativeTemporality, "%s is a cumulative counter", m.Name)
				kinds[m.Name] = "Int64 counter " + m.Unit
				for _, p := range d.DataPoints {
					samples[key(m.Name, p.Attributes)] = float64(p.Value)
				}
			case metricdata.Sum[float64]:
				require.True(t, d.IsMonotonic && d.Temporality == metricdata.CumulativeTemporality, "%s is a cumulative counter", m.Name)
				kinds[m.Name] = "Float64 counter " + m.Unit
				for _, p := range d.DataPoints {
					samples[key(m.Name, p.Attributes)] = p.Value
				}
			case metricdata.Gauge[int64]:
				kinds[m.Name] = "Int64 gauge " + m.Unit
				for _, p := range d.DataPoints {
					samples[key(m.Name, p.Attributes)] = float64(p.Value)
				}
			case metricdata.Gauge[float64]:
				kinds[m.Name] = "Float64 gauge " + m.Unit
				for _, p := range d.DataPoints {
					samples[key(m.Name, p.Attributes)] = p.Value
				}
			default:
				t.Fatalf("%s: unexpected data %T", m.Name, m.Data)
			}
		}
	}
	return samples, kinds
}

func key(name string, s attribute.Set) string {
	if s.Len() == 0 {
		return name
	}
	var kv []string
	for _, a := range s.ToSlice() { // sorted by key
		kv = append(kv, fmt.Sprintf("%s=%q", a.Key, a.Value.String()))
	}
	return name + "{" + strings.Join(kv, ",") + "}"
}

// failures returns the failure counter's points with the given counts by
// error type; types not given are 0.
func failures(counts map[string]float64) map[string]float64 {
	m := map[string]float64{}
	for _, r := range []string{"before_epoch", "time_overflow", "clock_behind", "sequence_exhausted", "mark_ahead", "lease_lost"} {
		m[`ringflake.failures{error.type="`+r+`"}`] = counts[r]
	}
	return m
}

// merge returns the union of ms; later maps win.
func merge(ms ...map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// register registers g with a new provider whose manual reader it returns;
// the registration is undone when the test ends.
func register(t *testing.T, g *ringflake.Generator, opts ...ringflakeotel.Option) *sdkmetric.ManualReader {
	t.Helper()
	r := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	reg, err := ringflakeotel.Register(g, mp, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, reg.Unregister()) })
	return r
}

func TestRegisterAfterTraffic(t *testing.T) {
	t.Parallel()
	clk := newClock(at(100))
	g, err := ringflake.New(t.Context(), ringflake.WithMachineID(7), ringflake.WithLayout(small), ringflake.WithClock(clk.Now), ringflake.WithMaxWait(-1))
	require.NoError(t, err)
	defer g.Close()
	r := register(t, g)

	issue := func(n int) {
		t.Helper()
		for range n {
			_, err := g.NextID()
			require.NoError(t, err)
		}
	}
	// Each kind fails a different number of times, so a swapped type shows.
	fail := func(n int, want error) {
		t.Helper()
		for range n {
			_, err := g.NextID()
			require.ErrorIs(t, err, want)
		}
	}
	// A tick starts its sequence at a spread value, which its first ID
	// shows: room returns how many IDs a tick holds from there, that ID
	// included.
	room := func() int {
		t.Helper()
		id, err := g.NextID()
		require.NoError(t, err)
		return 16 - int(small.Decompose(id).Sequence)
	}
	at100 := room()
	issue(at100 - 1 - 6) // all but tick 100's last 6
	clk.Set(at(50))      // back 50 ticks
	issue(5)
	clk.Set(at(40)) // further back: the same step back, now 60 ticks
	at40 := room()
	issue(at40 - 1)                   // the rest of tick 40
	fail(3, ringflake.ErrClockBehind) // tick 40's spare sequence is used up
	clk.Set(at(100))
	issue(6) // the rest of tick 100
	fail(4, ringflake.ErrSequenceExhausted)
	clk.Set(small.Epoch.Add(-time.Millisecond))
	fail(1, ringflake.ErrClockBeforeEpoch)
	clk.Set(at(5000)) // past the range's 4096 ticks
	fail(2, ringflake.ErrTimeOverflow)

	samples, kinds := collect(t, r)
	assert.Equal(t, merge(map[string]float64{
		"ringflake.ids.issued":              float64(at100 + 5 + at40),
		"ringflake.spare_ids.issued":        float64(5 + at40), // 5 at tick 50, and tick 40 from its start
		"ringflake.clock.step_backs":        1,
		"ringflake.clock.largest_step_back": 0.06,
		"ringflake.waits":                   0, // a negative MaxWait never waits
		"ringflake.wait.time":               0,
		"ringflake.wait.longest":            0,
		"ringflake.start.wait":              0, // a fixed ID: New did not wait
		"ringflake.lease.held":              1, // a fixed ID is always held, without marks
		"ringflake.machine.id":              7,
		"ringflake.layout.end":              1704067204.096, // 2024-01-01T00:00:04.096Z, 4096 ticks after the epoch
	}, failures(map[string]float64{"before_epoch": 1, "time_overflow": 2, "clock_behind": 3, "sequence_exhausted": 4})), samples)
	assert.Equal(t, map[string]string{
		"ringflake.ids.issued":              "Int64 counter {id}",
		"ringflake.spare_ids.issued":        "Int64 counter {id}",
		"ringflake.clock.step_backs":        "Int64 counter {step_back}",
		"ringflake.clock.largest_step_back": "Float64 gauge s",
		"ringflake.waits":                   "Int64 counter {call}",
		"ringflake.wait.time":               "Float64 counter s",
		"ringflake.wait.longest":            "Float64 gauge s",
		"ringflake.start.wait":              "Float64 gauge s",
		"ringflake.failures":                "Int64 counter {call}",
		"ringflake.lease.held":              "Int64 gauge ",
		"ringflake.machine.id":              "Int64 gauge ",
		"ringflake.layout.end":              "Float64 gauge s",
	}, kinds, "no mark gauges without marks, no clock offset without a measurement")
}

// secs returns t in seconds since 1970, as a timestamp gauge has it.
func secs(t time.Time) float64 { return float64(t.Unix()) + float64(t.Nanosecond())/1e9 }

func TestRegisterWaits(t *testing.T) {
	t.Parallel()
	clk := newClock(at(100)) // frozen: a wait for the next tick never ends
	g, err := ringflake.New(t.Context(), ringflake.WithMachineID(1), ringflake.WithLayout(small), ringflake.WithClock(clk.Now), ringflake.WithMaxWait(2*time.Millisecond))
	require.NoError(t, err)
	defer g.Close()
	r := register(t, g)
	dst := make([]ringflake.ID, 17)
	n, err := g.NextN(dst)
	require.ErrorIs(t, err, ringflake.ErrSequenceExhausted)
	require.Equal(t, 16, n, "a frozen clock fills one tick")

	samples, _ := collect(t, r)
	s := g.Stats()
	require.Positive(t, s.WaitTime, "the call waited")
	assert.Equal(t, 1.0, samples["ringflake.waits"])
	assert.Equal(t, s.WaitTime.Seconds(), samples["ringflake.wait.time"], "the wait in seconds")
	assert.Equal(t, s.WaitTime.Seconds(), samples["ringflake.wait.longest"], "one call waited: the longest wait")
	assert.Equal(t, 1.0, samples[`ringflake.failures{error.type="sequence_exhausted"}`])
}

// TestRegisterClockOffset checks that the lease's clock offset and its
// uncertainty are observed once measured, and not before.
func TestRegisterClockOffset(t *testing.T) {
	t.Parallel()
	l := &leaser{lease: machineid.Lease{ID: 7, Held: true}}
	g, err := ringflake.New(t.Context(), ringflake.WithMachineIDSource(l))
	require.NoError(t, err)
	defer g.Close()
	r := register(t, g)
	samples, _ := collect(t, r)
	assert.NotContains(t, samples, "ringflake.clock.offset", "no offset before a measurement")
	l.set(machineid.Lease{ID: 7, Held: true, Clock: machineid.ClockOffset{By: -1500 * time.Millisecond, Within: 2 * time.Millisecond, Against: "Redis's clock (TIME)", Bound: 2 * time.Second}})
	samples, _ = collect(t, r)
	assert.Equal(t, -1.5, samples["ringflake.clock.offset"], "the clock 1.5s behind the store's")
	assert.Equal(t, 0.002, samples["ringflake.clock.offset.uncertainty"])
}

// A layout of fewer than 63 bits, JSLayout's 53, reports its own end and
// machine ID like any other.
func TestRegisterNarrowLayout(t *testing.T) {
	t.Parallel()
	g, err := ringflake.New(t.Context(), ringflake.WithMachineID(63), ringflake.WithLayout(ringflake.JSLayout()))
	require.NoError(t, err)
	defer g.Close()
	r := register(t, g)
	_, err = g.NextID()
	require.NoError(t, err)
	samples, _ := collect(t, r)
	assert.Equal(t, 3903090455.552, samples["ringflake.layout.end"], "2093-09-06T15:47:35.552Z, 2^41 ms after 2024-01-01")
	assert.Equal(t, 63.0, samples["ringflake.machine.id"])
	assert.Equal(t, 1.0, samples["ringflake.ids.issued"])
}

func TestRegisterLease(t *testing.T) {
	t.Parallel()
	clk := newClock(at(100))
	l := &leaser{lease: machineid.Lease{ID: 7, Held: true, After: at(90), Until: at(300)}}
	g, err := ringflake.New(t.Context(), ringflake.WithMachineIDSource(l), ringflake.WithLayout(small), ringflake.WithClock(clk.Now), ringflake.WithMaxWait(-1))
	require.NoError(t, err)
	defer g.Close()
	r := register(t, g)
	lease := func() map[string]float64 {
		t.Helper()
		samples, _ := collect(t, r)
		out := map[string]float64{}
		for k, v := range samples {
			if strings.HasPrefix(k, "ringflake.lease.") || k == "ringflake.machine.id" || strings.HasPrefix(k, "ringflake.failures") && v != 0 {
				out[k] = v
			}
		}
		return out
	}

	assert.Equal(t, map[string]float64{
		"ringflake.lease.held":           1,
		"ringflake.machine.id":           7,
		"ringflake.lease.confirmed_mark": secs(at(300)),
		"ringflake.lease.inherited_mark": secs(at(90)), // passed
	}, lease(), "held, inherited mark passed")

	l.set(machineid.Lease{ID: 7, Held: true, After: at(150), Until: at(400)})
	_, err = g.NextID()
	require.ErrorIs(t, err, ringflake.ErrMarkAhead)
	assert.Equal(t, map[string]float64{
		"ringflake.lease.held":                        1,
		"ringflake.machine.id":                        7,
		"ringflake.lease.confirmed_mark":              secs(at(400)),
		"ringflake.lease.inherited_mark":              secs(at(150)),
		`ringflake.failures{error.type="mark_ahead"}`: 1,
	}, lease(), "held, inherited mark ahead")

	clk.Set(at(500))
	l.set(machineid.Lease{ID: 7, Held: true, Until: at(450)})
	_, err = g.NextID()
	require.ErrorIs(t, err, ringflake.ErrLeaseLost)
	assert.Equal(t, map[string]float64{
		"ringflake.lease.held":                        1,
		"ringflake.machine.id":                        7,
		"ringflake.lease.confirmed_mark":              secs(at(450)), // behind the clock's at(500)
		`ringflake.failures{error.type="mark_ahead"}`: 1,
		`ringflake.failures{error.type="lease_lost"}`: 1,
	}, lease(), "held, clock past the confirmed mark")

	l.set(machineid.Lease{ID: 7, Err: errors.New("store unreachable")})
	_, err = g.NextID()
	require.ErrorIs(t, err, ringflake.ErrLeaseLost)
	assert.Equal(t, map[string]float64{
		"ringflake.lease.held":                        0,
		"ringflake.machine.id":                        7,
		`ringflake.failures{error.type="mark_ahead"}`: 1,
		`ringflake.failures{error.type="lease_lost"}`: 2,
	}, lease(), "not held, no marks")

	require.NoError(t, g.Close())
	assert.Equal(t, map[string]float64{
		"ringflake.lease.held":                        0,
		"ringflake.machine.id":                        -1,
		`ringflake.failures{error.type="mark_ahead"}`: 1,
		`ringflake.failures{error.type="lease_lost"}`: 2,
	}, lease(), "closed")
}

func TestRegisterAttributesAndUnregister(t *testing.T) {
	t.Parallel()
	r := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	defer mp.Shutdown(context.Background())
	var unregister []func() error
	for i, name := range []string{"orders", "users"} {
		g, err := ringflake.New(t.Context(), ringflake.WithMachineID(1))
		require.NoError(t, err)
		defer g.Close()
		for range i + 1 {
			_, err = g.NextID()
			require.NoError(t, err)
		}
		reg, err := ringflakeotel.Register(g, mp, ringflakeotel.WithAttributes(attribute.String("generator", name)))
		require.NoError(t, err)
		unregister = append(unregister, reg.Unregister)
	}

	samples, _ := collect(t, r)
	assert.Equal(t, 1.0, samples[`ringflake.ids.issued{generator="orders"}`])
	assert.Equal(t, 2.0, samples[`ringflake.ids.issued{generator="users"}`])
	v, ok := samples[`ringflake.failures{error.type="lease_lost",generator="users"}`]
	assert.True(t, ok, "the attributes combine with error.type")
	assert.Zero(t, v)

	require.NoError(t, unregister[0]())
	samples, _ = collect(t, r)
	_, ok = samples[`ringflake.ids.issued{generator="orders"}`]
	assert.False(t, ok, "an unregistered generator is no longer observed")
	assert.Equal(t, 2.0, samples[`ringflake.ids.issued{generator="users"}`])
	require.NoError(t, unregister[1]())
}
