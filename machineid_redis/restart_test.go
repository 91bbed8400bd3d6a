package machineid_redis_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/internal/redistest"
	"github.com/ringflake/ringflake/machineid"
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
			srv := settled(t, floor)
			c := client(t, srv.Addr)
			if tt.snapshot {
				// A snapshot in which ID 0 is free with a mark in the past:
				// what the server goes back to when it restarts.
				old := leased(t, c, machineid.WithRange(0, 0))
				_, err := old.MachineID(acquireCtx(t))
				require.NoError(t, err)
				require.NoError(t, old.Release(time.Now().Add(-time.Second)))
				require.Equal(t, "OK", srv.Do("SAVE"))
			}

			a := leased(t, c, machineid.WithRange(0, 0))
			ga, err := ringflake.New(t.Context(), ringflake.WithMachineIDSource(a), ringflake.WithMaxWait(-1))
			require.NoError(t, err)
			defer ga.Close()
			if tt.snapshot {
				require.Less(t, ga.Lease().After, time.Now(), "a's ID should be free at once before the restart")
			}
			_, err = ga.NextID()
			require.NoError(t, err)
			markA := ga.Lease().Until

			// a issues as fast as it can, until its lease deadline, while
			// the server restarts and b takes the ID and waits in New for
			// its clock to pass the restart floor; then b issues for a while.
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

			srv.Stop()
			srv.Restart()
			b := leased(t, client(t, srv.Addr), machineid.WithRange(0, 0))
			gb, err := ringflake.New(t.Context(), ringflake.WithMachineIDSource(b), ringflake.WithMaxWait(-1))
			if err != nil {
				bDone.Store(true)
				_ = eg.Wait()
			}
			require.NoError(t, err, "the restarted server has ID 0 free")
			defer gb.Close()
			require.Equal(t, int64(0), gb.Lease().ID)
			assert.False(t, gb.Lease().After.Before(markA),
				"the new holder's After = %v is below the live holder's confirmed mark %v", gb.Lease().After, markA)
			// b's 20,000 IDs are counted, within a minute of its New: end,
			// 10 s from before the restart, left b what the floor's wait
			// (7 s) did not take, and under the CPU hog at load 8 on 2
			// cores b issued 2,132 IDs in it.
			bEnd := time.Now().Add(time.Minute)
			eg.Go(func() error {
				defer bDone.Store(true)
				return record(gb, "b", func(n int) bool { return n >= 20000 || time.Now().After(bEnd) })()
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

// TestRestartFloorCountsFromTheAnswer sends an acquisition to a server
// that has just restarted and is stalled, so that the script runs seconds
// after the call was sent. The restart floor must still cover the mark of
// a holder that was live before the restart (and cannot reach the server
// now, so it issues until its deadline): counted from the send time with
// the uptime read at run time, it came out low by the delay.
func TestRestartFloorCountsFromTheAnswer(t *testing.T) {
	t.Parallel()
	const ttl = 5 * time.Second
	srv := settled(t, floor)
	ca := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1})
	a := leased(t, ca, machineid.WithRange(0, 0), machineid.WithTTL(ttl))
	_, err := a.MachineID(acquireCtx(t))
	require.NoError(t, err)
	require.NoError(t, ca.Close()) // a partition: a's renewals fail from here on, so its mark stays put
	markA := leaseOf(a).Until
	require.True(t, leaseOf(a).Held, "a holds its lease until its deadline")

	srv.Stop()
	srv.Restart() // without a's lease and mark
	srv.Pause()
	cb := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, ReadTimeout: 20 * time.Second})
	t.Cleanup(func() { _ = cb.Close() })
	b := leased(t, cb, machineid.WithRange(0, 0), machineid.WithTTL(ttl))
	got := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		_, err := b.MachineID(ctx)
		got <- err
	}()
	time.Sleep(3500 * time.Millisecond) // the call waits in the stalled server
	srv.Resume()
	require.NoError(t, <-got)
	assert.False(t, leaseOf(b).After.Before(markA),
		"b's After = %v is below the mark %v that the live holder a was confirmed before the restart", leaseOf(b).After, markA)
}

// TestRestartFloorCoversClocksWithinTheBound has a holder whose clock runs
// 1.5s ahead (of the true one and the server's, within the default bound
// of 2s) issue on ID 0, and Redis then lose every mark. A process on the
// true clock that takes ID 0 next must start after the old holder's mark:
// the floor is counted on the server's clock and covers marks up to TTL +
// bound past it, which the scripts enforce.
func TestRestartFloorCoversClocksWithinTheBound(t *testing.T) {
	t.Parallel()
	srv := settled(t, floor) // no restart floor for a
	ahead := func() time.Time { return time.Now().Add(bound * 3 / 4) }
	a := leased(t, client(t, srv.Addr), machineid.WithRange(0, 0))
	ga, err := ringflake.New(t.Context(), ringflake.WithMachineIDSource(a), ringflake.WithClock(ahead), ringflake.WithMaxWait(-1))
	require.NoError(t, err)
	_, err = ga.NextID()
	require.NoError(t, err)
	markA := ga.Lease().Until // on a's clock, 1.5s ahead of the true one
	require.NoError(t, ga.Close())

	srv.Stop()
	srv.Restart() // every mark lost

	b := leased(t, client(t, srv.Addr), machineid.WithRange(0, 0))
	_, err = b.MachineID(acquireCtx(t))
	require.NoError(t, err)
	assert.False(t, leaseOf(b).After.Before(markA),
		"After = %v should be at or past the lost mark %v, made 1.5s ahead", leaseOf(b).After, markA)
}

// TestRestartFloorCoversOppositeClocks has a holder whose clock runs 3.5s
// ahead (within a bound of 4s) issue on ID 0 and lose Redis, which then
// restarts and loses every mark. Once the server has been up for TTL +
// bound, the floor's value (a lost mark is at most that past the restart
// on the server's clock), a newcomer whose clock runs 3.5s behind takes ID
// 0: its clock still reads below the lost mark, so it must inherit a
// floor past it and issue after it. The floor once ended at TTL + bound,
// and the newcomer inherited nothing; it lasts TTL + 2·bound.
func TestRestartFloorCoversOppositeClocks(t *testing.T) {
	t.Parallel()
	const wide = 4 * time.Second
	off := wide * 7 / 8
	ahead := func() time.Time { return time.Now().Add(off) }
	behind := func() time.Time { return time.Now().Add(-off) }
	srv := settled(t, ttl+2*wide) // no restart floor for a
	ca := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1})
	a := leased(t, ca, machineid.WithRange(0, 0), machineid.WithMaxClockOffset(wide))
	ga, err := ringflake.New(t.Context(), ringflake.WithMachineIDSource(a), ringflake.WithClock(ahead), ringflake.WithMaxWait(-1))
	require.NoError(t, err)
	_, err = ga.NextID()
	require.NoError(t, err)
	require.NoError(t, ca.Close()) // a partition: a may issue up to its mark until its deadline
	markA := ga.Lease().Until      // on a's clock

	srv.Stop()
	srv.Restart() // every mark lost
	srv.WaitUptime(ttl + wide)
	require.True(t, behind().Before(markA), "the newcomer's clock, %v, reads below the lost mark %v: the case this test is about", behind(), markA)

	b := leased(t, client(t, srv.Addr), machineid.WithRange(0, 0), machineid.WithMaxClockOffset(wide))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	gb, err := ringflake.New(ctx, ringflake.WithMachineIDSource(b), ringflake.WithClock(behind))
	require.NoError(t, err)
	defer func() { assert.NoError(t, gb.Close()) }()
	assert.False(t, gb.Lease().After.Before(markA), "After = %v should be at or past the lost mark %v", gb.Lease().After, markA)
	id, err := gb.NextID()
	require.NoError(t, err)
	assert.True(t, gb.Layout().Decompose(id).Time.After(markA), "the newcomer issued at %v, at or below the lost mark %v", gb.Layout().Decompose(id).Time, markA)
}

// TestGeneratorRefusesAnIDItCannotEncode gives a generator whose layout
// has 32 machine IDs a service whose range starts past them. New must
// refuse the ID it is handed and release the lease at once, so the ID is
// free for a process that can use it.
func TestGeneratorRefusesAnIDItCannotEncode(t *testing.T) {
	t.Parallel()
	c := client(t, redistest.Start(t).Addr)
	layout := ringflake.DefaultLayout()
	layout.MachineBits, layout.SequenceBits = 5, 17
	_, err := ringflake.New(t.Context(), ringflake.WithLayout(layout), ringflake.WithMachineIDSource(leased(t, c, machineid.WithRange(32, 1023))))
	require.ErrorIs(t, err, ringflake.ErrInvalidConfig)
	assert.Contains(t, err.Error(), "getting the machine ID: ringflake: invalid configuration: machine ID from the source = 32; valid range 0..31")
	for _, pattern := range []string{prefix + "LEASE:*", prefix + "OWNER:*"} {
		keys, err := c.Keys(acquireCtx(t), pattern).Result()
		require.NoError(t, err)
		assert.Empty(t, keys, "a refused ID's lease must be released")
	}

	g, err := ringflake.New(t.Context(), ringflake.WithLayout(layout), ringflake.WithMachineIDSource(leased(t, c, machineid.WithRange(0, 31))))
	require.NoError(t, err, "a range within the layout is fine")
	require.NoError(t, g.Close())
}

// TestForgottenMarksStayCovered is issue 28's scenario. A holder on ID 0
// (in host mode, the host's ID) issues one ID a millisecond and dies as Redis restarts, forgetting its
// lease and mark or rolling back to a snapshot taken at its first ID,
// which it then issued past. Well after the restart, a newcomer with a
// correct clock takes ID 0 and must issue at once; its clock then steps
// back to the dead holder's first ID and runs on past its last. The
// newcomer must repeat none of the dead holder's IDs: the marks Redis
// forgot are covered for every later take of the ID, not only those soon
// after the restart.
func TestForgottenMarksStayCovered(t *testing.T) {
	t.Parallel()
	const life = 2 * time.Second // the TTL of the issue's scenario
	lease := []machineid.Option{machineid.WithRange(0, 0)}
	host := []machineid.Option{machineid.WithRange(1, 1), mr.WithHostMapping("10.28.0.1")} // the mapping is lost too: the newcomer gets ID 1 again
	for _, tt := range []struct {
		name     string
		snapshot bool
		mode     []machineid.Option
	}{
		{"data lost", false, lease},
		{"rolled back to a snapshot", true, lease},
		{"host mode, data lost", false, host},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			opts := append([]machineid.Option{machineid.WithTTL(life)}, tt.mode...)
			srv := settled(t, life+2*bound)
			// The dead holder's own client: closed when it dies, so that
			// its renewals never reach the restarted server.
			ca := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1})
			a := leased(t, ca, opts...)
			ga, err := ringflake.New(t.Context(), ringflake.WithMachineIDSource(a), ringflake.WithMaxWait(-1))
			require.NoError(t, err)
			t.Cleanup(func() { _ = ga.Close() })
			first, err := ga.NextID()
			require.NoError(t, err)
			if tt.snapshot {
				require.Equal(t, "OK", srv.Do("SAVE"))
			}
			// It issues for more than a TTL past the snapshot, so that it
			// renews past the mark the snapshot keeps.
			dead := issueEachMs(ga, time.Now, time.Now().Add(life+1300*time.Millisecond))
			dead[first] = true
			require.NoError(t, ca.Close()) // the holder dies ...
			srv.Stop()                     // ... as Redis restarts
			srv.Restart()
			var last time.Time
			for id := range dead {
				if at := ga.Layout().Decompose(id).Time; at.After(last) {
					last = at
				}
			}

			srv.WaitUptime(life + 2*bound) // past the window the restart floor once had
			var back atomic.Int64          // how far the newcomer's clock reads behind the true one, ns
			clock := func() time.Time { return time.Now().Add(-time.Duration(back.Load())) }
			b := leased(t, client(t, srv.Addr), opts...)
			before := time.Now()
			gb, err := ringflake.New(acquireCtx(t), ringflake.WithMachineIDSource(b), ringflake.WithClock(clock), ringflake.WithMaxWait(-1))
			require.NoError(t, err)
			t.Cleanup(func() { _ = gb.Close() })
			require.Equal(t, ga.Lease().ID, gb.Lease().ID, "the newcomer should take the dead holder's ID")
			assert.True(t, gb.Lease().After.Before(before),
				"a newcomer with a correct clock should find its inherited mark (%v) already past when it took the ID (%v)", gb.Lease().After, before)
			_, err = gb.NextID()
			require.NoError(t, err, "a newcomer with a correct clock should issue at once")
			assert.False(t, gb.Lease().After.Before(last),
				"the newcomer's After = %v is below the dead holder's last ID, at %v", gb.Lease().After, last)

			// Its clock steps back to the dead holder's first ID and runs
			// until it is past the last.
			back.Store(int64(time.Since(ga.Layout().Decompose(first).Time)))
			again := issueEachMs(gb, clock, last.Add(20*time.Millisecond))
			var repeated []ringflake.ID
			for id := range again {
				if dead[id] {
					repeated = append(repeated, id)
				}
			}
			assert.Zero(t, len(repeated), "%d of the dead holder's %d IDs issued again by the newcomer (%d issued), first ones: %v",
				len(repeated), len(dead), len(again), repeated[:min(len(repeated), 3)])
		})
	}
}

// issueEachMs has g issue about one ID a millisecond until clock reads
// past end, and returns the IDs issued. A refused call (the mark is ahead,
// with the generator's WithMaxWait(-1)) is tried again a millisecond
// later.
func issueEachMs(g *ringflake.Generator, clock func() time.Time, end time.Time) map[ringflake.ID]bool {
	ids := map[ringflake.ID]bool{}
	for clock().Before(end) {
		if id, err := g.NextID(); err == nil {
			ids[id] = true
		}
		time.Sleep(time.Millisecond)
	}
	return ids
}
