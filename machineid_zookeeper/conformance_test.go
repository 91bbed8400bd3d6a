package machineid_zookeeper_test

import (
	"sync"
	"testing"
	"time"

	"github.com/ringflake/ringflake/internal/zktest"
	"github.com/ringflake/ringflake/machineid"
	"github.com/ringflake/ringflake/machineid/machineidtest"
	mz "github.com/ringflake/ringflake/machineid_zookeeper"
)

// TestConformance runs the public conformance suite against a standalone
// server and against an ensemble of three, at once. Restart stops every
// server and starts it again on its ports and data, which ZooKeeper keeps,
// sessions included. Its TTL is three seconds: a take is four round trips
// (the session's handshake, the listing, the marks, the claim), and a
// call timeout of TTL/3 must cover a write through an ensemble, whose
// servers are JVMs that wait for a CPU at every hop between their threads
// on a loaded machine (load 30 on 2 cores: 2s was not enough).
func TestConformance(t *testing.T) {
	t.Run("single", func(t *testing.T) {
		t.Parallel()
		machineidtest.Run(t, harness(zktest.Start(t)))
	})
	t.Run("ensemble", func(t *testing.T) {
		t.Parallel()
		machineidtest.Run(t, harness(zktest.StartEnsemble(t)))
	})
}

// harness describes e to the suite. Each Holder's connections can be cut,
// which Abandon does: its sessions then hear nothing more from it, and
// ZooKeeper expires them.
func harness(e *zktest.Ensemble) machineidtest.Harness {
	var cuts sync.Map // machineid.Leaser -> func()
	return machineidtest.Harness{
		NewLeaser: func(t *testing.T, lo, hi int64, ttl time.Duration) (machineid.Leaser, error) {
			l, cut, err := mz.NewCuttable(e.Addrs(), machineid.WithRange(lo, hi), machineid.WithTTL(ttl))
			if err != nil {
				return nil, err
			}
			t.Cleanup(func() { _ = l.Release(time.Time{}) })
			cuts.Store(l, cut)
			return l, nil
		},
		Abandon: func(l machineid.Leaser) {
			if cut, ok := cuts.Load(l); ok {
				cut.(func())()
			}
		},
		Pause:     func(*testing.T) func() { return e.Pause() },
		Restart:   func(t *testing.T) { e.Restart() },
		KeepsData: true,
		TTL:       3 * time.Second,
		Reference: "ZooKeeper's clock",
	}
}
