package ringflake_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/internal/fakeclock"
	"github.com/ringflake/ringflake/machineid"
)

// waitingLeaser is a fakeLeaser whose MachineID finds every ID held for a
// while, as a Holder does on a full range: it reports the wait, and then
// the lease it takes.
type waitingLeaser struct {
	*fakeLeaser
	wait time.Duration
}

func (w waitingLeaser) MachineID(context.Context) (int64, error) {
	w.set(machineid.Lease{ID: -1, Err: fmt.Errorf("%w: machine IDs 3..3 held", machineid.ErrExhausted)})
	time.Sleep(w.wait)
	w.set(machineid.Lease{ID: 3, Held: true})
	return 3, nil
}

// useDefault makes slog.Default log to a records handler until the test
// ends. The test must not be parallel.
func useDefault(t *testing.T) *records {
	var rec records
	old := slog.Default()
	slog.SetDefault(slog.New(&rec))
	t.Cleanup(func() { slog.SetDefault(old) })
	return &rec
}

const idWaitMsg = "ringflake: waiting for a machine ID: every ID in the range is held"

// TestNewNotesLongWaitsWithoutALogger checks that without WithLogger, New
// notes to slog.Default, once, a wait for a free machine ID or for the mark
// that lasts a second or more, and says nothing of a shorter one; and that
// Stats.StartWait says how long New took. Not parallel: it sets
// slog.Default.
func TestNewNotesLongWaitsWithoutALogger(t *testing.T) {
	rec := useDefault(t)
	for _, tt := range []struct {
		name string
		src  func() machineid.Leaser
		msg  string
		long bool
	}{
		{"a full range, a while", func() machineid.Leaser {
			return waitingLeaser{newFakeLeaser(machineid.Lease{ID: -1}), 1500 * time.Millisecond}
		}, idWaitMsg, true},
		{"a full range, briefly", func() machineid.Leaser {
			return waitingLeaser{newFakeLeaser(machineid.Lease{ID: -1}), 50 * time.Millisecond}
		}, idWaitMsg, false},
		{"a mark 1.5s ahead", func() machineid.Leaser {
			return newFakeLeaser(machineid.Lease{ID: 3, Held: true, After: time.Now().Add(1500 * time.Millisecond)})
		}, markWaitMsg, true},
		{"a mark 200ms ahead", func() machineid.Leaser {
			return newFakeLeaser(machineid.Lease{ID: 3, Held: true, After: time.Now().Add(200 * time.Millisecond)})
		}, markWaitMsg, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := len(rec.get(tt.msg))
			g, err := ringflake.New(within(t, 10*time.Second), ringflake.WithMachineIDSource(tt.src()))
			require.NoError(t, err)
			defer g.Close()
			if !tt.long {
				assert.Len(t, rec.get(tt.msg), before, "a short wait is not noted")
				return
			}
			got := rec.get(tt.msg)
			require.Len(t, got, before+1, "a wait of a second or more is noted once, to slog.Default")
			assert.Equal(t, slog.LevelWarn, got[len(got)-1]["level"])
			assert.GreaterOrEqual(t, g.Stats().StartWait, time.Second, "Stats.StartWait")
		})
	}
}

// TestLogIDWaitAtOnce checks that with WithLogger, New's wait for a free
// machine ID is logged at once, with the source's account of the holders,
// and not to slog.Default.
func TestLogIDWaitAtOnce(t *testing.T) {
	t.Parallel()
	var rec records
	src := waitingLeaser{newFakeLeaser(machineid.Lease{ID: -1}), 50 * time.Millisecond}
	g, err := ringflake.New(t.Context(), ringflake.WithMachineIDSource(src), ringflake.WithLogger(slog.New(&rec)))
	require.NoError(t, err)
	defer g.Close()
	got := rec.get(idWaitMsg)
	require.Len(t, got, 1)
	assert.Contains(t, fmt.Sprint(got[0]["error"]), "machine IDs 3..3 held")
}

// TestLogClockOffWhileHeld checks that a lease whose clock is measured past
// the bound is logged once, when it passes it, and that the generator
// still issues.
func TestLogClockOffWhileHeld(t *testing.T) {
	t.Parallel()
	var rec records
	f := newFakeLeaser(machineid.Lease{ID: 7, Held: true})
	g, err := ringflake.New(t.Context(), ringflake.WithMachineIDSource(f), ringflake.WithLogger(slog.New(&rec)))
	require.NoError(t, err)
	defer g.Close()
	off := machineid.ClockOffset{By: 30 * time.Second, Within: time.Millisecond, Against: "Redis's clock (TIME)", Bound: 2 * time.Second}
	f.set(machineid.Lease{ID: 7, Held: true, Clock: off})
	f.set(machineid.Lease{ID: 7, Held: true, Clock: off})
	got := rec.get("ringflake: the clock is off the fleet's by more than the bound; IDs are still issued")
	require.Len(t, got, 1, "logged once, when the clock passes the bound")
	assert.Equal(t, "30s ahead of Redis's clock (TIME) (±1ms)", got[0]["clock"])
	assert.Equal(t, 2*time.Second, got[0]["bound"])
	_, err = g.NextID()
	assert.NoError(t, err, "a clock off while the ID is held is reported, never a reason to stop")
	assert.Equal(t, off, g.Lease().Clock)
}

// TestStatsLongestWait checks that Stats.LongestWait is the longest of the
// calls' waits, at most their total.
func TestStatsLongestWait(t *testing.T) {
	t.Parallel()
	// The clock moves only when read, a quarter of a tick a reading, so the
	// call runs out of its tick and waits whatever the machine's load: with
	// the real clock, a call preempted past a tick's end found the next tick
	// free and never waited.
	clock := fakeclock.NewTicker(at(3, 0), 250*time.Microsecond)
	g, err := ringflake.New(t.Context(), ringflake.WithMachineID(1), ringflake.WithClock(clock.Now), ringflake.WithMaxWait(time.Minute))
	require.NoError(t, err)
	assert.Zero(t, g.Stats().LongestWait, "before any wait")
	assert.Zero(t, g.Stats().StartWait, "a fixed machine ID")
	ids := make([]ringflake.ID, 3*4096) // more than a tick holds: the call waits for the next ticks
	_, err = g.NextN(ids)
	require.NoError(t, err)
	s := g.Stats()
	require.Equal(t, uint64(1), s.Waits)
	assert.Positive(t, s.LongestWait)
	assert.Equal(t, s.WaitTime, s.LongestWait, "one call waited: its wait is the longest")
}
