package machineid_k8s_test

import (
	"sync"
	"testing"
	"time"

	"github.com/ringflake/ringflake/internal/k8stest"
	"github.com/ringflake/ringflake/machineid"
	"github.com/ringflake/ringflake/machineid/machineidtest"
	"github.com/ringflake/ringflake/machineid_k8s"
)

// TestConformance runs the public conformance suite against a real
// kube-apiserver. Restart stops the API server with SIGTERM and starts it
// again on its address; etcd, behind it, keeps the Leases. Its TTL is 4s,
// twice the package's: at 2s, the call timeout of 667ms, which an API
// server a loaded machine holds back overran, made leases run out and
// releases fail while the store could be reached (Exclusive, Release, under
// the README's CPU hog).
func TestConformance(t *testing.T) {
	s := k8stest.Start(t)
	s.CreateNamespace("conformance")
	machineidtest.Run(t, harness(s, "conformance"))
}

// harness describes s to the suite. Each Holder has a client of its own,
// which Abandon cuts: the Holder's calls then fail, and its Lease is left
// for contenders to see unchanged and take over.
func harness(s *k8stest.Server, ns string) machineidtest.Harness {
	var mu sync.Mutex
	clients := map[machineid.Leaser]*client{}
	return machineidtest.Harness{
		NewLeaser: func(t *testing.T, lo, hi int64, ttl time.Duration) (machineid.Leaser, error) {
			c := newClient(t, s, s.Token(k8stest.Admin))
			l, err := machineid_k8s.New(c.CoordinationV1(), machineid_k8s.WithNamespace(ns), machineid.WithRange(lo, hi), machineid.WithTTL(ttl))
			if err != nil {
				return nil, err
			}
			// An abandoned Holder's renewer runs until Release, which then
			// fails at once on the cut client and releases nothing.
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
			c.cut.Store(true)
		},
		Pause:     func(*testing.T) func() { s.Pause(); return s.Resume },
		Restart:   func(t *testing.T) { s.Restart() },
		KeepsData: true,
		TTL:       2 * ttl,
		Reference: "the API server's clock",
	}
}
