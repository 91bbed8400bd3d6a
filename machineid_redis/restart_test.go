package machineid_redis_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/internal/redistest"
	mr "github.com/ringflake/ringflake/machineid_redis"
)

// TestRedisRestartWithLiveHolder restarts Redis under a live holder. The
// server comes back without the holder's lease and mark, or with an older
// copy of them from a snapshot, and a new process takes the same ID at once
// while the old holder is still within its lease. Neither may issue an ID
// the other issues: the new holder starts above every mark the old one
// could have been confirmed.
func TestRedisRestartWithLiveHolder(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name     string
		snapshot bool
	}{
		{"data lost", false},
		{"rolled back to a snapshot", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := settled(t, ttl)
			c := client(t, srv.Addr)
			if tt.snapshot {
				// A snapshot in which ID 0 is free with a mark in the past:
				// what the server goes back to when it restarts.
				old := leased(t, c, mr.WithRange(0, 0))
				_, err := old.MachineID(acquireCtx(t))
				require.NoError(t, err)
				require.NoError(t, old.CloseIssued(time.Now().Add(-time.Second)))
				require.Equal(t, "OK", srv.Do("SAVE"))
			}

			a := leased(t, c, mr.WithRange(0, 0))
			ga, err := ringflake.New(ringflake.WithMachineIDService(a), ringflake.WithMaxWait(0))
			require.NoError(t, err)
			defer ga.Close()
			if tt.snapshot {
				require.Less(t, a.Lease().After, time.Now(), "a's ID should be free at once before the restart")
			}
			_, err = ga.NextID()
			require.NoError(t, err)
			markA := a.Lease().Until

			srv.Stop()
			srv.Restart()
			b := leased(t, client(t, srv.Addr), mr.WithRange(0, 0))
			gb, err := ringflake.New(ringflake.WithMachineIDService(b), ringflake.WithMaxWait(0))
			require.NoError(t, err, "the restarted server has ID 0 free")
			defer gb.Close()
			require.Equal(t, int64(0), gb.MachineID())
			assert.False(t, b.Lease().After.Before(markA),
				"the new holder's After = %v is below the live holder's confirmed mark %v", b.Lease().After, markA)

			// Both issue as fast as they can until b has issued for a while;
			// a issues until its lease deadline.
			var (
				mu  sync.Mutex
				ids = map[ringflake.ID]string{}
				dup []ringflake.ID
			)
			record := func(g *ringflake.Generator, who string, stop func(int) bool) func() error {
				return func() error {
					n := 0
					for !stop(n) {
						id, err := g.NextID()
						if err != nil {
							time.Sleep(100 * time.Microsecond)
							continue
						}
						n++
						mu.Lock()
						if _, seen := ids[id]; seen {
							dup = append(dup, id)
						}
						ids[id] = who
						mu.Unlock()
					}
					return nil
				}
			}
			end := time.Now().Add(10 * ttl)
			var bDone atomic.Bool
			var eg errgroup.Group
			eg.Go(record(ga, "a", func(int) bool { return bDone.Load() || time.Now().After(end) }))
			eg.Go(func() error {
				defer bDone.Store(true)
				return record(gb, "b", func(n int) bool { return n >= 20000 || time.Now().After(end) })()
			})
			require.NoError(t, eg.Wait())
			assert.Zero(t, len(dup), "IDs issued by both holders, first ones: %v", dup[:min(len(dup), 5)])
			nb := 0
			for _, who := range ids {
				if who == "b" {
					nb++
				}
			}
			assert.Equal(t, 20000, nb, "the new holder should issue once its clock passes the restart floor")
		})
	}
}

// TestGeneratorRefusesARangeItCannotEncode gives a generator whose layout
// has 32 machine IDs a service that may hand out 0..1023. It must refuse
// at New, before taking a lease: after a later re-acquisition, an ID past
// 31 would leave the generator without a usable lease for good.
func TestGeneratorRefusesARangeItCannotEncode(t *testing.T) {
	t.Parallel()
	c := client(t, redistest.Start(t).Addr)
	layout := ringflake.DefaultLayout()
	layout.MachineBits, layout.SequenceBits = 5, 17
	_, err := ringflake.New(ringflake.WithLayout(layout), ringflake.WithMachineIDService(leased(t, c)))
	require.ErrorIs(t, err, ringflake.ErrInvalidConfig)
	assert.Contains(t, err.Error(), "machine ID range of service = 0..1023; valid range within 0..31")
	keys, err := c.Keys(acquireCtx(t), mr.DefaultPrefix+"*").Result()
	require.NoError(t, err)
	assert.Empty(t, keys, "a refused service must not have taken a lease")

	g, err := ringflake.New(ringflake.WithLayout(layout), ringflake.WithMachineIDService(leased(t, c, mr.WithRange(0, 31))))
	require.NoError(t, err, "a range within the layout is fine")
	require.NoError(t, g.Close())
}
