package machineid_redis_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"syscall"
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

// ttl is the shortest TTL a Service takes, so that expiry scenarios take
// about a second; it is long enough that a loaded machine running tests in
// parallel keeps its leases.
const ttl = time.Second

// prefix is the default key prefix.
const prefix = "{ringflake}:"

// floor is how long the restart floor keeps a newcomer waiting, at the TTL
// ttl and the default bound on the clocks' offset: on a server up that
// long, the floor every take inherits is in the past on any clock within
// the bound.
const floor = ttl + 3*bound

// settled starts a server and waits until it has been up for d, so that a
// first lease finds the restart floor past (see
// TestRedisRestartWithLiveHolder): the tests that use it are about other
// things.
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

func leased(t *testing.T, c redis.UniversalClient, opts ...machineid.Option) *machineid.Holder {
	t.Helper()
	s, err := mr.New(c, append([]machineid.Option{machineid.WithTTL(ttl)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Release(time.Time{}) })
	return s
}

// leaseOf returns s's lease as a watcher sees it now. Reading l after stop
// is safe: stop waits for a delivery in progress.
func leaseOf(s *machineid.Holder) machineid.Lease {
	var l machineid.Lease
	s.Watch(func(x machineid.Lease) { l = x })()
	return l
}

// acquireMany has n services acquire concurrently and returns their IDs.
func acquireMany(t *testing.T, c redis.UniversalClient, n int, opts ...machineid.Option) []int64 {
	t.Helper()
	svcs := make([]*machineid.Holder, n)
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
	ids := acquireMany(t, c, 50, machineid.WithRange(0, 63))
	requireDistinct(t, ids, "machine ID")
	for _, id := range ids {
		assert.Less(t, id, int64(50), "IDs should be the lowest free ones")
	}
}

func TestExhaustedRangeSaysWhy(t *testing.T) {
	t.Parallel()
	c := client(t, redistest.Start(t).Addr)
	acquireMany(t, c, 3, machineid.WithRange(5, 7))
	ctx, cancel := context.WithTimeout(context.Background(), ttl)
	defer cancel()
	_, err := leased(t, c, machineid.WithRange(5, 7)).MachineID(ctx)
	require.ErrorIs(t, err, machineid.ErrExhausted)
	assert.Contains(t, err.Error(), `machine IDs 5..7 held, each by a lease under the prefix "{ringflake}:" (holders are random tokens); the first frees in at most `)
	assert.Contains(t, err.Error(), "; waited ")
}

func TestReleasedIDIsReused(t *testing.T) {
	t.Parallel()
	c := client(t, settled(t, floor).Addr)
	a := leased(t, c, machineid.WithRange(0, 0))
	id, err := a.MachineID(acquireCtx(t))
	require.NoError(t, err)
	require.NoError(t, a.Release(time.Time{}))
	assert.False(t, leaseOf(a).Held, "a released service's lease should not be held")
	assert.ErrorIs(t, leaseOf(a).Err, machineid.ErrReleased, "a released holder's lease should say why it is not held")
	b := leased(t, c, machineid.WithRange(0, 0))
	got, err := b.MachineID(acquireCtx(t))
	require.NoError(t, err, "a released ID should be free at once")
	assert.Equal(t, id, got)
	assert.Equal(t, leaseOf(a).Until, leaseOf(b).After, "the new holder should inherit the old holder's mark")
}

func TestCrashedHoldersIDIsReclaimedAfterTTL(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	crashing := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1})
	// A lease of 3 s leaves the refused take below a second to be
	// answered in on a loaded machine, before the crashed lease expires.
	life := 3 * ttl
	a := leased(t, crashing, machineid.WithRange(0, 0), machineid.WithTTL(life))
	_, err := a.MachineID(acquireCtx(t))
	require.NoError(t, err)
	mark := leaseOf(a).Until
	require.NoError(t, crashing.Close()) // from now on a can neither renew nor release, as if it died

	b := leased(t, client(t, srv.Addr), machineid.WithRange(0, 0), machineid.WithTTL(life))
	short, cancel := context.WithTimeout(context.Background(), ttl)
	defer cancel()
	_, err = b.MachineID(short)
	require.ErrorIs(t, err, machineid.ErrExhausted, "a live-looking lease must not be taken")
	ctx, cancel := context.WithTimeout(context.Background(), 10*life)
	defer cancel()
	id, err := b.MachineID(ctx) // waits for the ID to free
	require.NoError(t, err, "the crashed holder's ID should come back after its TTL")
	assert.Equal(t, int64(0), id)
	assert.False(t, leaseOf(b).After.Before(mark), "After = %v; want at least the crashed holder's mark %v", leaseOf(b).After, mark)
	assert.Eventually(t, func() bool { return !leaseOf(a).Held }, 2*life, ttl/20, "the crashed holder should have stopped vouching for its lease")
	assert.ErrorContains(t, leaseOf(a).Err, "client is closed", "the lapsed lease should carry the error its renewals got")
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
	require.NoError(t, s.Release(time.Time{}))
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, int64(-1), seen[0].ID, "the first report should say nothing is held yet")
	assert.True(t, seen[1].Held, "the acquisition should be reported held")
	assert.True(t, seen[2].Until.After(seen[1].Until), "a renewal should raise Until")
	last := seen[len(seen)-1]
	assert.False(t, last.Held, "Release should be reported as a lease not held")
	assert.ErrorIs(t, last.Err, machineid.ErrReleased, "Release should be reported as the reason")
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
	srv := settled(t, floor)
	svc := leased(t, client(t, srv.Addr))
	g, err := ringflake.New(t.Context(), ringflake.WithMachineIDSource(svc), ringflake.WithMaxWait(-1))
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
	assert.ErrorContains(t, err, "no renewal of machine ID 0 was confirmed within TTL 1s − safety margin 200ms of the last; the latest call: machineid_redis: renewing machine ID 0: no answer within 333ms")
	// The client tries to dial for a while before it says why; by then
	// the error names the cause.
	assert.Eventually(t, func() bool {
		_, err = g.NextID()
		return errors.Is(err, ringflake.ErrLeaseLost) && errors.Is(err, syscall.ECONNREFUSED)
	}, 10*ttl, ttl/20, "the error should come to carry the cause, Redis refusing connections: %v", err)
	assert.ErrorIs(t, g.Lease().Err, syscall.ECONNREFUSED, "the generator's Lease should say why it is not held")
	assert.False(t, g.Lease().Held)

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
	srv := settled(t, floor)
	svc := leased(t, client(t, srv.Addr))
	g, err := ringflake.New(t.Context(), ringflake.WithMachineIDSource(svc), ringflake.WithMaxWait(-1))
	require.NoError(t, err)
	defer g.Close()
	_, err = g.NextID()
	require.NoError(t, err)
	srv.Pause() // a hung server: the calls time out rather than fail
	_, err = nextUntil(g, 10*ttl)
	require.ErrorIs(t, err, ringflake.ErrLeaseLost)
	// A renewal times out after TTL/3, before the lease's deadline; on a
	// loaded machine the deadline may come first, which the error says.
	if !errors.Is(err, context.DeadlineExceeded) {
		assert.ErrorContains(t, err, "no renewal of machine ID 0 was confirmed", "the error should give the cause")
	}
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
			c := client(t, settled(t, floor).Addr)
			// The fake clocks run an hour ahead of Redis's, clear of its
			// restart floor (which every take inherits, on every clock):
			// the clock check is off, as the marks are what is tested.
			clockA := fakeclock.New(time.Now().Add(time.Hour).Truncate(time.Second))
			// The marks are what is tested, not expiry: a TTL of 3 s gives
			// each call a timeout of 1 s, which a loaded machine meets
			// (at 1 s, A's release missed its 333 ms once under load).
			off, long := machineid.WithMaxClockOffset(-1), machineid.WithTTL(3*ttl)
			a := leased(t, c, machineid.WithRange(0, tt.ids-1), off, long) // New hands it the generator's clock
			// A generous MaxWait rides out a lease that lapses on a loaded machine.
			ga, err := ringflake.New(t.Context(), ringflake.WithMachineIDSource(a), ringflake.WithClock(clockA.Now), ringflake.WithMaxWait(10*ttl))
			require.NoError(t, err)
			var ids []ringflake.ID
			for range 100 {
				clockA.Add(time.Millisecond)
				id, err := ga.NextID()
				require.NoError(t, err)
				ids = append(ids, id)
			}
			require.NoError(t, ga.Close())

			// The process restarts with its clock 5s behind. New waits, in
			// real time, for the clock to pass the mark its ID inherited.
			clockB := fakeclock.New(clockA.Now().Add(-5 * time.Second))
			b := leased(t, c, machineid.WithRange(0, tt.ids-1), off, long)
			type made struct {
				g   *ringflake.Generator
				err error
			}
			done := make(chan made, 1)
			go func() {
				g, err := ringflake.New(t.Context(), ringflake.WithMachineIDSource(b), ringflake.WithClock(clockB.Now), ringflake.WithMaxWait(-1))
				done <- made{g, err}
			}()
			if tt.waits {
				var after time.Time
				require.Eventually(t, func() bool { l := leaseOf(b); after = l.After; return l.Held }, 10*ttl, ttl/20,
					"the new holder should take the only ID")
				require.True(t, after.After(clockB.Now()), "the inherited mark %v should be ahead of the new holder's clock %v", after, clockB.Now())
				select {
				case m := <-done:
					require.Failf(t, "New returned while the clock was behind the inherited mark", "error %v", m.err)
				case <-time.After(ttl / 2):
				}
				clockB.Set(after.Add(time.Millisecond))
			}
			m := <-done
			require.NoError(t, m.err)
			gb := m.g
			defer gb.Close()
			require.Equal(t, tt.wantID, gb.Lease().ID)
			require.False(t, gb.Lease().After.After(clockB.Now()), "New returned before the clock passed the mark")
			// The mark the ID was taken with may equal the inherited one
			// when the clock is behind; the next renewal opens the window.
			require.Eventually(t, func() bool {
				id, err := gb.NextID()
				if err == nil {
					ids = append(ids, id)
				}
				return err == nil
			}, 10*ttl, ttl/20, "once New has returned, a renewal should let the generator issue")
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
		opts   []machineid.Option
		msg    string // empty: no error
	}{
		{"defaults", cluster, nil, ""},
		{"untagged prefix on one node", single, []machineid.Option{mr.WithPrefix("seed:")}, ""},
		{"untagged prefix on a cluster", cluster, []machineid.Option{mr.WithPrefix("seed:")}, `prefix = "seed:"; valid: one with a hash tag`},
		{"empty hash tag", cluster, []machineid.Option{mr.WithPrefix("{}x:")}, "valid: one with a hash tag"},
		{"nil client", nil, nil, "client = nil"},
		{"inverted range", single, []machineid.Option{machineid.WithRange(9, 3)}, "range = 9..3"},
		{"negative range", single, []machineid.Option{machineid.WithRange(-1, 3)}, "range = -1..3"},
		{"range past what Lua spells exactly", single, []machineid.Option{machineid.WithRange(0, 1e14)}, "range = 0..100000000000000; valid: lo..hi with 0 <= lo <= hi <= 99999999999999"},
		{"largest range end", single, []machineid.Option{machineid.WithRange(maxID, maxID)}, ""},
		{"tiny TTL", single, []machineid.Option{machineid.WithTTL(time.Millisecond)}, "TTL = 1ms; valid: 1s..5m0s"},
		{"huge TTL", single, []machineid.Option{machineid.WithTTL(100 * time.Hour)}, "TTL = 100h0m0s; valid: 1s..5m0s"},
		{"negative TTL", single, []machineid.Option{machineid.WithTTL(-time.Second)}, "TTL = -1s"},
		{"shortest and longest TTL", single, []machineid.Option{machineid.WithTTL(time.Second), machineid.WithTTL(5 * time.Minute)}, ""},
		{"huge margin", single, []machineid.Option{machineid.WithSafetyMargin(6 * time.Second)}, "safety margin = 6s; valid: 1ms up to, not including, TTL/2 = 5s"},
		{"margin of half the TTL", single, []machineid.Option{machineid.WithTTL(time.Second), machineid.WithSafetyMargin(500 * time.Millisecond)}, "safety margin = 500ms"},
		{"call timeout over TTL", single, []machineid.Option{machineid.WithCallTimeout(time.Minute)}, "call timeout = 1m0s; valid: 1ms..3.333333333s (TTL/3)"},
		{"call timeout over TTL/3", single, []machineid.Option{machineid.WithTTL(3 * time.Second), machineid.WithCallTimeout(1001 * time.Millisecond)}, "call timeout = 1.001s"},
		{"zero call timeout is the default", single, []machineid.Option{machineid.WithCallTimeout(0)}, ""},
		{"negative call timeout", single, []machineid.Option{machineid.WithCallTimeout(-time.Second)}, "call timeout = -1s"},
		{"sub-millisecond call timeout", single, []machineid.Option{machineid.WithCallTimeout(time.Microsecond)}, "call timeout = 1µs"},
		{"negative margin", single, []machineid.Option{machineid.WithSafetyMargin(-time.Second)}, "safety margin = -1s"},
		{"zero margin is the default", single, []machineid.Option{machineid.WithSafetyMargin(0)}, ""},
		{"sub-millisecond margin", single, []machineid.Option{machineid.WithSafetyMargin(time.Microsecond)}, "safety margin = 1µs"},
		{"clock check off", single, []machineid.Option{machineid.WithMaxClockOffset(-time.Second)}, ""},
		{"huge clock bound", single, []machineid.Option{machineid.WithMaxClockOffset(2 * time.Hour)}, "max clock offset = 2h0m0s; valid: up to 1h0m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := mr.New(tt.client, tt.opts...)
			if tt.msg == "" {
				require.NoError(t, err)
				assert.NoError(t, s.Release(time.Time{}), "releasing a service that never acquired")
				return
			}
			require.ErrorIs(t, err, ringflake.ErrInvalidConfig)
			assert.Contains(t, err.Error(), tt.msg)
			assert.True(t, strings.HasPrefix(err.Error(), "ringflake: invalid configuration: "), "message %q should start with the sentinel", err)
			assert.Equal(t, 1, strings.Count(err.Error(), ": invalid configuration"), "message %q should name its package once", err)
		})
	}
}

// A released Holder takes a lease again on the next MachineID, under a new
// token, so that one generator after another can use it.
func TestReleasedHolderTakesAgain(t *testing.T) {
	t.Parallel()
	c := client(t, redistest.Start(t).Addr)
	s := leased(t, c)
	_, err := s.MachineID(acquireCtx(t))
	require.NoError(t, err)
	require.NoError(t, s.Release(time.Time{}))
	require.NoError(t, s.Release(time.Now()), "Release again does nothing and returns the first one's error")
	assert.ErrorIs(t, leaseOf(s).Err, machineid.ErrReleased)
	keys, err := c.Keys(context.Background(), prefix+"OWNER:*").Result()
	require.NoError(t, err)
	require.Len(t, keys, 0, "no owner left after Release")
	_, err = s.MachineID(acquireCtx(t))
	require.NoError(t, err)
	assert.True(t, leaseOf(s).Held, "the lease taken again")
}

func TestUnreachableRedisTimesOut(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := client(t, srv.Addr)
	srv.Pause()
	defer srv.Resume()
	s := leased(t, c, machineid.WithCallTimeout(50*time.Millisecond))
	_, err := s.MachineID(context.Background())
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), "no answer within 50ms")
}

// New with a server that does not answer returns the service's timeout
// once its context's deadline is up, without waiting the up to two call
// timeouts that releasing what the unanswered call may have taken can
// take; that release goes on in the background and, once the server
// answers again, leaves no lease behind.
func TestNewIsBoundedByItsContext(t *testing.T) {
	t.Parallel()
	srv := settled(t, 3*time.Second)
	c := client(t, srv.Addr)
	require.NoError(t, c.Ping(context.Background()).Err(), "connect before the server stops answering")
	srv.Pause()
	svc, err := mr.New(c, machineid.WithTTL(3*time.Second), machineid.WithCallTimeout(time.Second))
	require.NoError(t, err)
	start := time.Now()
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	_, err = ringflake.New(ctx, ringflake.WithMachineIDSource(svc))
	took := time.Since(start)
	srv.Resume()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorContains(t, err, "machineid_redis: taking a machine ID: no answer within", "the store's own error, which says more than New's")
	// Waiting for the release would take at least another second (settle
	// gives the unanswered call up to one call timeout).
	assert.Less(t, took, time.Second, "New returned after %v, past its 200ms deadline by a call timeout", took)
	require.Eventually(t, func() bool {
		keys, err := c.Keys(context.Background(), prefix+"LEASE:*").Result()
		return err == nil && len(keys) == 0
	}, 10*time.Second, 10*time.Millisecond, "the background release should leave no lease")
}

// A server that accepts connections but does not answer, with a client
// whose read timeout is shorter than the call timeout: the client gives up
// first, and the error says so.
func TestClientReadTimeoutSaysSo(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, ReadTimeout: 50 * time.Millisecond})
	t.Cleanup(func() { _ = c.Close() })
	require.NoError(t, c.Ping(context.Background()).Err(), "connect before the server stops answering")
	srv.Pause()
	defer srv.Resume()
	s := leased(t, c, machineid.WithCallTimeout(300*time.Millisecond))
	_, err := s.MachineID(context.Background())
	require.ErrorIs(t, err, os.ErrDeadlineExceeded, "the client's own timeout ended the call")
}

// A Release racing a MachineID leaves no lease in Redis that the Holder
// does not report held: either the release came first and the MachineID
// took a lease after it, which the Holder holds and a further Release
// frees, or the release freed what the MachineID took.
func TestCloseDuringAcquireLeavesNoLease(t *testing.T) {
	t.Parallel()
	c := client(t, redistest.Start(t).Addr)
	leases := func() []string {
		keys, err := c.Keys(context.Background(), prefix+"LEASE:*").Result()
		require.NoError(t, err)
		return keys
	}
	for i := range 20 {
		s, err := mr.New(c, machineid.WithTTL(ttl))
		require.NoError(t, err)
		var g errgroup.Group
		g.Go(func() error {
			_, err := s.MachineID(acquireCtx(t))
			if err != nil && !errors.Is(err, machineid.ErrReleased) {
				return err
			}
			return nil
		})
		g.Go(func() error {
			time.Sleep(time.Duration(i*50) * time.Microsecond) // into the call, on some rounds
			return s.Release(time.Time{})
		})
		require.NoError(t, g.Wait())
		if !s.Lease().Held {
			require.Empty(t, leases(), "round %d: a lease taken while releasing must be freed", i)
		}
		require.NoError(t, s.Release(time.Time{}))
		require.Empty(t, leases(), "round %d: a lease left after the last Release", i)
	}
}

// maxID is the largest machine ID a Service hands out, 10^14-1.
const maxID = 1e14 - 1

// The largest ID is leased under the key that spells it in digits, which
// renewal and release look up again.
func TestLargestIDKeepsItsKey(t *testing.T) {
	t.Parallel()
	c := client(t, settled(t, floor).Addr)
	s := leased(t, c, machineid.WithRange(maxID, maxID))
	id, err := s.MachineID(acquireCtx(t))
	require.NoError(t, err)
	require.Equal(t, int64(maxID), id)
	keys, err := c.Keys(context.Background(), prefix+"LEASE:*").Result()
	require.NoError(t, err)
	assert.Equal(t, []string{prefix + "LEASE:99999999999999"}, keys)
	time.Sleep(ttl) // renewals at TTL/3 must find the key
	assert.True(t, leaseOf(s).Held, "renewals should keep the lease on the largest ID")
	require.NoError(t, s.Release(time.Time{}))
	keys, err = c.Keys(context.Background(), prefix+"LEASE:*").Result()
	require.NoError(t, err)
	assert.Empty(t, keys, "Release releases the lease")
}
