package nemesis

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake/internal/clockshift"
)

// A storeClock is a server's wall clock offset (internal/clockshift).
type storeClock = clockshift.Clock

// TestClockShiftMovesRedisTime checks the shim on a real redis-server: its
// TIME moves with the offset file at once (the offset read back lies within
// the call's round trip), and a jump expires a key early, as a jump of the
// server's clock does.
func TestClockShiftMovesRedisTime(t *testing.T) {
	w := &world{t: t, dir: t.TempDir()}
	s := startRedis(w).(*redisServer)
	c := redis.NewClient(&redis.Options{Addr: s.upstream()})
	defer c.Close()
	ctx := context.Background()
	offset := func() (lo, hi time.Duration) {
		t0 := time.Now()
		now, err := c.Time(ctx).Result()
		t1 := time.Now()
		require.NoError(t, err)
		return now.Sub(t1) - time.Microsecond, now.Sub(t0) + time.Microsecond
	}
	lo, hi := offset()
	assert.True(t, lo <= 0 && 0 <= hi, "no shift: TIME is %v to %v off the local clock", lo, hi)
	require.NoError(t, c.Set(ctx, "k", "v", 3*time.Second).Err())
	require.NoError(t, s.clock.Set(1500*time.Millisecond))
	lo, hi = offset()
	assert.True(t, lo <= 1500*time.Millisecond && 1500*time.Millisecond <= hi, "shifted 1.5s: TIME is %v to %v off the local clock", lo, hi)
	require.NoError(t, s.clock.Set(5*time.Second))
	assert.ErrorIs(t, c.Get(ctx, "k").Err(), redis.Nil, "a key set to expire in 3 s outlived a 5 s jump of the server's clock")
}

// TestClockShiftMovesMySQLTime checks the shim on a real MariaDB, whose
// UTC_TIMESTAMP judges the leases' expiry: it moves with the offset file,
// as the harness's "MySQL's clock steps" fault needs.
func TestClockShiftMovesMySQLTime(t *testing.T) {
	w := &world{t: t, dir: t.TempDir()}
	s := startMySQL(w).(*mysqlServer)
	db, err := sql.Open("mysql", s.target(s.upstream()))
	require.NoError(t, err)
	defer db.Close()
	offset := func() (lo, hi time.Duration) {
		var us int64
		t0 := time.Now()
		require.NoError(t, db.QueryRow("SELECT TIMESTAMPDIFF(MICROSECOND, '1970-01-01', UTC_TIMESTAMP(6))").Scan(&us))
		t1 := time.Now()
		now := time.UnixMicro(us)
		return now.Sub(t1) - time.Millisecond, now.Sub(t0) + time.Millisecond
	}
	lo, hi := offset()
	assert.True(t, lo <= 0 && 0 <= hi, "no shift: UTC_TIMESTAMP is %v to %v off the local clock", lo, hi)
	require.NoError(t, s.clock.Set(time.Hour))
	lo, hi = offset()
	assert.True(t, lo <= time.Hour && time.Hour <= hi, "shifted 1h: UTC_TIMESTAMP is %v to %v off the local clock", lo, hi)
}
