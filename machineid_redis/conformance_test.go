package machineid_redis_test

import (
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ringflake/ringflake/internal/redistest"
	"github.com/ringflake/ringflake/machineid"
	"github.com/ringflake/ringflake/machineid/machineidtest"
	mr "github.com/ringflake/ringflake/machineid_redis"
)

// harness is the conformance suite's Harness over clients that newClient
// makes, one for each Leaser, and restart.
func harness(newClient func() redis.UniversalClient, pause func() func(), restart func(t *testing.T)) machineidtest.Harness {
	var clients sync.Map // machineid.Leaser -> redis.UniversalClient, for Abandon
	return machineidtest.Harness{
		NewLeaser: func(t *testing.T, lo, hi int64, ttl time.Duration) (machineid.Leaser, error) {
			c := newClient()
			// A bound of 500ms keeps the restart floor (TTL + bound) short;
			// the Clock subtest's clocks are 30s off.
			s, err := mr.New(c, machineid.WithRange(lo, hi), machineid.WithTTL(ttl), machineid.WithMaxClockOffset(500*time.Millisecond))
			if err != nil {
				_ = c.Close()
				return nil, err
			}
			clients.Store(machineid.Leaser(s), c)
			t.Cleanup(func() { _ = c.Close() })
			return s, nil
		},
		Abandon: func(l machineid.Leaser) {
			if c, ok := clients.Load(l); ok {
				_ = c.(redis.UniversalClient).Close() // renewals fail; nothing is released
			}
		},
		Pause:   func(*testing.T) func() { return pause() },
		Restart: restart,
		// Redis runs here without persistence: a restart loses the leases
		// and marks, and the restart floor must cover them.
		KeepsData: false,
		TTL:       time.Second,
		Reference: "Redis's clock (TIME)",
	}
}

// TestConformance runs the public conformance suite against a real
// standalone redis-server, restarted empty.
func TestConformance(t *testing.T) {
	srv := redistest.Start(t)
	machineidtest.Run(t, harness(func() redis.UniversalClient {
		return redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: 1, DialTimeout: 200 * time.Millisecond})
	}, func() func() { srv.Pause(); return srv.Resume }, func(t *testing.T) {
		srv.Stop()
		srv.Restart()
	}))
}

// TestConformanceCluster runs the suite against a three-node Redis Cluster;
// Restart kills and restarts, empty, the node that holds the keys' slot.
func TestConformanceCluster(t *testing.T) {
	cl := redistest.StartCluster(t)
	slot, err := strconv.Atoi(strings.TrimSpace(cl.Nodes[0].Do("CLUSTER", "KEYSLOT", "{ringflake}:")))
	if err != nil {
		t.Fatalf("CLUSTER KEYSLOT: %v", err)
	}
	owner := cl.Nodes[slot*len(cl.Nodes)/16384] // StartCluster splits the slots evenly, in order
	machineidtest.Run(t, harness(func() redis.UniversalClient {
		return redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), MaxRetries: 1, DialTimeout: 200 * time.Millisecond})
	}, func() func() { owner.Pause(); return owner.Resume }, func(t *testing.T) {
		owner.Stop()
		owner.Restart()
		deadline := time.Now().Add(30 * time.Second)
		for !strings.Contains(owner.Do("CLUSTER", "INFO"), "cluster_state:ok") {
			if time.Now().After(deadline) {
				t.Fatalf("the restarted node did not rejoin the cluster within 30s")
			}
			time.Sleep(20 * time.Millisecond)
		}
	}))
}
