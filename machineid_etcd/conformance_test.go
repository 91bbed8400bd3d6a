package machineid_etcd_test

import (
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ringflake/ringflake/internal/etcdtest"
	"github.com/ringflake/ringflake/machineid"
	"github.com/ringflake/ringflake/machineid/machineidtest"
	"github.com/ringflake/ringflake/machineid_etcd"
)

// TestConformance runs the public conformance suite against one etcd
// member and against a three-member cluster. Restart stops every member
// and starts it again on its ports and data, which etcd keeps. Its TTL is
// four seconds, as Kubernetes' is: at one, the call timeout of 333ms,
// which a write to an etcd a loaded machine holds back can overrun, made
// leases run out and releases fail while the store could be reached; at
// two, the CPU hog beside other work (load 10 on 2 cores) held the
// cluster's leader back 1.36s, past the 1.6s a renewal has (TTL − margin),
// and Exclusive's winners lost their leases.
func TestConformance(t *testing.T) {
	t.Run("single", func(t *testing.T) {
		machineidtest.Run(t, harness(etcdtest.Start(t)))
	})
	t.Run("cluster", func(t *testing.T) {
		machineidtest.Run(t, harness(etcdtest.StartCluster(t)))
	})
}

// harness describes e to the suite. Each Holder has a client of its own,
// which Abandon closes: the Holder's calls then fail, and its lease is left
// to expire in etcd.
func harness(e *etcdtest.Cluster) machineidtest.Harness {
	var mu sync.Mutex
	clients := map[machineid.Leaser]*clientv3.Client{}
	return machineidtest.Harness{
		NewLeaser: func(t *testing.T, lo, hi int64, ttl time.Duration) (machineid.Leaser, error) {
			c := newClient(t, e.Endpoints())
			l, err := machineid_etcd.New(c, machineid.WithRange(lo, hi), machineid.WithTTL(ttl))
			if err != nil {
				return nil, err
			}
			// An abandoned Holder's renewer runs until Release, which then
			// fails at once on the closed client and releases nothing.
			t.Cleanup(func() { _ = l.Release(time.Time{}) })
			mu.Lock()
			clients[l] = c
			mu.Unlock()
			return l, nil
		},
		Abandon: func(l machineid.Leaser) {
			mu.Lock()
			c := clients[l]
			mu.Unlock()
			_ = c.Close()
		},
		Pause:     func(*testing.T) func() { return e.Pause() },
		Restart:   func(t *testing.T) { e.Restart() },
		KeepsData: true,
		TTL:       4 * ttl,
		Reference: "live holder",
	}
}
