package ringflake

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake/internal/fakeclock"
)

// A caller holding an older latest tick, descheduled across a step back,
// must not move the step-back mark back and count the same step again.
func TestStepBackMarkOnlyMovesUp(t *testing.T) {
	t.Parallel()
	g, err := New(t.Context(), WithMachineID(1))
	require.NoError(t, err)
	g.noteStepBack(100, 50)
	g.noteStepBack(90, 50) // a stale latest
	g.noteStepBack(100, 50)
	assert.Equal(t, uint64(1), g.Stats().StepBacks, "one step back, seen by three callers")
	g.noteStepBack(200, 150) // the clock passed 100 and stepped back again
	assert.Equal(t, uint64(2), g.Stats().StepBacks)
}

// Issued may count short while ticks start, never over: a tick that starts
// at its start counts its last sequence + 1 in its slot, so the sequences
// below the start must already be subtracted whenever a snapshot sees the
// slot. Two callers start a tick on every call (a ring of one slot, a clock
// a tick further on at every reading) while snapshots are taken; each may
// count at most the IDs returned by the time it ends, plus one in flight
// per caller. Subtracting the start after the CAS, with the old tick's
// count, made snapshots count up to ~2000 over.
func TestStatsNeverCountsOverWhileTicksStart(t *testing.T) {
	t.Parallel()
	clock := fakeclock.NewTicker(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC), time.Millisecond)
	g, err := New(t.Context(), WithMachineID(3), WithClock(clock.Now), WithRingSize(1), WithMaxWait(-1))
	require.NoError(t, err)
	const callers, perCaller = 2, 100000
	var returned atomic.Uint64
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			for range perCaller {
				if _, err := g.NextID(); err == nil {
					returned.Add(1)
				}
			}
		})
	}
	var stop atomic.Bool
	over, snapshots := int64(0), 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		for !stop.Load() {
			n := g.ring.issued()
			over = max(over, int64(n)-int64(returned.Load())-callers)
			snapshots++
		}
	}()
	wg.Wait()
	stop.Store(true)
	<-done
	t.Logf("%d snapshots", snapshots)
	assert.Equal(t, uint64(callers*perCaller), returned.Load(), "every call issued")
	assert.LessOrEqual(t, over, int64(0), "how far a snapshot counted over the IDs issued")
	assert.Equal(t, uint64(callers*perCaller), g.Stats().Issued, "exact once the callers are done")
}
