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

// bound is the default bound on a holder's clock's offset from the
// server's (machineid.WithMaxClockOffset): no mark is set more than TTL +
// bound past the server's time.
const bound = 2 * time.Second

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
// a holder whose clock reads ahead of the server's, within the bound, still
// never puts a mark more than TTL + bound past the server's time.
func TestMarksStayWithinTTLAndBoundOfTheServersTime(t *testing.T) {
	t.Parallel()
	c := client(t, settled(t, floor).Addr)
	var clock offsetClock
	clock.off.Store(int64(bound * 3 / 4))
	s := leased(t, c, machineid.WithRange(0, 0))
	holderclock.Set(s, clock.Now)
	_, err := s.MachineID(acquireCtx(t))
	require.NoError(t, err)
	for i := range 5 {
		mark, server, ok := markOf(t, c, 0)
		require.True(t, ok, "the ID should have a mark")
		assert.False(t, mark.After(server.Add(ttl+bound)), "round %d: mark %v is more than TTL + bound past the server's time %v", i, mark, server)
		assert.True(t, mark.After(server.Add(ttl/2)), "round %d: mark %v should be about a TTL ahead of %v", i, mark, server)
		time.Sleep(ttl / 3) // a renewal
	}
	l := leaseOf(s)
	assert.True(t, l.Held)
	assert.InDelta(t, bound*3/4, l.Clock.By, float64(100*time.Millisecond), "the offset measured against the server's time: %v", l.Clock)
	assert.Equal(t, "Redis's clock (TIME)", l.Clock.Against)
}

// A holder whose clock reads further from the server's than the bound, ahead
// or behind, is refused at once, names the clock, the offset and the bound,
// frees the ID and writes no mark.
func TestClockOffIsRefused(t *testing.T) {
	t.Parallel()
	c := client(t, redistest.Start(t).Addr)
	for _, tt := range []struct {
		name string
		opts []machineid.Option
		off  time.Duration
		says string
	}{
		{"30s ahead", nil, 30 * time.Second, "s ahead of Redis's clock (TIME) (±"},
		{"30s behind", nil, -30 * time.Second, "s behind Redis's clock (TIME) (±"},
		{"an hour ahead", nil, time.Hour, "s ahead of Redis's clock (TIME) (±"},
		{"past a bound of 500ms", []machineid.Option{machineid.WithMaxClockOffset(500 * time.Millisecond)}, time.Second, "s ahead of Redis's clock (TIME) (±"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var clock offsetClock
			clock.off.Store(int64(tt.off))
			p := "{" + tt.name + "}:"
			s := leased(t, c, append(tt.opts, mr.WithPrefix(p))...)
			holderclock.Set(s, clock.Now)
			start := time.Now()
			_, err := s.MachineID(acquireCtx(t))
			took := time.Since(start)
			require.ErrorIs(t, err, machineid.ErrClockOffset)
			// At once: from the first take, not by retrying until the
			// context's end. (No bound in time: under a CPU hog a local
			// round trip took 432 ms.)
			assert.NotErrorIs(t, err, context.DeadlineExceeded, "the refusal comes at once")
			var ce *machineid.ClockOffsetError
			require.ErrorAs(t, err, &ce)
			// The true offset lies within the stated uncertainty (a
			// millisecond more for TIME's and the clock's readings), which
			// is half a round trip of the call, so within the time it took.
			assert.InDelta(t, tt.off, ce.By, float64(ce.Within+time.Millisecond), "the offset measured: %v", ce.ClockOffset)
			assert.Positive(t, ce.Within, "the measurement's uncertainty")
			assert.LessOrEqual(t, ce.Within, took, "the measurement's uncertainty, half a local round trip")
			assert.ErrorContains(t, err, "machineid: the clock is off the fleet's: this process's clock is ")
			assert.ErrorContains(t, err, tt.says)
			assert.ErrorContains(t, err, "is allowed (machineid.WithMaxClockOffset), so machine ID 0 was not taken")
			n, err := c.Exists(context.Background(), p+"MARKS", p+"LEASE:0").Result()
			require.NoError(t, err)
			assert.Zero(t, n, "a refused holder must write no mark, and free the ID")
		})
	}
	t.Run("within the bound", func(t *testing.T) {
		var clock offsetClock
		clock.off.Store(int64(-time.Second))
		s := leased(t, c, mr.WithPrefix("{within}:"))
		holderclock.Set(s, clock.Now)
		_, err := s.MachineID(acquireCtx(t))
		require.NoError(t, err, "a clock 1s behind, within the default bound of 2s")
	})
}

// A holder whose clock jumps an hour ahead mid-lease keeps its lease, as a
// clock that is off while an ID is held is reported, never a reason to
// stop; but its marks stay within TTL + bound of the server's time, so its
// generator cannot issue past them, and the offset is reported.
func TestClockJumpingAheadKeepsMarksWithinBounds(t *testing.T) {
	t.Parallel()
	c := client(t, settled(t, floor).Addr)
	var clock offsetClock
	s := leased(t, c, machineid.WithRange(0, 0))
	holderclock.Set(s, clock.Now)
	_, err := s.MachineID(acquireCtx(t))
	require.NoError(t, err)
	clock.off.Store(int64(time.Hour))
	require.Eventually(t, func() bool { return leaseOf(s).Clock.Past() }, 10*ttl, ttl/20, "a renewal should measure the clock an hour ahead")
	time.Sleep(ttl) // a few renewals
	l := leaseOf(s)
	assert.True(t, l.Held, "the lease is kept: %v", l.Err)
	assert.Contains(t, l.Clock.String(), "ahead of Redis's clock (TIME)")
	assert.InDelta(t, time.Hour, l.Clock.By, float64(l.Clock.Within), "the hour ahead lies within the measurement's uncertainty: %v", l.Clock)
	mark, server, ok := markOf(t, c, 0)
	require.True(t, ok)
	assert.False(t, mark.After(server.Add(ttl+bound)), "mark %v is more than TTL + bound past the server's time %v", mark, server)
	assert.False(t, l.Until.After(server.Add(ttl+bound)), "Until %v is more than TTL + bound past the server's time %v", l.Until, server)
}

// Release with a time past the mark raises the mark to it, so the mark is
// never below what the holder issued, but no further than TTL + bound
// past the server's time.
func TestReleaseRaisesTheMarkWithinBounds(t *testing.T) {
	t.Parallel()
	c := client(t, settled(t, floor).Addr)
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
	assert.False(t, mark.After(server.Add(ttl+bound)), "mark %v is more than TTL + bound past the server's time %v", mark, server)
	assert.True(t, mark.After(server.Add(ttl+bound/2)), "mark %v should have been raised toward the time issued", mark)
}
