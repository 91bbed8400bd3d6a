package machineid_redis_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake/internal/holderclock"
	"github.com/ringflake/ringflake/internal/redistest"
	"github.com/ringflake/ringflake/machineid"
	mr "github.com/ringflake/ringflake/machineid_redis"
)

// defaultMargin is the safety margin a Service with TTL ttl uses.
const defaultMargin = ttl / 5

// markOf reads id's mark from Redis, and then the server's time; ok is
// false if id has no mark.
func markOf(t *testing.T, c *redis.Client, id int64) (mark, server time.Time, ok bool) {
	t.Helper()
	ctx := context.Background()
	raw, err := c.HGet(ctx, prefix+"MARKS", strconv.FormatInt(id, 10)).Result()
	if err == redis.Nil {
		ok = false
	} else {
		require.NoError(t, err)
		ms, err := strconv.ParseInt(raw, 10, 64)
		require.NoError(t, err, "mark %q", raw)
		mark, ok = time.UnixMilli(ms), true
	}
	server, err = c.Time(ctx).Result()
	require.NoError(t, err)
	return mark, server, ok
}

// offsetClock is the wall clock shifted by an offset that can change.
type offsetClock struct{ off atomic.Int64 }

func (c *offsetClock) Now() time.Time { return time.Now().Add(time.Duration(c.off.Load())) }

// Acquisition and renewals set the mark a TTL ahead of the holder's clock;
// a holder whose clock reads ahead of the server's, within the safety
// margin, still never puts a mark more than TTL + margin past the
// server's time.
func TestMarksStayWithinTTLAndMarginOfTheServersTime(t *testing.T) {
	t.Parallel()
	c := client(t, settled(t, ttl).Addr)
	var clock offsetClock
	clock.off.Store(int64(defaultMargin * 3 / 4))
	s := leased(t, c, machineid.WithRange(0, 0))
	holderclock.Set(s, clock.Now)
	_, err := s.MachineID(acquireCtx(t))
	require.NoError(t, err)
	for i := range 5 {
		mark, server, ok := markOf(t, c, 0)
		require.True(t, ok, "the ID should have a mark")
		assert.False(t, mark.After(server.Add(ttl+defaultMargin)), "round %d: mark %v is more than TTL + margin past the server's time %v", i, mark, server)
		assert.True(t, mark.After(server.Add(ttl/2)), "round %d: mark %v should be about a TTL ahead of %v", i, mark, server)
		time.Sleep(ttl / 3) // a renewal
	}
	assert.True(t, leaseOf(s).Held)
}

// A holder whose clock reads further ahead of the server's than the margin
// plus the skew allowance is refused, and no mark is written for it.
func TestClockTooFarAheadIsRefused(t *testing.T) {
	t.Parallel()
	c := client(t, redistest.Start(t).Addr)
	for _, tt := range []struct {
		name   string
		opts   []machineid.Option
		ahead  time.Duration
		allows string
	}{
		{"an hour, default margin", nil, time.Hour, "at most 200ms (safety margin 200ms + max clock skew 0s)"},
		{"past the skew allowed", []machineid.Option{mr.WithMaxClockSkew(time.Second)}, 2 * time.Second, "at most 1.2s (safety margin 200ms + max clock skew 1s)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var clock offsetClock
			clock.off.Store(int64(tt.ahead))
			p := "{" + tt.name + "}:"
			s := leased(t, c, append(tt.opts, mr.WithPrefix(p))...)
			holderclock.Set(s, clock.Now)
			_, err := s.MachineID(acquireCtx(t))
			require.Error(t, err)
			assert.ErrorContains(t, err, "machineid_redis: taking a machine ID: this process's clock is ")
			assert.ErrorContains(t, err, "ahead of the Redis server's; "+tt.allows)
			n, err := c.Exists(context.Background(), p+"MARKS").Result()
			require.NoError(t, err)
			assert.Zero(t, n, "a refused holder must write no mark")
		})
	}
}

// A holder whose clock jumps ahead mid-lease is refused at its next
// renewal: its mark stays within reach of the server's time, and the
// lease lapses with the clock as the cause.
func TestClockJumpingAheadLapsesTheLease(t *testing.T) {
	t.Parallel()
	c := client(t, settled(t, ttl).Addr)
	var clock offsetClock
	s := leased(t, c, machineid.WithRange(0, 0))
	holderclock.Set(s, clock.Now)
	_, err := s.MachineID(acquireCtx(t))
	require.NoError(t, err)
	clock.off.Store(int64(time.Hour))
	require.Eventually(t, func() bool { return !leaseOf(s).Held }, 10*ttl, ttl/20, "the lease should lapse")
	assert.ErrorContains(t, leaseOf(s).Err, "ahead of the Redis server's", "the lapse should name the clock")
	mark, server, ok := markOf(t, c, 0)
	require.True(t, ok)
	assert.False(t, mark.After(server.Add(ttl+defaultMargin)), "mark %v is more than TTL + margin past the server's time %v", mark, server)
}

// Release with a time past the mark raises the mark to it, so the mark is
// never below what the holder issued, but no further than TTL + margin
// past the server's time.
func TestReleaseRaisesTheMarkWithinBounds(t *testing.T) {
	t.Parallel()
	c := client(t, settled(t, ttl).Addr)
	a := leased(t, c, machineid.WithRange(0, 0))
	_, err := a.MachineID(acquireCtx(t))
	require.NoError(t, err)
	until := leaseOf(a).Until
	issued := until.Add(50 * time.Millisecond)
	require.NoError(t, a.Release(issued))
	mark, _, ok := markOf(t, c, 0)
	require.True(t, ok)
	assert.True(t, mark.Equal(issued), "mark %v; want the time issued, %v, above the confirmed mark %v", mark, issued, until)

	b := leased(t, c, machineid.WithRange(0, 0))
	_, err = b.MachineID(acquireCtx(t))
	require.NoError(t, err)
	require.NoError(t, b.Release(time.Now().Add(time.Hour)))
	mark, server, ok := markOf(t, c, 0)
	require.True(t, ok)
	assert.False(t, mark.After(server.Add(ttl+defaultMargin)), "mark %v is more than TTL + margin past the server's time %v", mark, server)
	assert.True(t, mark.After(server.Add(ttl/2)), "mark %v should have been raised toward the time issued", mark)
}
