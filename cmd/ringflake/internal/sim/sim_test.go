package sim

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/internal/strict"
)

// virtualSim is a simulation on virtual time: it takes only as long as its
// calls, and both generators see the same readings in the same order.
func virtualSim(rollback time.Duration, rate float64, ring int) Config {
	return Config{Rollback: rollback, StepAt: time.Second / 3, Duration: time.Second, Rate: rate,
		Ring: ring, rows: defaultRows, virtual: true}
}

func TestSimulateVirtual(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		cfg           Config
		ringflakeErrs bool // whether ringflake runs out of spare space
	}{
		{"no step", virtualSim(0, 10000, 4096), false},
		{"step inside the ring", virtualSim(200*time.Millisecond, 10000, 4096), false},
		{"step longer than the ring", virtualSim(200*time.Millisecond, 10000, 16), false},
		{"spare space runs out", virtualSim(200*time.Millisecond, 100000, 1), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res, err := simulate(tt.cfg)
			require.NoError(t, err)
			require.Len(t, res, 2)
			rf, st := res[0], res[1]
			n := tt.cfg.Requests()
			for _, r := range res {
				assert.Equal(t, n, r.served+r.failed, "%s: every request served or failed", r.name)
				assert.Zero(t, r.dups, "%s: duplicates", r.name)
				var rows rowCount
				for _, row := range r.rows {
					rows.served += row.served
					rows.failed += row.failed
				}
				assert.Equal(t, rowCount{served: r.served, failed: r.failed}, rows, "%s: timeline adds up", r.name)
				var longest time.Duration
				for _, b := range r.buckets {
					longest = max(longest, b.longest)
				}
				assert.Equal(t, r.longest, longest, "%s: longest call is the buckets' longest", r.name)
			}
			// The strict generator fails exactly while the clock is behind,
			// and ringflake serves those requests from spare space.
			assert.Zero(t, st.spare, "strict serves nothing while behind")
			assert.Equal(t, st.failed, rf.spare+rf.failedBehind, "requests while behind: strict's failures; ringflake's spare and failures")
			if tt.cfg.Rollback == 0 {
				assert.Zero(t, st.failed, "strict errors without a step")
				assert.Nil(t, st.firstErr)
			} else {
				assert.InDelta(t, tt.cfg.Rate*tt.cfg.Rollback.Seconds(), st.failed, tt.cfg.Rate/1000+1,
					"strict fails for the whole rollback")
				assert.True(t, errors.Is(st.firstErr, strict.ErrClockBackwards), "strict's error: %v", st.firstErr)
			}
			if tt.ringflakeErrs {
				assert.Positive(t, rf.failed, "ringflake errors once its one slot is used up")
				assert.Positive(t, rf.spare, "ringflake serves from spare space first")
				assert.ErrorIs(t, rf.firstErr, ringflake.ErrClockBehind)
			} else {
				assert.Zero(t, rf.failed, "ringflake errors; first: %v", rf.firstErr)
				assert.Equal(t, n, rf.served)
			}
		})
	}
}

// A timeline row is the sum of its buckets, so a request's bucket must lie
// in the row its due time falls in, for any duration and row count.
func TestBucketsNestInRows(t *testing.T) {
	t.Parallel()
	for _, c := range []Config{
		{Duration: 3 * time.Second, rows: defaultRows},
		{Duration: 60 * time.Millisecond, rows: defaultRows},
		{Duration: 7*time.Millisecond + 3, rows: 3},
		{Duration: 10 * time.Minute, rows: 18},
	} {
		last := 0
		for i := range int64(10_000) {
			d := time.Duration(i * int64(c.Duration) / 9_999)
			row := min(int(int64(d)*int64(c.rows)/int64(c.Duration)), c.rows-1)
			b := c.bucket(d)
			require.Equal(t, row, b/bucketsPerRow, "bucket(%v) = %d in a %v run with %d rows", d, b, c.Duration, c.rows)
			require.GreaterOrEqual(t, b, last, "bucket(%v) goes back", d)
			last = b
		}
		assert.Equal(t, c.buckets()-1, last, "the last request falls in the last bucket of a %v run", c.Duration)
	}
}

func TestSimClockBehind(t *testing.T) {
	t.Parallel()
	p := &virtualPacer{}
	c := &simClock{base: time.Unix(1000, 0), stepAt: 10 * time.Millisecond, rollback: 5 * time.Millisecond,
		tick: time.Millisecond, pace: p}
	steps := []struct {
		at     time.Duration
		want   time.Duration // reading minus base
		behind bool          // before the reading
	}{
		{0, 0, false},
		{9 * time.Millisecond, 9 * time.Millisecond, false},
		{10 * time.Millisecond, 5 * time.Millisecond, true},
		{14 * time.Millisecond, 9 * time.Millisecond, false}, // the same tick as the highest shown
		{15 * time.Millisecond, 10 * time.Millisecond, false},
	}
	for _, s := range steps {
		p.waitUntil(s.at)
		assert.Equal(t, s.behind, c.behind(), "behind() at %v", s.at)
		assert.Equal(t, s.want, c.Now().Sub(c.base), "Now() at %v", s.at)
	}
}

func TestBar(t *testing.T) {
	t.Parallel()
	tests := []struct {
		row  rowCount
		want string
	}{
		{rowCount{}, "...................."},
		{rowCount{served: 10}, "####################"},
		{rowCount{failed: 10}, "xxxxxxxxxxxxxxxxxxxx"},
		{rowCount{served: 5, failed: 5}, "##########xxxxxxxxxx"},
		{rowCount{served: 1000, failed: 1}, "###################x"},
		{rowCount{served: 1, failed: 1000}, "#xxxxxxxxxxxxxxxxxxx"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, bar(tt.row), "bar(%+v)", tt.row)
	}
}

func TestDuplicates(t *testing.T) {
	t.Parallel()
	assert.Zero(t, duplicates(nil))
	assert.Zero(t, duplicates([]ringflake.ID{3, 1, 2}))
	assert.Equal(t, 3, duplicates([]ringflake.ID{5, 1, 5, 2, 5, 1}))
}

func TestReport(t *testing.T) {
	t.Parallel()
	c := Config{Rollback: 500 * time.Millisecond, StepAt: time.Second, Duration: 3 * time.Second,
		Rate: 10, Ring: 4096, rows: 3}
	res := []laneResult{
		{name: "ringflake", served: 30, spare: 5, longest: 1234 * time.Nanosecond,
			rows: []rowCount{{served: 10}, {served: 10, behind: 5}, {served: 10}}},
		{name: "strict", served: 25, failed: 5, longest: 2 * time.Microsecond, firstErr: strict.ErrClockBackwards,
			rows: []rowCount{{served: 10}, {served: 5, failed: 5, behind: 5}, {served: 10}}},
	}
	var out bytes.Buffer
	require.NoError(t, report(&out, c, res))
	want := `clock steps back 500ms at 1s into a 3s run; 10/s requests to each generator (30 each); ring 4096 slots (4.096s)

                         ringflake      strict
IDs served                      30          25
errors                           0           5
longest wait                   1µs         2µs
IDs from spare space             5           0
duplicates                       0           0

strict's first error: strict: clock moved backwards; refusing to issue

timeline, 1s per row: # served, x failed; < marks rows where the clock is behind
    time    ringflake              strict
  0.000s    ####################   ####################
  1.000s <  ####################   ##########xxxxxxxxxx
  2.000s    ####################   ####################
`
	assert.Equal(t, want, out.String())
}

// Rows are marked by the schedule, so every row inside the step back is
// marked however late calls ran; in real time with ring 1, ringflake's
// calls wait or fail there, and a single caller used to push the requests
// due in the step past it, leaving its rows unmarked.
func TestSimulateMarksEveryRowOfTheStep(t *testing.T) {
	t.Parallel()
	c := Config{Rollback: 60 * time.Millisecond, StepAt: 60 * time.Millisecond, Duration: 180 * time.Millisecond,
		Rate: 20000, Ring: 1, MaxWait: 20 * time.Millisecond, rows: 18}
	for _, tt := range []struct {
		at     time.Duration
		behind bool
	}{
		{0, false}, {59 * time.Millisecond, false}, {60 * time.Millisecond, true},
		{118 * time.Millisecond, true}, {119 * time.Millisecond, false}, {179 * time.Millisecond, false},
	} {
		assert.Equal(t, tt.behind, c.scheduledBehind(tt.at), "scheduledBehind(%v)", tt.at)
	}
	res, err := simulate(c)
	require.NoError(t, err)
	for _, r := range res {
		assert.Zero(t, r.dups, "%s: duplicates", r.name)
		assert.Equal(t, c.Requests(), r.served+r.failed, "%s: every request served or failed", r.name)
		for i, row := range r.rows {
			inStep := i >= 6 && i < 12 // 10 ms rows: 60-120 ms
			assert.Equal(t, inStep, row.behind > 0, "%s: row %d marked behind", r.name, i)
		}
	}
}
