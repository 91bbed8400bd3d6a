package machineid_redis_test

import (
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/internal/redistest"
	"github.com/ringflake/ringflake/machineid"
	mr "github.com/ringflake/ringflake/machineid_redis"
)

func TestCluster(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t)
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs()})
	t.Cleanup(func() { _ = c.Close() })
	ids := acquireMany(t, c, 50, machineid.WithRange(0, 63))
	requireDistinct(t, ids, "machine ID")

	// Generators sharing a small range on the Cluster: every ID distinct.
	var all []ringflake.ID
	var mu sync.Mutex
	var g errgroup.Group
	for range 4 {
		g.Go(func() error {
			svc, err := mr.New(c, machineid.WithTTL(ttl), machineid.WithRange(100, 103), mr.WithPrefix("{cluster-test}:"))
			if err != nil {
				return err
			}
			gen, err := ringflake.New(t.Context(), ringflake.WithMachineIDSource(svc), ringflake.WithMaxWait(10*ttl))
			if err != nil {
				return err
			}
			defer gen.Close()
			got, err := nextUntil(gen, 2*ttl)
			mu.Lock()
			all = append(all, got...)
			mu.Unlock()
			return err
		})
	}
	require.NoError(t, g.Wait())
	require.NotEmpty(t, all)
	requireDistinct(t, all, "ID")
}

func TestClusterNodeStoppedMidRun(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t)
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), MaxRetries: 1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = c.Close() })
	svc := leased(t, c)
	g, err := ringflake.New(t.Context(), ringflake.WithMachineIDSource(svc), ringflake.WithMaxWait(-1))
	require.NoError(t, err)
	defer g.Close()
	// Three nodes and the race detector on two cores can delay a renewal
	// past the deadline; a lapse before the stop is correct, if rare.
	var before []ringflake.ID
	require.Eventually(t, func() bool {
		got, _ := nextUntil(g, ttl/10)
		before = append(before, got...)
		return len(before) > 10
	}, 10*ttl, time.Millisecond, "the generator should serve while the cluster is up")

	slot, err := strconv.Atoi(cl.Nodes[0].Do("CLUSTER", "KEYSLOT", prefix+"MARKS"))
	require.NoError(t, err)
	owner := cl.Nodes[slot*3/16384] // StartCluster splits the slots evenly, in order
	owner.Stop()
	during, err := nextUntil(g, 10*ttl)
	require.ErrorIs(t, err, ringflake.ErrLeaseLost, "with the slot's node down, the lease must lapse")
	owner.Restart()
	var after []ringflake.ID
	require.Eventually(t, func() bool {
		id, err := g.NextID()
		if err == nil {
			after = append(after, id)
		}
		return err == nil
	}, 30*time.Second, ttl/10, "the generator should recover when the node is back")
	requireDistinct(t, append(append(before, during...), after...), "ID")
}
