package machineid_redis

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ringflake/ringflake/internal/mutant"
	"github.com/ringflake/ringflake/machineid"
)

// The store's past logic, restored for machineid_redis's replay test
// (replay_test.go) under the names of internal/leasesim's mutants of its
// simulated store, which the simulation's seeds catch: a replay of such a
// seed's trace against a real server must catch the real store so broken
// too. Only a build with the tag ringflake_mutant can switch one on
// (mutant.Set); in every other build mutant.On is the constant false, and
// the branches that test it, with the code in them, are compiled away.
const (
	// mutantWindowFloor: the restart floor holds only while the server has
	// run less than TTL + 2·bound, and is 0 after (issue 28's duplicate).
	mutantWindowFloor = "window-floor"
	// mutantShortFloor: the same with a window of TTL + bound, as before
	// the simulation's clocks at the bound's edges found it too short.
	mutantShortFloor = "short-floor"
	// mutantUncapped: no mark is capped at TTL + bound past Redis's time.
	mutantUncapped = "uncapped"
	// mutantRenewAcrossRestart: a renewal extends a lease of its token's
	// that another server process recorded (issue 36's first world).
	mutantRenewAcrossRestart = "renew-across-restart"
	// mutantOwnLeaseNoFloor: a take that finds a lease of its token's that
	// another server process recorded keeps it, with the after it
	// recorded, and no restart floor (the first world's partition-free
	// form).
	mutantOwnLeaseNoFloor = "own-lease-no-floor"
	// mutantOneBound: the restart floor is the start + TTL + bound, as
	// before issue 36's review: it does not cover Redis's clock stepping
	// back, within the bound, between a mark's write and the restart.
	mutantOneBound = "floor-one-bound"
)

// mutantScript returns sc, or under renew-across-restart (for renew) or
// own-lease-no-floor (for the acquire scripts) sc with the line that voids
// a lease another process recorded switched off.
func mutantScript(sc *redis.Script) *redis.Script {
	var src string
	switch {
	case mutant.On(mutantRenewAcrossRestart) && sc == renew:
		src = renewSrc
	case mutant.On(mutantOwnLeaseNoFloor) && sc == leaseAcquire:
		src = leaseAcquireSrc
	case mutant.On(mutantOwnLeaseNoFloor) && sc == hostAcquire:
		src = hostAcquireSrc
	default:
		return sc
	}
	const void = "~= runID() then -- void"
	if !strings.Contains(src, void) {
		panic("machineid_redis: no void check in the script to switch off")
	}
	return redis.NewScript(strings.ReplaceAll(src, void, "~= runID() and false then"))
}

// offFloor is the restart argument that puts the restart floor far below
// every mark (the scripts take the max of the two): no floor at all.
const offFloor = -1e15

// mutantRestart returns the acquire scripts' restart argument as a mutant
// that gives the restart floor a window has it: restart while the server
// has run less than the window, by its uptime read as the scripts read it
// (whole seconds less one), and offFloor after. Without such a mutant, or
// if the uptime cannot be read, restart as it is.
func (s *store) mutantRestart(ctx context.Context, c machineid.Claim, restart int64) int64 {
	if mutant.On(mutantOneBound) && c.MaxOffset >= 0 {
		return restart - c.MaxOffset.Milliseconds()
	}
	if !mutant.On(mutantWindowFloor) && !mutant.On(mutantShortFloor) {
		return restart
	}
	slack := c.Margin // the bound the scripts cap marks at: the floor's offset less the TTL, before issue 36's second bound
	if c.MaxOffset >= 0 {
		slack = c.MaxOffset
	}
	window := c.TTL + slack
	if mutant.On(mutantWindowFloor) {
		window += slack
	}
	info, err := s.client.Info(ctx, "server").Result()
	if err != nil {
		return restart
	}
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "uptime_in_seconds:"); ok {
			up, err := strconv.Atoi(v)
			if err == nil && time.Duration(max(up-1, 0))*time.Second >= window {
				return offFloor
			}
		}
	}
	return restart
}
