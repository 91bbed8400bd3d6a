package ringflakeprom_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/machineid"
	"github.com/ringflake/ringflake/ringflakeprom"
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

// scrape serves reg through promhttp and returns the samples of its text
// exposition, keyed by name and labels as in `name{k="v"}`, and the type of
// each family.
func scrape(t *testing.T, reg *prometheus.Registry) (map[string]float64, map[string]dto.MetricType) {
	t.Helper()
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(resp.Body)
	require.NoError(t, err, "the exposition parses")
	samples, types := map[string]float64{}, map[string]dto.MetricType{}
	for name, f := range families {
		types[name] = f.GetType()
		for _, m := range f.GetMetric() {
			samples[key(name, m.GetLabel())] = value(f.GetType(), m)
		}
	}
	return samples, types
}

func key(name string, labels []*dto.LabelPair) string {
	if len(labels) == 0 {
		return name
	}
	var kv []string
	for _, l := range labels {
		kv = append(kv, l.GetName()+`="`+l.GetValue()+`"`)
	}
	sort.Strings(kv)
	return name + "{" + strings.Join(kv, ",") + "}"
}

func value(typ dto.MetricType, m *dto.Metric) float64 {
	if typ == dto.MetricType_COUNTER {
		return m.GetCounter().GetValue()
	}
	return m.GetGauge().GetValue()
}

// failures returns the failure counters' samples with the given counts by
// reason; reasons not given are 0.
func failures(counts map[string]float64) map[string]float64 {
	m := map[string]float64{}
	for _, r := range []string{"before_epoch", "time_overflow", "clock_behind", "sequence_exhausted", "mark_ahead", "lease_lost"} {
		m[`ringflake_failures_total{reason="`+r+`"}`] = counts[r]
	}
	return m
}

// secs returns t in seconds since 1970, as a timestamp gauge has it.
func secs(t time.Time) float64 { return float64(t.Unix()) + float64(t.Nanosecond())/1e9 }

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

func TestCollectorAfterTraffic(t *testing.T) {
	t.Parallel()
	clk := newClock(at(100))
	g, err := ringflake.New(t.Context(), ringflake.WithMachineID(7), ringflake.WithLayout(small), ringflake.WithClock(clk.Now), ringflake.WithMaxWait(-1))
	require.NoError(t, err)
	defer g.Close()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(ringflakeprom.NewCollector(g)))

	issue := func(n int) {
		t.Helper()
		for range n {
			_, err := g.NextID()
			require.NoError(t, err)
		}
	}
	// Each kind fails a different number of times, so a swapped reason shows.
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

	samples, types := scrape(t, reg)
	assert.Equal(t, merge(map[string]float64{
		"ringflake_ids_issued_total":                float64(at100 + 5 + at40),
		"ringflake_spare_ids_issued_total":          float64(5 + at40), // 5 at tick 50, and tick 40 from its start
		"ringflake_clock_step_backs_total":          1,
		"ringflake_clock_largest_step_back_seconds": 0.06,
		"ringflake_waits_total":                     0, // a negative MaxWait never waits
		"ringflake_wait_seconds_total":              0,
		"ringflake_longest_wait_seconds":            0,
		"ringflake_start_wait_seconds":              0, // a fixed ID: New did not wait
		"ringflake_lease_held":                      1, // a fixed ID is always held, without marks
		"ringflake_machine_id":                      7,
		"ringflake_layout_end_timestamp_seconds":    1704067204.096, // 2024-01-01T00:00:04.096Z, 4096 ticks after the epoch
	}, failures(map[string]float64{"before_epoch": 1, "time_overflow": 2, "clock_behind": 3, "sequence_exhausted": 4})), samples)
	assert.Equal(t, map[string]dto.MetricType{
		"ringflake_ids_issued_total":                dto.MetricType_COUNTER,
		"ringflake_spare_ids_issued_total":          dto.MetricType_COUNTER,
		"ringflake_clock_step_backs_total":          dto.MetricType_COUNTER,
		"ringflake_clock_largest_step_back_seconds": dto.MetricType_GAUGE,
		"ringflake_waits_total":                     dto.MetricType_COUNTER,
		"ringflake_wait_seconds_total":              dto.MetricType_COUNTER,
		"ringflake_longest_wait_seconds":            dto.MetricType_GAUGE,
		"ringflake_start_wait_seconds":              dto.MetricType_GAUGE,
		"ringflake_failures_total":                  dto.MetricType_COUNTER,
		"ringflake_lease_held":                      dto.MetricType_GAUGE,
		"ringflake_machine_id":                      dto.MetricType_GAUGE,
		"ringflake_layout_end_timestamp_seconds":    dto.MetricType_GAUGE,
	}, types, "no mark gauges without marks, no clock offset without a measurement")
}

func TestCollectorWaits(t *testing.T) {
	t.Parallel()
	clk := newClock(at(100)) // frozen: a wait for the next tick never ends
	g, err := ringflake.New(t.Context(), ringflake.WithMachineID(1), ringflake.WithLayout(small), ringflake.WithClock(clk.Now), ringflake.WithMaxWait(2*time.Millisecond))
	require.NoError(t, err)
	defer g.Close()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(ringflakeprom.NewCollector(g)))
	dst := make([]ringflake.ID, 17)
	n, err := g.NextN(dst)
	require.ErrorIs(t, err, ringflake.ErrSequenceExhausted)
	require.Equal(t, 16, n, "a frozen clock fills one tick")

	samples, _ := scrape(t, reg)
	s := g.Stats()
	require.Positive(t, s.WaitTime, "the call waited")
	assert.Equal(t, 1.0, samples["ringflake_waits_total"])
	assert.Equal(t, s.WaitTime.Seconds(), samples["ringflake_wait_seconds_total"], "the wait in seconds")
	assert.Equal(t, s.WaitTime.Seconds(), samples["ringflake_longest_wait_seconds"], "one call waited: the longest wait")
	assert.Equal(t, 1.0, samples[`ringflake_failures_total{reason="sequence_exhausted"}`])
}

// TestCollectorClockOffset checks that the lease's clock offset and its
// uncertainty are exported once measured, and absent before.
func TestCollectorClockOffset(t *testing.T) {
	t.Parallel()
	l := &leaser{lease: machineid.Lease{ID: 7, Held: true}}
	g, err := ringflake.New(t.Context(), ringflake.WithMachineIDSource(l))
	require.NoError(t, err)
	defer g.Close()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(ringflakeprom.NewCollector(g)))
	samples, _ := scrape(t, reg)
	assert.NotContains(t, samples, "ringflake_clock_offset_seconds", "no offset before a measurement")
	l.set(machineid.Lease{ID: 7, Held: true, Clock: machineid.ClockOffset{By: -1500 * time.Millisecond, Within: 2 * time.Millisecond, Against: "Redis's clock (TIME)", Bound: 2 * time.Second}})
	samples, _ = scrape(t, reg)
	assert.Equal(t, -1.5, samples["ringflake_clock_offset_seconds"], "the clock 1.5s behind the store's")
	assert.Equal(t, 0.002, samples["ringflake_clock_offset_uncertainty_seconds"])
}

// A layout of fewer than 63 bits, JSLayout's 53, reports its own end and
// machine ID like any other.
func TestCollectorNarrowLayout(t *testing.T) {
	t.Parallel()
	g, err := ringflake.New(t.Context(), ringflake.WithMachineID(63), ringflake.WithLayout(ringflake.JSLayout()))
	require.NoError(t, err)
	defer g.Close()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(ringflakeprom.NewCollector(g)))
	_, err = g.NextID()
	require.NoError(t, err)
	samples, _ := scrape(t, reg)
	assert.Equal(t, 3903090455.552, samples["ringflake_layout_end_timestamp_seconds"], "2093-09-06T15:47:35.552Z, 2^41 ms after 2024-01-01")
	assert.Equal(t, 63.0, samples["ringflake_machine_id"])
	assert.Equal(t, 1.0, samples["ringflake_ids_issued_total"])
}

func TestCollectorLease(t *testing.T) {
	t.Parallel()
	clk := newClock(at(100))
	l := &leaser{lease: machineid.Lease{ID: 7, Held: true, After: at(90), Until: at(300)}}
	g, err := ringflake.New(t.Context(), ringflake.WithMachineIDSource(l), ringflake.WithLayout(small), ringflake.WithClock(clk.Now), ringflake.WithMaxWait(-1))
	require.NoError(t, err)
	defer g.Close()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(ringflakeprom.NewCollector(g)))
	lease := func() map[string]float64 {
		t.Helper()
		samples, _ := scrape(t, reg)
		out := map[string]float64{}
		for k, v := range samples {
			if strings.HasPrefix(k, "ringflake_lease_") || k == "ringflake_machine_id" || strings.HasPrefix(k, "ringflake_failures_total") && v != 0 {
				out[k] = v
			}
		}
		return out
	}

	assert.Equal(t, map[string]float64{
		"ringflake_lease_held":                             1,
		"ringflake_machine_id":                             7,
		"ringflake_lease_confirmed_mark_timestamp_seconds": secs(at(300)),
		"ringflake_lease_inherited_mark_timestamp_seconds": secs(at(90)), // passed
	}, lease(), "held, inherited mark passed")

	l.set(machineid.Lease{ID: 7, Held: true, After: at(150), Until: at(400)})
	_, err = g.NextID()
	require.ErrorIs(t, err, ringflake.ErrMarkAhead)
	assert.Equal(t, map[string]float64{
		"ringflake_lease_held":                             1,
		"ringflake_machine_id":                             7,
		"ringflake_lease_confirmed_mark_timestamp_seconds": secs(at(400)),
		"ringflake_lease_inherited_mark_timestamp_seconds": secs(at(150)),
		`ringflake_failures_total{reason="mark_ahead"}`:    1,
	}, lease(), "held, inherited mark ahead")

	clk.Set(at(500))
	l.set(machineid.Lease{ID: 7, Held: true, Until: at(450)})
	_, err = g.NextID()
	require.ErrorIs(t, err, ringflake.ErrLeaseLost)
	assert.Equal(t, map[string]float64{
		"ringflake_lease_held":                             1,
		"ringflake_machine_id":                             7,
		"ringflake_lease_confirmed_mark_timestamp_seconds": secs(at(450)), // behind the clock's at(500)
		`ringflake_failures_total{reason="mark_ahead"}`:    1,
		`ringflake_failures_total{reason="lease_lost"}`:    1,
	}, lease(), "held, clock past the confirmed mark")

	l.set(machineid.Lease{ID: 7, Err: errors.New("store unreachable")})
	_, err = g.NextID()
	require.ErrorIs(t, err, ringflake.ErrLeaseLost)
	assert.Equal(t, map[string]float64{
		"ringflake_lease_held":                          0,
		"ringflake_machine_id":                          7,
		`ringflake_failures_total{reason="mark_ahead"}`: 1,
		`ringflake_failures_total{reason="lease_lost"}`: 2,
	}, lease(), "not held, no marks")

	require.NoError(t, g.Close())
	assert.Equal(t, map[string]float64{
		"ringflake_lease_held":                          0,
		"ringflake_machine_id":                          -1,
		`ringflake_failures_total{reason="mark_ahead"}`: 1,
		`ringflake_failures_total{reason="lease_lost"}`: 2,
	}, lease(), "closed")
}

func TestCollectorConstLabels(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewPedanticRegistry()
	for _, name := range []string{"orders", "users"} {
		g, err := ringflake.New(t.Context(), ringflake.WithMachineID(1))
		require.NoError(t, err)
		defer g.Close()
		_, err = g.NextID()
		require.NoError(t, err)
		require.NoError(t, reg.Register(ringflakeprom.NewCollector(g, ringflakeprom.WithConstLabels(prometheus.Labels{"generator": name}))))
	}
	g, err := ringflake.New(t.Context(), ringflake.WithMachineID(2))
	require.NoError(t, err)
	defer g.Close()
	assert.Error(t, reg.Register(ringflakeprom.NewCollector(g, ringflakeprom.WithConstLabels(prometheus.Labels{"generator": "orders"}))),
		"a second collector with the same labels is refused")

	samples, _ := scrape(t, reg)
	assert.Equal(t, 1.0, samples[`ringflake_ids_issued_total{generator="orders"}`])
	assert.Equal(t, 1.0, samples[`ringflake_ids_issued_total{generator="users"}`])
	v, ok := samples[`ringflake_failures_total{generator="users",reason="lease_lost"}`]
	assert.True(t, ok, "the const label combines with reason")
	assert.Zero(t, v)
}

func TestCollectorLint(t *testing.T) {
	t.Parallel()
	g, err := ringflake.New(t.Context(), ringflake.WithMachineID(1))
	require.NoError(t, err)
	defer g.Close()
	problems, err := testutil.CollectAndLint(ringflakeprom.NewCollector(g))
	require.NoError(t, err)
	assert.Empty(t, problems, "names and help follow the Prometheus conventions")

	// And with a lease's marks and clock offset, whose gauges a fixed ID
	// leaves out.
	clk := newClock(at(100))
	off := machineid.ClockOffset{By: time.Millisecond, Within: time.Millisecond, Against: "Redis's clock (TIME)", Bound: 2 * time.Second}
	l := &leaser{lease: machineid.Lease{ID: 7, Held: true, After: at(90), Until: at(300), Clock: off}}
	leased, err := ringflake.New(t.Context(), ringflake.WithMachineIDSource(l), ringflake.WithLayout(small), ringflake.WithClock(clk.Now))
	require.NoError(t, err)
	defer leased.Close()
	c := ringflakeprom.NewCollector(leased)
	assert.Equal(t, 21, testutil.CollectAndCount(c), "every metric, the marks' and offset's included: 16, failures_total with its 6 reasons")
	problems, err = testutil.CollectAndLint(c)
	require.NoError(t, err)
	assert.Empty(t, problems, "names and help follow the Prometheus conventions")
}
