package machineid_file

import (
	"context"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake/machineid"
)

// TestRestartAfterCrashWaitsAtMostTheTTL checks, in virtual time, what
// bounds a restart's wait after a crash at the defaults: the mark on disk
// is never more than the default TTL, 500ms, ahead of the clock, so a
// holder that takes the ID after the crash inherits a mark at most that far
// ahead, which is all ringflake.New waits for; and renewals, each one
// fsync, keep the mark more than half a TTL ahead, 6 a second. (How long a
// real restart takes is measured outside the tests: docs/leases.md.)
func TestRestartAfterCrashWaitsAtMostTheTTL(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		rec := &recorder{}
		s := &store{disk: rec, dir: dir, sem: make(chan struct{}, 1), host: "test"}
		h, err := machineid.NewHolder(s, &settings{}, limits, machineid.WithRange(0, 0))
		require.NoError(t, err)
		defer h.Release(time.Time{})
		_, err = h.MachineID(context.Background())
		require.NoError(t, err)
		taken := len(rec.events())

		for range 300 { // 3s, at every 10ms
			time.Sleep(10 * time.Millisecond)
			synctest.Wait() // a renewal due now has written its mark
			ahead := time.Until(onDisk(t, dir, 0))
			require.LessOrEqual(t, ahead, defaultTTL, "how far ahead of the clock the mark is")
			require.Greater(t, ahead, defaultTTL/2, "how far ahead of the clock the mark is")
		}
		fsyncs := 0
		for _, e := range rec.events()[taken:] {
			if e.kind == evSync && e.path == filepath.Join(dir, "machine-0") {
				fsyncs++
			}
		}
		assert.Equal(t, 18, fsyncs, "fsyncs in 3s: one per renewal, every TTL/3")

		// A crash: the kernel drops the lock, and the mark stays.
		crash := time.Now()
		_, err = do(context.Background(), s, "crashing", func() (int, error) { s.free(); return 0, nil })
		require.NoError(t, err)
		next, err := New(dir, machineid.WithRange(0, 0))
		require.NoError(t, err)
		defer next.Release(time.Time{})
		_, err = next.MachineID(context.Background())
		require.NoError(t, err)
		wait := next.Lease().After.Sub(crash)
		assert.LessOrEqual(t, wait, defaultTTL, "a restart at once after the crash waits this long for the clock to pass the mark")
		assert.Greater(t, wait, time.Duration(0), "the mark inherited is ahead of the clock")
	})
}
