package machineid

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/ringflake/ringflake/internal/holderseed"
	"github.com/ringflake/ringflake/internal/mutant"
)

// jitterSource is the source of a Holder's jitter that internal/holderseed
// sets, for a simulation that replays its seeds.
type jitterSource = rand.Rand

func init() {
	holderseed.Register(func(src any, seed uint64) bool {
		h, ok := src.(*Holder)
		if ok {
			h.seeded.Store(rand.New(rand.NewPCG(seed, seed)))
		}
		return ok
	})
}

// awaitFree takes a lease once one frees, for MachineID, whose first take
// found every ID held (err): it tries again, backing off with jitter from
// TTL/10 to TTL/2, until deadline, less a little for the last call. The
// lease already reports the wait: the first failure set its Err, wrapping
// ErrExhausted. It returns nil once a take succeeds, the error of one that
// fails otherwise, or, at the deadline, the last ErrExhausted with how long
// it waited; a take that the deadline cuts short leaves that answer the
// last word, as the range was full when last heard of. The caller holds
// h.turn, which no other call needs meanwhile: the renewer has nothing to
// renew, and Release ends the wait.
func (h *Holder) awaitFree(ctx context.Context, s *session, deadline time.Time, err error) error {
	start := time.Now()
	step := h.cfg.ttl / 10
	reserve := min(h.cfg.callTimeout/2, 250*time.Millisecond) // for the last take
	for {
		wait := min(h.jitter(step), time.Until(deadline)-reserve)
		if wait <= 0 {
			return fmt.Errorf("%w; waited %v for one to free", err, time.Since(start).Round(time.Millisecond))
		}
		t := time.NewTimer(mutant.Delay(wait))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w; waited %v for one to free: %w", err, time.Since(start).Round(time.Millisecond), ctx.Err())
		case <-s.ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (waiting for a free machine ID)", ErrReleased)
		}
		step = min(2*step, h.cfg.ttl/2)
		full := err
		if err = h.obtain(ctx, s, time.Until(deadline)); !errors.Is(err, ErrExhausted) {
			if err != nil && (ctx.Err() != nil || !time.Now().Before(deadline)) {
				// The take's own timeout ends with ctx's deadline, and may
				// fire before ctx's own timer does.
				return fmt.Errorf("%w; waited %v for one to free; the last try: %w", full, time.Since(start).Round(time.Millisecond), err)
			}
			return err
		}
	}
}

// jitter returns a duration drawn evenly from d/2 to d, so that newcomers
// that found the range full together do not ask again together. The
// caller holds h.turn.
func (h *Holder) jitter(d time.Duration) time.Duration {
	switch r := h.seeded.Load(); {
	case d <= 1:
		return d
	case r != nil:
		return d/2 + time.Duration(r.Int64N(int64(d/2)))
	}
	return d/2 + rand.N(d/2)
}
