package ringflake_test

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/internal/fakeclock"
	"github.com/ringflake/ringflake/machineid"
)

// records is a slog.Handler that keeps every record, for tests.
type records struct {
	mu   sync.Mutex
	list []slog.Record
}

func (r *records) Enabled(context.Context, slog.Level) bool { return true }
func (r *records) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *records) WithGroup(string) slog.Handler            { return r }
func (r *records) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.list = append(r.list, rec)
	return nil
}

// get returns the records whose message is msg, each as its attributes.
func (r *records) get(msg string) []map[string]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []map[string]any
	for _, rec := range r.list {
		if rec.Message != msg {
			continue
		}
		m := map[string]any{"level": rec.Level}
		rec.Attrs(func(a slog.Attr) bool {
			m[a.Key] = a.Value.Resolve().Any()
			return true
		})
		out = append(out, m)
	}
	return out
}

func TestLogIsRateLimited(t *testing.T) {
	t.Parallel()
	var rec records
	clock := fakeclock.New(at(100, 0))
	g, err := ringflake.New(t.Context(), ringflake.WithLayout(tiny), ringflake.WithClock(clock.Now), ringflake.WithMachineID(3),
		ringflake.WithLogger(slog.New(&rec)))
	require.NoError(t, err)
	for i := range 5 {
		clock.Set(at(int64(200+10*i), 0))
		_, err := g.NextID()
		require.NoError(t, err)
		clock.Set(at(int64(150+10*i), 0))
		_, err = g.NextID()
		require.NoError(t, err)
	}
	got := rec.get("ringflake: clock stepped back")
	require.Len(t, got, 1, "one record a second however often the clock flaps")
	assert.Equal(t, slog.LevelWarn, got[0]["level"])
	assert.Equal(t, 50*time.Millisecond, got[0]["by"])
	assert.Equal(t, int64(3), got[0]["machine"])
	assert.NotContains(t, got[0], "suppressed", "none was dropped before the first record")
	assert.Equal(t, uint64(5), g.Stats().StepBacks, "the counters still see every step back")
}

// TestLogSuppressedCount checks "suppressed": left out of a record when no
// record of its kind was dropped since the last one sent, and their count
// when some were. The rate limit runs on real time, faked by synctest.
func TestLogSuppressedCount(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		flaps int // step backs within the first second, after the first
		want  any // the second record's "suppressed", nil for none
	}{
		{"none dropped", 0, nil},
		{"one dropped", 1, uint64(1)},
		{"four dropped", 4, uint64(4)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				var rec records
				clock := fakeclock.New(at(100, 0))
				g, err := ringflake.New(t.Context(), ringflake.WithLayout(tiny), ringflake.WithClock(clock.Now), ringflake.WithMachineID(3),
					ringflake.WithLogger(slog.New(&rec)))
				require.NoError(t, err)
				defer g.Close()
				stepBack := func(i int) {
					clock.Set(at(int64(200+10*i), 0))
					_, err := g.NextID()
					require.NoError(t, err)
					clock.Set(at(int64(150+10*i), 0))
					_, err = g.NextID()
					require.NoError(t, err)
				}
				for i := range 1 + tt.flaps {
					stepBack(i)
				}
				time.Sleep(1100 * time.Millisecond) // past the rate limit's second, in the bubble's time
				stepBack(1 + tt.flaps)
				got := rec.get("ringflake: clock stepped back")
				require.Len(t, got, 2, "the first record and the one after the second")
				assert.NotContains(t, got[0], "suppressed")
				assert.Equal(t, tt.want, got[1]["suppressed"], "the second record's count of those dropped")
			})
		})
	}
}

func TestLogNilLoggerLogsNothing(t *testing.T) {
	t.Parallel()
	clock := fakeclock.New(at(200, 0))
	g, err := ringflake.New(t.Context(), ringflake.WithMachineID(1), ringflake.WithLayout(tiny), ringflake.WithClock(clock.Now), ringflake.WithLogger(nil))
	require.NoError(t, err)
	_, err = g.NextID()
	require.NoError(t, err)
	clock.Set(at(150, 0))
	_, err = g.NextID()
	require.NoError(t, err, "the ring serves the step back, and a nil logger does not panic")
}

func TestLogLeaseLostWithCauseAndRegained(t *testing.T) {
	t.Parallel()
	var rec records
	f := newFakeLeaser(machineid.Lease{ID: 7, Held: true})
	clock := fakeclock.New(leaseStart)
	g, err := ringflake.New(t.Context(), ringflake.WithMachineIDSource(f), ringflake.WithClock(clock.Now), ringflake.WithMaxWait(-1),
		ringflake.WithLogger(slog.New(&rec)))
	require.NoError(t, err)
	defer g.Close()
	cause := bytes.ErrTooLarge // any error of the store's
	f.set(machineid.Lease{ID: 7, Err: cause})
	_, err = g.NextID()
	require.ErrorIs(t, err, ringflake.ErrLeaseLost)
	assert.ErrorIs(t, err, cause, "the lost lease's error wraps its cause")
	assert.Contains(t, err.Error(), cause.Error())
	assert.Equal(t, cause, g.Lease().Err)
	lostRecs := rec.get("ringflake: machine ID lease lost")
	require.Len(t, lostRecs, 1)
	assert.Equal(t, cause, lostRecs[0]["cause"])
	f.set(machineid.Lease{ID: 7, Held: true})
	regained := rec.get("ringflake: machine ID lease regained")
	require.Len(t, regained, 1)
	assert.Equal(t, slog.LevelInfo, regained[0]["level"])
}

// A call that waits and then fails is not logged as a long wait: its error
// gives the cause, and a lost lease logged as waits sent readers looking
// for a clock problem.
func TestLogLongWaitOnlyForCallsThatIssue(t *testing.T) {
	t.Parallel()
	var rec records
	frozen := fakeclock.New(at(3, 0))
	g, err := ringflake.New(t.Context(), ringflake.WithMachineID(1), ringflake.WithLayout(tiny), ringflake.WithClock(frozen.Now),
		ringflake.WithMaxWait(20*time.Millisecond), ringflake.WithLogger(slog.New(&rec)))
	require.NoError(t, err)
	for range 16 - ringflake.FreshStart(g, at(3, 0)) { // the frozen tick's whole sequence, from its start
		_, err := g.NextID()
		require.NoError(t, err)
	}
	_, err = g.NextID()
	require.ErrorIs(t, err, ringflake.ErrSequenceExhausted)
	assert.Equal(t, uint64(1), g.Stats().Waits, "the failed call's wait is counted")
	assert.Empty(t, rec.get("ringflake: long wait"), "a wait that ended in an error is not a long wait")
}
