package machineid_redis

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake/internal/redistest"
	"github.com/ringflake/ringflake/machineid"
)

// TestScriptsAreIdempotent runs each script twice with the same arguments,
// as a client retry would, and checks the second run changes nothing.
func TestScriptsAreIdempotent(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	const ttl = time.Second
	// The restart floor, the server's start + TTL + the claim's MaxOffset
	// (up to 2s late, from whole-second uptimes), is then a second past,
	// below the previous holder's mark set below: that mark is the one to
	// inherit.
	srv.WaitUptime(ttl + 4*time.Second)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()
	for m, mode := range []machineid.Option{nil, WithHostMapping("10.9.9.9")} {
		_, s, err := newStore(c, []machineid.Option{mode, machineid.WithRange(1, 1), machineid.WithTTL(ttl), WithPrefix("{idem" + string('0'+rune(m)) + "}:")})
		require.NoError(t, err)
		now := time.Now()
		prev := now.Add(-500 * time.Millisecond).Truncate(time.Millisecond)
		require.NoError(t, c.HSet(ctx, s.keys[0], "1", prev.UnixMilli()).Err(), "a previous holder's mark")
		claim := machineid.Claim{Token: "t", Lo: 1, Hi: 1, TTL: ttl, Margin: ttl / 5, Now: now, Until: now.Add(ttl), MaxOffset: time.Second}

		first, err := s.Take(ctx, claim)
		require.NoError(t, err)
		require.Equal(t, int64(1), first.ID)
		require.Equal(t, time.UnixMilli(prev.UnixMilli()), first.After, "After should be the previous holder's mark")
		again, err := s.Take(ctx, claim)
		require.NoError(t, err, "a resent take")
		assert.Equal(t, first.ID, again.ID, "mode %d: a resent take must return the same ID", m)
		assert.Equal(t, first.After, again.After, "mode %d: a resent take must not take its own mark for the previous holder's", m)
		if s.hostMode {
			assert.Equal(t, "1", c.Get(ctx, s.prefix+"MAX_ID").Val(), "a resent host take must not INCR again")
		}

		_, err = s.Renew(ctx, claim, 1)
		require.NoError(t, err)
		_, err = s.Renew(ctx, claim, 1)
		require.NoError(t, err, "a resent renewal")

		require.NoError(t, s.Release(ctx, claim, 1, time.Time{}))
		require.NoError(t, s.Release(ctx, claim, 1, time.Time{}), "a resent release")
		n, err := c.Exists(ctx, s.prefix+"LEASE:1").Result()
		require.NoError(t, err)
		assert.Zero(t, n, "mode %d: the lease should be gone after release", m)
		_, err = s.Renew(ctx, claim, 1)
		assert.ErrorIs(t, err, machineid.ErrLeaseLost, "mode %d: a renewal after the release", m)
	}
}
