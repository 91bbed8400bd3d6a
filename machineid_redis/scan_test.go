package machineid_redis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake/internal/redistest"
	"github.com/ringflake/ringflake/machineid"
)

// scanTTL is the TTL of the claims below: long enough that a fresh server
// stays in its restart window (the floor ahead of the clock) for the whole
// test, on a loaded machine too.
const scanTTL = time.Minute

// claimAt is a claim on lo..hi by token, made now.
func claimAt(token string, lo, hi int64, ttl time.Duration) machineid.Claim {
	now := time.Now()
	return machineid.Claim{Token: token, Lo: lo, Hi: hi, TTL: ttl, Margin: ttl / 5, Now: now, Until: now.Add(ttl), MaxOffset: time.Second}
}

// commandsRun returns how many commands Redis ran while fn ran, scripts'
// commands included, from INFO commandstats: everything but the calls
// that carry a script (EVAL, EVALSHA), set up a connection (HELLO,
// CLIENT) or reset the counts (CONFIG). The server must serve nobody
// else meanwhile.
func commandsRun(t *testing.T, c *redis.Client, fn func()) int {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, c.ConfigResetStat(ctx).Err())
	fn()
	stats, err := c.Info(ctx, "commandstats").Result()
	require.NoError(t, err)
	n := 0
	for line := range strings.SplitSeq(stats, "\n") {
		name, rest, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "cmdstat_"), ":calls=")
		if !ok {
			continue
		}
		switch base, _, _ := strings.Cut(name, "|"); base {
		case "eval", "evalsha", "hello", "client", "config":
			continue
		}
		calls, _, _ := strings.Cut(rest, ",")
		k, err := strconv.Atoi(calls)
		require.NoError(t, err, "INFO commandstats line %q", line)
		n += k
	}
	return n
}

// takeCost bounds the commands of one take: per ID held before the first
// free one, one PTTL; then the commands whatever the range (the token's
// trace, the restart floor's INFO, TIME and start marker, the free ID's PTTL and HGET,
// the lease, owner hash and mark).
const takeCost = 20

// TestTakeCostFollowsTheIDsHeld counts the commands a take runs inside its
// script at 65,536 IDs, in the restart window of a fresh server, where
// every free ID's mark is the floor, ahead of the clock: they must follow
// the IDs held, not the range. A whole-range scan runs over 100,000.
func TestTakeCostFollowsTheIDsHeld(t *testing.T) {
	t.Parallel()
	c := redis.NewClient(&redis.Options{Addr: redistest.Start(t).Addr})
	t.Cleanup(func() { _ = c.Close() })
	const hi = 1<<16 - 1
	_, s, err := newStore(c, []machineid.Option{machineid.WithRange(0, hi), machineid.WithTTL(scanTTL)})
	require.NoError(t, err)
	ctx := context.Background()
	for held := range 10 {
		_, err := s.Take(ctx, claimAt(fmt.Sprintf("holder%d", held), 0, hi, scanTTL))
		require.NoError(t, err)
	}
	var g machineid.Grant
	n := commandsRun(t, c, func() {
		g, err = s.Take(ctx, claimAt("probe", 0, hi, scanTTL))
	})
	require.NoError(t, err)
	assert.Equal(t, int64(10), g.ID, "the lowest free ID")
	assert.True(t, g.After.After(time.Now()), "in the restart window the ID's mark is the floor, ahead of the clock: After = %v", g.After)
	assert.LessOrEqual(t, n, 10+takeCost, "commands run by a take with 10 IDs of 65,536 held, in the restart window")
}

// TestTakeCostWith200Holders has 200 holders take one after another in
// the restart window at 65,536 IDs, as a fleet does after a restart: the
// k-th take runs no more than k + takeCost commands.
func TestTakeCostWith200Holders(t *testing.T) {
	t.Parallel()
	c := redis.NewClient(&redis.Options{Addr: redistest.Start(t).Addr})
	t.Cleanup(func() { _ = c.Close() })
	const hi = 1<<16 - 1
	_, s, err := newStore(c, []machineid.Option{machineid.WithRange(0, hi), machineid.WithTTL(scanTTL)})
	require.NoError(t, err)
	ctx := context.Background()
	for k := range 200 {
		var g machineid.Grant
		n := commandsRun(t, c, func() {
			g, err = s.Take(ctx, claimAt(fmt.Sprintf("holder%d", k), 0, hi, scanTTL))
		})
		require.NoError(t, err)
		require.LessOrEqual(t, n, k+takeCost, "commands run by take %d, with %d IDs of 65,536 held", k, k)
		require.Equal(t, int64(k), g.ID, "the lowest free ID")
	}
}

// fullScan is the take's choice made the plain way, the reference the
// bounded scan must agree with: every ID of lo..hi looked at, the lowest
// free one whose mark (the restart floor included) is before now, failing
// that the lowest free one with the lowest mark. It takes nothing.
//
//	ARGV   prefix, lo, hi, now ms, restart ms
//	returns {id, mark}, or {-1} when every ID is held
var fullScan = redis.NewScript(luaTake + `
local prefix, marks = ARGV[1], KEYS[1]
local lo, hi, now = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local floor = restartFloor(prefix, tonumber(ARGV[5]))
local best, bestMark = nil, nil
for i = lo, hi do
  if redis.call('EXISTS', prefix .. 'LEASE:' .. i) == 0 then
    local m = markOf(marks, i, floor)
    if m < now then
      return {i, m}
    end
    if best == nil or m < bestMark then
      best, bestMark = i, m
    end
  end
end
if best == nil then
  return {-1}
end
return {best, bestMark}
`)

// TestTakeChoosesAsTheFullScan sets up random ranges of held IDs and free
// IDs with marks below the restart floor, between it and the clock, and
// past both (released after the restart), in the restart window and out
// of it, and checks each take chooses the ID, and inherits the mark, that
// a scan of the whole range chooses.
func TestTakeChoosesAsTheFullScan(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		uptime time.Duration // how long the server runs before the takes
		ttl    time.Duration
	}{
		{"restart window", 0, scanTTL},
		{"steady state", 4 * time.Second, time.Second}, // past the window: TTL + twice the MaxOffset
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t)
			if tt.uptime > 0 {
				srv.WaitUptime(tt.uptime)
			}
			c := redis.NewClient(&redis.Options{Addr: srv.Addr})
			t.Cleanup(func() { _ = c.Close() })
			ctx := context.Background()
			base := time.Now().UnixMilli()
			// Marks at least 5s from the floor and the clock, so that the
			// few ms between the reference's run and the take's change
			// neither's choice.
			marks := []int64{base - 3_600_000, base + 15_000, base + 120_000, base + 121_000, base + 122_000}
			rng := rand.New(rand.NewPCG(1, uint64(len(tt.name))))
			for trial := range 300 {
				n := 1 + rng.IntN(32)
				heldP := rng.Float64()
				p := fmt.Sprintf("{scan%d}:", trial)
				_, s, err := newStore(c, []machineid.Option{machineid.WithRange(0, int64(n-1)), machineid.WithTTL(tt.ttl), WithPrefix(p)})
				require.NoError(t, err)
				var state []string
				for i := range n {
					if rng.Float64() < heldP {
						require.NoError(t, c.Set(ctx, p+"LEASE:"+strconv.Itoa(i), "other", time.Minute).Err())
						state = append(state, fmt.Sprintf("%d held", i))
					}
					if k := rng.IntN(len(marks) + 1); k < len(marks) {
						require.NoError(t, c.HSet(ctx, p+"MARKS", strconv.Itoa(i), marks[k]).Err())
						state = append(state, fmt.Sprintf("%d mark base%+d", i, marks[k]-base))
					}
				}
				claim := claimAt("probe", 0, int64(n-1), tt.ttl)
				want, err := fullScan.Run(ctx, c, s.keys, p, 0, n-1, claim.Now.UnixMilli(), restartMs(claim)).Int64Slice()
				require.NoError(t, err)
				g, err := s.Take(ctx, claim)
				if want[0] < 0 {
					assert.ErrorIs(t, err, machineid.ErrExhausted, "trial %d, range 0..%d, %v", trial, n-1, state)
					continue
				}
				require.NoError(t, err, "trial %d, range 0..%d, %v", trial, n-1, state)
				assert.Equal(t, want[0], g.ID, "trial %d: the ID chosen, range 0..%d, %v", trial, n-1, state)
				after := int64(0) // no mark
				if !g.After.IsZero() {
					after = g.After.UnixMilli()
				}
				assert.InDelta(t, want[1], after, 2000, "trial %d: the mark inherited, range 0..%d, %v", trial, n-1, state)
			}
		})
	}
}
