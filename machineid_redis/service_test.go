package machineid_redis_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/internal/fakeclock"
	"github.com/ringflake/ringflake/internal/redistest"
	"github.com/ringflake/ringflake/machineid"
	mr "github.com/ringflake/ringflake/machineid_redis"
)

// ttl is short so that expiry scenarios take about a second, and long
// enough that a loaded machine running tests in parallel keeps its leases.
const ttl = 600 * time.Millisecond

// settled starts a server and waits until it has been up for d, so that a
// first lease finds no restart floor (see TestRedisRestartWithLiveHolder):
// the tests that use it are about other things.
func settled(t *testing.T, d time.Duration) *redistest.Server {
	t.Helper()
	srv := redistest.Start(t)
	srv.WaitUptime(d)
	return srv
}

func client(t *testing.T, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: 1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func leased(t *testing.T, c redis.UniversalClient, opts ...mr.Option) *mr.Service {
	t.Helper()
	s, err := mr.NewLeased(c, append([]mr.Option{mr.WithTTL(ttl)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// acquireMany has n services acquire concurrently and returns their IDs.
func acquireMany(t *testing.T, c redis.UniversalClient, n int, opts ...mr.Option) []int64 {
	t.Helper()
	svcs := make([]*mr.Service, n)
	for i := range svcs {
		svcs[i] = leased(t, c, opts...)
	}
	ids := make([]int64, n)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var g errgroup.Group
	for i, s := range svcs {
		g.Go(func() error {
			id, err := s.MachineID(ctx)
			ids[i] = id
			return err
		})
	}
	require.NoError(t, g.Wait(), "every acquirer should get an ID")
	return ids
}

// acquireCtx bounds an acquisition generously, as the generator's acquire
// timeout does: under load the first call may queue for a connection.
func acquireCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func requireDistinct[T comparable](t *testing.T, xs []T, what string) {
	t.Helper()
	seen := make(map[T]int, len(xs))
	for i, x := range xs {
		if j, dup := seen[x]; dup {
			require.Failf(t, "duplicate "+what, "%v at %d and %d", x, j, i)
		}
		seen[x] = i
	}
}

func TestConcurrentAcquirersGetDistinctIDs(t *testing.T) {
	t.Parallel()
	c := client(t, redistest.Start(t).Addr)
	ids := acquireMany(t, c, 50, mr.WithRange(0, 63))
	requireDistinct(t, ids, "machine ID")
	for _, id := range ids {
		assert.Less(t, id, int64(50), "IDs should be the lowest free ones")
	}
}

func TestExhaustedRangeSaysWhy(t *testing.T) {
	t.Parallel()
	c := client(t, redistest.Start(t).Addr)
	acquireMany(t, c, 3, mr.WithRange(5, 7))
	_, err := leased(t, c, mr.WithRange(5, 7)).MachineID(acquireCtx(t))
	require.ErrorIs(t, err, mr.ErrExhausted)
	assert.Contains(t, err.Error(), "every ID in 5..7 is leased (3 held")
}

func TestReleasedIDIsReused(t *testing.T) {
	t.Parallel()
	c := client(t, settled(t, ttl).Addr)
	a := leased(t, c, mr.WithRange(0, 0))
	id, err := a.MachineID(acquireCtx(t))
	require.NoError(t, err)
	require.NoError(t, a.Close())
	assert.False(t, a.Lease().Valid, "a closed service's lease should be invalid")
	b := leased(t, c, mr.WithRange(0, 0))
	got, err := b.MachineID(acquireCtx(t))
	require.NoError(t, err, "a released ID should be free at once")
	assert.Equal(t, id, got)
	assert.Equal(t, a.Lease().Until, b.Lease().After, "the new holder should inherit the old holder's mark")
}

func TestCrashedHoldersIDIsReclaimedAfterTTL(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	crashing := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1})
	a := leased(t, crashing, mr.WithRange(0, 0))
	_, err := a.MachineID(acquireCtx(t))
	require.NoError(t, err)
	mark := a.Lease().Until
	require.NoError(t, crashing.Close()) // from now on a can neither renew nor release, as if it died

	b := leased(t, client(t, srv.Addr), mr.WithRange(0, 0))
	_, err = b.MachineID(acquireCtx(t))
	require.ErrorIs(t, err, mr.ErrExhausted, "a live-looking lease must not be taken")
	require.Eventually(t, func() bool {
		id, err := b.MachineID(acquireCtx(t))
		return err == nil && id == 0
	}, 10*ttl, ttl/10, "the crashed holder's ID should come back after its TTL")
	assert.False(t, b.Lease().After.Before(mark), "After = %v; want at least the crashed holder's mark %v", b.Lease().After, mark)
	assert.Eventually(t, func() bool { return !a.Lease().Valid }, 2*ttl, ttl/20, "the crashed holder should have stopped vouching for its lease")
}

func TestWatchFollowsTheLease(t *testing.T) {
	t.Parallel()
	c := client(t, redistest.Start(t).Addr)
	s := leased(t, c)
	var mu sync.Mutex
	var seen []machineid.Lease
	stop := s.Watch(func(l machineid.Lease) {
		mu.Lock()
		seen = append(seen, l)
		mu.Unlock()
	})
	defer stop()
	_, err := s.MachineID(acquireCtx(t))
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) >= 3 // before, acquired, renewed
	}, 5*ttl, ttl/20, "a renewal should be reported")
	require.NoError(t, s.Close())
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, int64(-1), seen[0].ID, "the first report should say nothing is held yet")
	assert.True(t, seen[1].Valid, "the acquisition should be reported valid")
	assert.True(t, seen[2].Until.After(seen[1].Until), "a renewal should raise Until")
	assert.False(t, seen[len(seen)-1].Valid, "Close should be reported as an invalid lease")
}

// nextUntil calls NextID until it fails or the deadline passes and returns
// the IDs and the error.
func nextUntil(g *ringflake.Generator, d time.Duration) ([]ringflake.ID, error) {
	var ids []ringflake.ID
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		id, err := g.NextID()
		if err != nil {
			return ids, err
		}
		ids = append(ids, id)
		time.Sleep(time.Millisecond)
	}
	return ids, nil
}

func TestRedisStoppedMidRun(t *testing.T) {
	t.Parallel()
	srv := settled(t, ttl)
	svc := leased(t, client(t, srv.Addr))
	g, err := ringflake.New(ringflake.WithMachineIDService(svc), ringflake.WithMaxWait(0))
	require.NoError(t, err)
	defer g.Close()

	before, err := nextUntil(g, ttl)
	require.NoError(t, err, "the generator should serve while Redis is up")
	// Stop Redis right after a renewal, so the lease has most of its
	// deadline left even on a loaded machine.
	renewed := make(chan struct{}, 1)
	stop := svc.Watch(func(machineid.Lease) {
		select {
		case renewed <- struct{}{}:
		default:
		}
	})
	<-renewed // the report Watch makes at once
	<-renewed // the next renewal
	stop()
	srv.Stop()
	stopped := time.Now()
	during, err := nextUntil(g, 10*ttl)
	lost := time.Now()
	require.ErrorIs(t, err, ringflake.ErrLeaseLost, "the generator should refuse once the lease can't be proven")
	var ce *ringflake.ClockError
	require.ErrorAs(t, err, &ce)
	assert.Less(t, lost.Sub(stopped), ttl, "it must stop before the TTL could have run out on the server")
	assert.NotEmpty(t, during, "it should keep serving until the lease deadline")

	srv.Restart()
	var after []ringflake.ID
	require.Eventually(t, func() bool {
		id, err := g.NextID()
		if err == nil {
			after = append(after, id)
		}
		return err == nil
	}, 10*ttl, ttl/20, "the generator should recover when Redis is back")
	requireDistinct(t, append(append(before, during...), after...), "ID")
}

func TestRedisPausedMidRun(t *testing.T) {
	t.Parallel()
	srv := settled(t, ttl)
	svc := leased(t, client(t, srv.Addr))
	g, err := ringflake.New(ringflake.WithMachineIDService(svc), ringflake.WithMaxWait(0))
	require.NoError(t, err)
	defer g.Close()
	_, err = g.NextID()
	require.NoError(t, err)
	srv.Pause() // a hung server: the calls time out rather than fail
	_, err = nextUntil(g, 10*ttl)
	require.ErrorIs(t, err, ringflake.ErrLeaseLost)
	srv.Resume()
	require.Eventually(t, func() bool { _, err := g.NextID(); return err == nil }, 10*ttl, ttl/20,
		"the generator should recover when Redis answers again")
}

func TestRestartWithClockBehindReusesNoTicks(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		ids    int64 // size of the range
		waits  bool  // the new holder must wait for its clock to pass the mark
		wantID int64
	}{
		{"one ID: waits for the mark", 1, true, 0},
		{"spare ID: takes the other", 2, false, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := client(t, settled(t, ttl).Addr)
			start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			clockA := fakeclock.New(start)
			a := leased(t, c, mr.WithRange(0, tt.ids-1), mr.WithClock(clockA.Now))
			// A generous MaxWait rides out a lease that lapses on a loaded machine.
			ga, err := ringflake.New(ringflake.WithMachineIDService(a), ringflake.WithClock(clockA.Now), ringflake.WithMaxWait(10*ttl))
			require.NoError(t, err)
			var ids []ringflake.ID
			for range 100 {
				clockA.Add(time.Millisecond)
				id, err := ga.NextID()
				require.NoError(t, err)
				ids = append(ids, id)
			}
			require.NoError(t, ga.Close())

			// The process restarts with its clock 5s behind.
			clockB := fakeclock.New(clockA.Now().Add(-5 * time.Second))
			b := leased(t, c, mr.WithRange(0, tt.ids-1), mr.WithClock(clockB.Now))
			gb, err := ringflake.New(ringflake.WithMachineIDService(b), ringflake.WithClock(clockB.Now), ringflake.WithMaxWait(0))
			require.NoError(t, err)
			defer gb.Close()
			require.Equal(t, tt.wantID, gb.MachineID())
			if tt.waits {
				// Until the clock passes the mark, every call fails; once the
				// lease is confirmed, with ErrClockBehind.
				for {
					id, err := gb.NextID()
					require.Error(t, err, "NextID() = %d; the new holder must not issue at or below the previous mark", id)
					if !errors.Is(err, ringflake.ErrLeaseLost) {
						require.ErrorIs(t, err, ringflake.ErrClockBehind)
						break
					}
					time.Sleep(ttl / 20)
				}
				clockB.Set(b.Lease().After.Add(time.Millisecond))
				require.Eventually(t, func() bool { _, err := gb.NextID(); return err == nil }, 10*ttl, ttl/20,
					"once the clock passes the mark, a renewal should open the window")
			} else {
				require.Eventually(t, func() bool { _, err := gb.NextID(); return err == nil }, 10*ttl, ttl/20,
					"a spare ID whose mark has passed should serve at once")
			}
			for range 100 {
				clockB.Add(time.Millisecond)
				id, err := gb.NextID()
				if err == nil {
					ids = append(ids, id)
				}
			}
			requireDistinct(t, ids, "ID")
		})
	}
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	single := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	cluster := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}})
	t.Cleanup(func() { _ = single.Close(); _ = cluster.Close() })
	tests := []struct {
		name   string
		client redis.UniversalClient
		opts   []mr.Option
		msg    string // empty: no error
	}{
		{"defaults", cluster, nil, ""},
		{"untagged prefix on one node", single, []mr.Option{mr.WithPrefix("seed:")}, ""},
		{"untagged prefix on a cluster", cluster, []mr.Option{mr.WithPrefix("seed:")}, `prefix "seed:" has no hash tag`},
		{"empty hash tag", cluster, []mr.Option{mr.WithPrefix("{}x:")}, "has no hash tag"},
		{"nil client", nil, nil, "client is nil"},
		{"inverted range", single, []mr.Option{mr.WithRange(9, 3)}, "range 9..3"},
		{"negative range", single, []mr.Option{mr.WithRange(-1, 3)}, "range -1..3"},
		{"range past what Lua spells exactly", single, []mr.Option{mr.WithRange(0, 1e14)}, "range 0..100000000000000; want 0 <= min <= max <= 99999999999999"},
		{"largest range end", single, []mr.Option{mr.WithRange(mr.MaxID, mr.MaxID)}, ""},
		{"tiny TTL", single, []mr.Option{mr.WithTTL(time.Millisecond)}, "TTL = 1ms"},
		{"huge margin", single, []mr.Option{mr.WithSafetyMargin(6 * time.Second)}, "safety margin = 6s"},
		{"call timeout over TTL", single, []mr.Option{mr.WithCallTimeout(time.Minute)}, "call timeout = 1m0s"},
		{"zero call timeout", single, []mr.Option{mr.WithCallTimeout(0)}, "call timeout = 0s"},
		{"negative margin", single, []mr.Option{mr.WithSafetyMargin(-time.Second)}, "safety margin = -1s"},
		{"zero margin", single, []mr.Option{mr.WithSafetyMargin(0)}, ""},
		{"nil clock", single, []mr.Option{mr.WithClock(nil)}, "clock is nil"},
		{"negative skew", single, []mr.Option{mr.WithMaxClockSkew(-time.Second)}, "max clock skew = -1s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := mr.NewLeased(tt.client, tt.opts...)
			if tt.msg == "" {
				require.NoError(t, err)
				assert.NoError(t, s.Close(), "closing a service that never acquired")
				return
			}
			require.ErrorIs(t, err, mr.ErrInvalidConfig)
			assert.Contains(t, err.Error(), tt.msg)
		})
	}
}

func TestClosedServiceRefuses(t *testing.T) {
	t.Parallel()
	s := leased(t, client(t, redistest.Start(t).Addr))
	require.NoError(t, s.Close())
	_, err := s.MachineID(acquireCtx(t))
	assert.ErrorIs(t, err, mr.ErrClosed)
}

func TestUnreachableRedisTimesOut(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := client(t, srv.Addr)
	srv.Pause()
	defer srv.Resume()
	s := leased(t, c, mr.WithCallTimeout(50*time.Millisecond))
	_, err := s.MachineID(context.Background())
	require.ErrorIs(t, err, mr.ErrTimeout)
	assert.Contains(t, err.Error(), "after 50ms")
}

// New with a server that does not answer returns the service's timeout
// once its acquire timeout is up, without waiting the up to two call
// timeouts that releasing what the unanswered call may have taken can
// take; that release goes on in the background and, once the server
// answers again, leaves no lease behind.
func TestNewIsBoundedByTheAcquireTimeout(t *testing.T) {
	t.Parallel()
	srv := settled(t, 3*time.Second)
	c := client(t, srv.Addr)
	require.NoError(t, c.Ping(context.Background()).Err(), "connect before the server stops answering")
	srv.Pause()
	svc, err := mr.NewLeased(c, mr.WithTTL(3*time.Second), mr.WithCallTimeout(time.Second))
	require.NoError(t, err)
	start := time.Now()
	_, err = ringflake.New(ringflake.WithMachineIDService(svc), ringflake.WithAcquireTimeout(200*time.Millisecond))
	took := time.Since(start)
	srv.Resume()
	require.ErrorIs(t, err, mr.ErrTimeout, "the service's own error, which says more than New's")
	// Waiting for the release would take at least another second (settle
	// gives the unanswered call up to one call timeout).
	assert.Less(t, took, time.Second, "New returned after %v, past its 200ms acquire timeout by a call timeout", took)
	require.Eventually(t, func() bool {
		keys, err := c.Keys(context.Background(), mr.DefaultPrefix+"LEASE:*").Result()
		return err == nil && len(keys) == 0
	}, 10*time.Second, 10*time.Millisecond, "the background release should leave no lease")
}

// A server that accepts connections but does not answer, with a client
// whose read timeout is shorter than the call timeout: the client gives up
// first, and that is still ErrTimeout, not a bare network error.
func TestClientReadTimeoutIsErrTimeout(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, ReadTimeout: 50 * time.Millisecond})
	t.Cleanup(func() { _ = c.Close() })
	require.NoError(t, c.Ping(context.Background()).Err(), "connect before the server stops answering")
	srv.Pause()
	defer srv.Resume()
	s := leased(t, c, mr.WithCallTimeout(500*time.Millisecond))
	_, err := s.MachineID(context.Background())
	require.ErrorIs(t, err, mr.ErrTimeout)
	assert.Contains(t, err.Error(), "i/o timeout", "the client's own timeout ended the call")
}

func TestCloseDuringAcquireLeavesNoLease(t *testing.T) {
	t.Parallel()
	c := client(t, redistest.Start(t).Addr)
	for range 20 {
		s, err := mr.NewLeased(c, mr.WithTTL(ttl))
		require.NoError(t, err)
		var g errgroup.Group
		g.Go(func() error {
			_, err := s.MachineID(acquireCtx(t))
			if err != nil && !errors.Is(err, mr.ErrClosed) {
				return err
			}
			return nil
		})
		g.Go(s.Close)
		require.NoError(t, g.Wait())
		keys, err := c.Keys(context.Background(), mr.DefaultPrefix+"LEASE:*").Result()
		require.NoError(t, err)
		require.Empty(t, keys, "a lease taken while closing must be released")
	}
}

// The largest ID is leased under the key that spells it in digits, which
// renewal and release look up again.
func TestLargestIDKeepsItsKey(t *testing.T) {
	t.Parallel()
	c := client(t, settled(t, ttl).Addr)
	s := leased(t, c, mr.WithRange(mr.MaxID, mr.MaxID))
	id, err := s.MachineID(acquireCtx(t))
	require.NoError(t, err)
	require.Equal(t, int64(mr.MaxID), id)
	keys, err := c.Keys(context.Background(), mr.DefaultPrefix+"LEASE:*").Result()
	require.NoError(t, err)
	assert.Equal(t, []string{mr.DefaultPrefix + "LEASE:99999999999999"}, keys)
	time.Sleep(ttl) // renewals at TTL/3 must find the key
	assert.True(t, s.Lease().Valid, "renewals should keep the lease on the largest ID")
	require.NoError(t, s.Close())
	keys, err = c.Keys(context.Background(), mr.DefaultPrefix+"LEASE:*").Result()
	require.NoError(t, err)
	assert.Empty(t, keys, "Close releases the lease")
}
