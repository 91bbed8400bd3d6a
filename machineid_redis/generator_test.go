package machineid_redis_test

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/internal/redistest"
	"github.com/ringflake/ringflake/machineid"
)

// syncBuffer is a bytes.Buffer safe for the concurrent writes of a logger.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// A Redis that has just started may have lost the marks of holders still
// running, so every ID's mark is taken to be its start + TTL: the restart
// floor. ringflake.New waits it out, logging why, and returns a generator
// that issues at once.
func TestFreshRedisNewWaitsOutTheRestartFloor(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	svc := leased(t, client(t, srv.Addr))
	var logs syncBuffer
	g, err := ringflake.New(t.Context(), ringflake.WithMachineIDSource(svc), ringflake.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	require.NoError(t, err, "New should wait out the restart floor within its bound")
	defer g.Close()
	l := g.Lease()
	require.True(t, l.Held)
	require.False(t, l.After.IsZero(), "the restart floor should be reported as the lease's After")
	assert.True(t, time.Now().After(l.After), "New returned before the clock passed After = %v", l.After)
	id, err := g.NextID()
	require.NoError(t, err, "the first NextID after New should succeed")
	assert.Equal(t, l.ID, g.Layout().Decompose(id).Machine)
	assert.Contains(t, logs.String(), `msg="ringflake: waiting for the clock to pass the mark the machine ID's lease inherited"`, "New should say why it waits")
	assert.NotContains(t, logs.String(), "behind", "nothing should blame the clock")
	assert.NotContains(t, logs.String(), "stepped back", "nothing should blame the clock")
}

// With a deadline sooner than the restart floor, New fails at
// once with ErrMarkAhead and how far ahead the mark is, not with the clock
// being behind, and gives the lease back.
func TestFreshRedisShortDeadlineSaysHowFarAhead(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := client(t, srv.Addr)
	svc := leased(t, c, machineid.WithTTL(3*time.Second))
	start := time.Now()
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	_, err := ringflake.New(ctx, ringflake.WithMachineIDSource(svc))
	require.ErrorIs(t, err, ringflake.ErrMarkAhead)
	assert.Less(t, time.Since(start), time.Second, "New should fail as soon as it knows the wait is too long")
	assert.NotErrorIs(t, err, ringflake.ErrClockBehind)
	var ce *ringflake.ClockError
	require.ErrorAs(t, err, &ce)
	assert.Greater(t, ce.By, time.Second, "the mark should be most of a 3s TTL ahead")
	assert.LessOrEqual(t, ce.By, 3*time.Second+2*bound+100*time.Millisecond, "the mark should be at most the restart floor, TTL + 2·bound, ahead")
	assert.Contains(t, err.Error(), "passes it in "+ce.By.String(), "the message should say how far ahead the mark is")
	keys, err := c.Keys(context.Background(), prefix+"LEASE:*").Result()
	require.NoError(t, err)
	assert.Empty(t, keys, "the refused generator should give its lease back")
}

// One Holder serves one generator at a time: a second New with it is
// refused while the first generator lives, and after the first one's Close
// the Holder is released, and serves a new generator.
func TestOneHolderServesOneGenerator(t *testing.T) {
	t.Parallel()
	c := client(t, settled(t, floor).Addr)
	svc := leased(t, c)
	g, err := ringflake.New(t.Context(), ringflake.WithMachineIDSource(svc))
	require.NoError(t, err)
	_, err = ringflake.New(t.Context(), ringflake.WithMachineIDSource(svc))
	require.ErrorIs(t, err, ringflake.ErrInvalidConfig, "two generators on one Service would issue with one machine ID")
	_, err = g.NextID()
	require.NoError(t, err, "the refused New must not disturb the first generator")

	require.NoError(t, g.Close())
	assert.ErrorIs(t, leaseOf(svc).Err, machineid.ErrReleased, "the generator's Close should release the Holder")
	keys, err := c.Keys(context.Background(), prefix+"LEASE:*").Result()
	require.NoError(t, err)
	assert.Empty(t, keys, "a released Holder holds no lease")
	g2, err := ringflake.New(t.Context(), ringflake.WithMachineIDSource(svc))
	require.NoError(t, err, "a released Holder serves a new generator")
	require.NoError(t, g2.Close())
}

// A renewal that finds another owner's token on the ID reports the lease
// lost with that cause.
func TestLeaseTakenByAnotherOwnerSaysSo(t *testing.T) {
	t.Parallel()
	c := client(t, settled(t, floor).Addr)
	svc := leased(t, c, machineid.WithRange(0, 0))
	g, err := ringflake.New(t.Context(), ringflake.WithMachineIDSource(svc), ringflake.WithMaxWait(-1))
	require.NoError(t, err)
	defer g.Close()
	require.NoError(t, c.Set(context.Background(), prefix+"LEASE:0", "someone-else", 10*time.Second).Err())
	require.Eventually(t, func() bool { return !g.Lease().Held }, 10*ttl, ttl/20, "the next renewal should find the lease taken")
	assert.ErrorContains(t, g.Lease().Err, "renewing machine ID 0: machineid: lease lost: machine ID 0 was taken by another owner")
	assert.ErrorIs(t, g.Lease().Err, machineid.ErrLeaseLost)
	_, err = g.NextID()
	require.ErrorIs(t, err, ringflake.ErrLeaseLost)
	assert.ErrorContains(t, err, "was taken by another owner")
}
