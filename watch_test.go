package ringflake_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/machineid"
	"github.com/ringflake/ringflake/machineid_file"
)

// TestSlowWatcherDoesNotHoldNew has a watcher of a real Holder sleep in its
// callback, as a log handler stuck on its sink would, while New asks that
// Holder for a machine ID: New must return within its context plus the
// 50 ms its doc allows, not when the watcher wakes. The bound checked has a
// second's slack for a busy machine; the watcher sleeps ten.
func TestSlowWatcherDoesNotHoldNew(t *testing.T) {
	t.Parallel()
	h, err := machineid_file.New(t.TempDir(), machineid.WithRange(0, 0))
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Release(time.Time{}) })
	wake := make(chan struct{})
	t.Cleanup(func() { close(wake) }) // before the Release above: cleanups run last first
	asleep := make(chan struct{})
	var once sync.Once
	go h.Watch(func(machineid.Lease) {
		once.Do(func() { close(asleep) })
		select {
		case <-wake:
		case <-time.After(10 * time.Second):
		}
	})
	<-asleep

	const wait = time.Second
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	start := time.Now()
	g, err := ringflake.New(ctx, ringflake.WithMachineIDSource(h))
	took := time.Since(start)
	if err == nil {
		_ = g.Close()
	}
	assert.ErrorIs(t, err, context.DeadlineExceeded, "New while its source's watcher sleeps")
	assert.Less(t, took, wait+50*time.Millisecond+time.Second, "New returned %v after it began; its context ends after %v", took, wait)
}
