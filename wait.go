package ringflake

import (
	"context"
	"sync"
	"time"
)

// waiter bounds one call's waiting by real elapsed time, measured with the
// monotonic clock so that neither an injected clock nor a wall-clock step can
// stretch it.
type waiter struct {
	start     time.Time // set at the first sleep; zero if the call never slept
	rechecked bool      // a step back was seen once and the clock read again
}

// elapsed returns how long the call has waited so far.
func (w *waiter) elapsed() time.Duration {
	if w.start.IsZero() {
		return 0
	}
	return time.Since(w.start)
}

// budget returns how long to sleep for need, or the failure fail with
// Waited filled in if need does not fit in what is left of MaxWait. With
// partial, a need larger than what is left is cut down instead, for
// conditions that may clear before the clock says so (a lease renewal). A
// need that is not positive can only come from a layout whose ticks
// overflow a Duration; it fails rather than spin.
func (w *waiter) budget(g *Generator, need time.Duration, fail ClockError, partial bool) (time.Duration, *ClockError) {
	elapsed := w.elapsed()
	left := g.maxWait - elapsed
	if left <= 0 || need <= 0 || need > left && !partial {
		fail.Waited = elapsed
		return 0, &fail
	}
	if w.start.IsZero() {
		w.start = time.Now()
	}
	return min(need, left), nil
}

// tickWait lets every caller that waits for the same tick share one sleeper.
// The first caller (the leader) sleeps precisely until the tick; the others
// (followers) block on a channel the leader closes when it wakes. At
// saturation this wakes a crowd on time while only one thread sleeps,
// instead of every caller spinning on the clock or oversleeping on a coarse
// timer.
//
// The mutex is on the waiting path only, never on the path that issues.
type tickWait struct {
	mu     sync.Mutex    // protects the fields below
	tick   int64         // the tick the leader waits for
	wakeAt time.Time     // when the leader will wake, by the monotonic clock
	done   chan struct{} // closed when the leader wakes; nil while nobody sleeps
}

// wait sleeps until tick (d from now by the caller's reading), or until
// ctx is done. A follower joins the leader only if the leader wakes before
// the follower's own deadline, so MaxWait still bounds every caller.
func (tw *tickWait) wait(ctx context.Context, tick int64, d time.Duration, deadline time.Time) error {
	tw.mu.Lock()
	if tw.done != nil {
		ch, join := tw.done, tw.tick == tick && !tw.wakeAt.After(deadline)
		tw.mu.Unlock()
		if !join {
			return sleep(ctx, d)
		}
		return waitChan(ctx, ch)
	}
	ch := make(chan struct{})
	tw.done, tw.tick, tw.wakeAt = ch, tick, time.Now().Add(d)
	tw.mu.Unlock()

	err := leaderSleep(ctx, d)

	tw.mu.Lock()
	close(ch)
	tw.done = nil
	tw.mu.Unlock()
	return err
}

func waitChan(ctx context.Context, ch <-chan struct{}) error {
	if ctx.Done() == nil {
		<-ch
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// preciseUpTo is the longest sleep a tickWait leader takes with the
// precise sleeper. The Go runtime's timers wake about 1 ms late when the
// process is otherwise idle, which would skip whole 1 ms ticks at
// saturation.
const preciseUpTo = 2 * time.Millisecond

// leaderSleep is the tickWait leader's sleep: precise for short waits (a
// context's end is then noticed when it returns, within 2 ms), the
// runtime's timers otherwise. Only one caller at a time sleeps this way, so
// it holds at most one thread in nanosleep(2).
func leaderSleep(ctx context.Context, d time.Duration) error {
	if d > preciseUpTo {
		return sleep(ctx, d)
	}
	preciseSleep(d)
	return ctx.Err()
}

// sleep pauses for d on the runtime's timers, or until ctx is done. These
// park the goroutine without holding a thread, so any number of callers can
// wait at once; they may wake about a millisecond late, which MaxWait's
// documentation allows for. A context that can never be done takes the
// allocation-free path.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	if ctx.Done() == nil {
		time.Sleep(d)
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
