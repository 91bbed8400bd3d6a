package machineidtest_test

import (
	"testing"
	"time"

	"github.com/ringflake/ringflake/machineid"
	"github.com/ringflake/ringflake/machineid/machineidtest"
)

// A harness for a store: each Leaser gets a client of its own, so that
// Abandon can cut one off, and Restart restarts the store. The store here
// is the in-memory reference in this package's tests; a real harness dials
// its server, and restarts it (a container, a child process).
func ExampleHarness() {
	store := newMemStore(true, sound)
	h := machineidtest.Harness{
		NewLeaser: func(t *testing.T, lo, hi int64, ttl time.Duration) (machineid.Leaser, error) {
			l, err := store.newLeaser(lo, hi, ttl)
			if err != nil {
				return nil, err // wraps ringflake.ErrInvalidConfig
			}
			t.Cleanup(l.stop) // an abandoned Leaser's goroutines
			return l, nil
		},
		Abandon:   func(l machineid.Leaser) { l.(*memLeaser).cut.Store(true) },
		Restart:   func(*testing.T) { store.restart() },
		KeepsData: true,
		TTL:       time.Second,
	}
	// In the store's tests:
	//
	//	func TestConformance(t *testing.T) { machineidtest.Run(t, h) }
	_ = h
}
