package machineid_redis

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake/internal/redistest"
)

// TestScriptsAreIdempotent runs each script twice with the same arguments,
// as a client retry would, and checks the second run changes nothing.
func TestScriptsAreIdempotent(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	const ttl = time.Second
	srv.WaitUptime(ttl) // no restart floor: the previous holder's mark below is the one to inherit
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()
	for m, mode := range []Option{nil, WithHostMapping("10.9.9.9")} {
		s, err := New(c, mode, WithRange(1, 1), WithTTL(ttl), WithPrefix("{idem"+string('0'+rune(m))+"}:"))
		require.NoError(t, err)
		require.NoError(t, c.HSet(ctx, s.keys[0], "1", "5000").Err(), "a previous holder's mark")

		require.NoError(t, s.acquire(ctx, time.Second))
		first := s.current()
		require.Equal(t, int64(1), first.ID)
		require.Equal(t, time.UnixMilli(5000), first.After, "After should be the previous holder's mark")
		require.NoError(t, s.acquire(ctx, time.Second), "a resent acquire")
		again := s.current()
		assert.Equal(t, first.ID, again.ID, "mode %d: a resent acquire must return the same ID", m)
		assert.Equal(t, first.After, again.After, "mode %d: a resent acquire must not take its own mark for the previous holder's", m)
		if s.cfg.hostMode {
			assert.Equal(t, "1", c.Get(ctx, s.cfg.prefix+"MAX_ID").Val(), "a resent host acquire must not INCR again")
		}

		require.NoError(t, s.renewLease(ctx))
		require.NoError(t, s.renewLease(ctx), "a resent renewal")
		assert.True(t, s.current().Held)

		require.NoError(t, s.Release(time.Time{}))
		_, err = s.eval(ctx, time.Second, release, s.cfg.prefix, s.token, first.ID, -1, ttl.Milliseconds(), s.slack().Milliseconds())
		require.NoError(t, err, "a resent release")
		n, err := c.Exists(ctx, s.cfg.prefix+"LEASE:1").Result()
		require.NoError(t, err)
		assert.Zero(t, n, "mode %d: the lease should be gone after release", m)
	}
}
