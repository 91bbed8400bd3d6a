package ringflake

import (
	"cmp"
	"context"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// waiter bounds one call's waiting by real elapsed time, measured with the
// monotonic clock so that neither an injected clock nor a wall-clock step can
// stretch it.
type waiter struct {
	start     time.Time // set at the first sleep; zero if the call never slept
	rechecked bool      // a step back was seen once and the clock read again
	reread    bool      // a long wait's stale reading sent the call round once
	lost      int       // tick waits (led, followed or slept alone) this call got nothing from
	stalled   bool      // the clock did not show the tick after the last tick wait: sleep, do not yield
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
		e := fail // a copy, so that only a failure allocates
		e.Waited = elapsed
		return 0, &e
	}
	if w.start.IsZero() {
		w.start = time.Now()
	}
	return min(need, left), nil
}

// tickWait lets every caller that waits for the same tick share one
// sleeper, and serves them before anyone else when the tick comes. The
// first caller (the leader) sleeps precisely until just before the tick,
// yields until the clock shows it, and then claims, with as few CASes as
// the tick allows, the IDs that it and every follower asked for; the
// followers wait for the leader to finish the claim, and each takes its
// own share. Without this, callers arriving fresh at the tick would use it
// up before the sleepers woke, and an unlucky caller could lose tick after
// tick until MaxWait ran out under a healthy clock.
//
// Waiting allocates nothing in the steady state: rounds are reused once
// their last caller is done with them, and followers wait on the round's
// gate, a read-write mutex the leader holds for writing until its claim is
// written; its unlock wakes every follower at once, as closing a channel
// would (a plain mutex would wake them one after another, each only once
// the one before it had run). Only a follower whose context can be done
// needs a channel to select on; the first such follower of a round makes
// one.
//
// The mutexes are on the waiting path only, never on the path that issues.
type tickWait struct {
	mu    sync.Mutex // protects cur, free and the fields of cur marked so
	cur   *round     // the round callers may join; nil while nobody sleeps
	free  *round     // finished rounds for reuse, linked through next
	nfree int
}

// maxFreeRounds bounds the rounds kept for reuse. Two or three are in use
// at once at most in practice: one asleep, and the last one's followers
// still taking their shares.
const maxFreeRounds = 4

// A round is one tick's wait: its leader and followers, and what the
// leader claimed for them. Shares are handed out by position: a caller's
// share is IDs [offset, offset+k) of the claimed ranges, in order, so no
// ID goes to two callers. When the claim cannot cover every caller, the
// callers that have come away empty from the most earlier rounds go first
// (ties in the order they joined), so under demand above the layout's
// ceiling a caller waits for its turn instead of losing every race to the
// callers already running.
type round struct {
	gate   sync.RWMutex  // held by the leader for writing from the round's start until ranges are written
	tick   int64         // the tick waited for; written by the leader before the round is published
	wakeAt time.Time     // when the leader wakes; likewise
	want   int           // IDs asked for so far; under tickWait.mu until the leader detaches the round
	done   chan struct{} // nil, or made by a follower that can be cancelled; under tickWait.mu until detached; closed with the gate's unlock
	users  atomic.Int32  // the leader and the followers not yet done with the round
	next   *round        // in tickWait.free

	ranges [4]claimRange // written by the leader while it holds gate; read after
	n      int

	// joiners has one entry per caller, the leader first, appended under
	// tickWait.mu until the leader detaches the round; the leader then
	// writes each offset while it holds gate. Its backing array is reused
	// with the round.
	joiners []joiner
	order   []int32 // the leader's scratch space for ordering joiners
}

// joiner is one caller's place in a round.
type joiner struct {
	want   int // IDs asked for
	lost   int // earlier rounds the caller came away from empty
	offset int // the caller's share starts here; written by the leader
}

// claimRange is one successful claim: count sequences from seq, in tick,
// with machine.
type claimRange struct {
	tick, machine int64
	seq, count    uint64
}

// claimed returns how many IDs r's claims hold.
func (r *round) claimed() int {
	n := uint64(0)
	for _, c := range r.ranges[:r.n] {
		n += c.count
	}
	return int(n)
}

// take copies up to len(dst) IDs of r's claims, starting at offset, into
// dst and returns how many. Call it only once the leader has let go of the
// gate.
func (r *round) take(l Layout, offset int, dst []ID) int {
	got := 0
	skip := uint64(offset)
	for _, c := range r.ranges[:r.n] {
		if skip >= c.count {
			skip -= c.count
			continue
		}
		for s := c.seq + skip; s < c.seq+c.count && got < len(dst); s++ {
			dst[got] = l.compose(c.tick, c.machine, int64(s))
			got++
		}
		skip = 0
	}
	return got
}

// wait waits for tick, d from now by the caller's reading, and returns how
// many IDs it put in dst (at most len(dst)), or ctx's error. A follower
// joins the round only if the leader wakes before the follower's own
// deadline, so MaxWait still bounds every caller; otherwise it sleeps on
// its own and takes nothing.
func (tw *tickWait) wait(ctx context.Context, g *Generator, w *waiter, tick int64, d time.Duration, dst []ID) (int, error) {
	deadline, lost := w.start.Add(g.maxWait), w.lost
	tw.mu.Lock()
	if r := tw.cur; r != nil {
		join := r.tick == tick && !r.wakeAt.After(deadline)
		if !join {
			tw.mu.Unlock()
			return 0, sleep(ctx, d)
		}
		idx := len(r.joiners)
		r.joiners = append(r.joiners, joiner{want: len(dst), lost: lost})
		r.want += len(dst)
		r.users.Add(1)
		if ctx.Done() != nil && r.done == nil {
			r.done = make(chan struct{})
		}
		done := r.done
		tw.mu.Unlock()
		return tw.follow(ctx, g, r, done, idx, dst)
	}
	r := tw.free
	if r != nil {
		tw.free, r.next = r.next, nil
		tw.nfree--
	} else {
		r = new(round)
	}
	if w.stalled {
		d = max(d, early) // sleepUntil's plain sleep, so followers judge their deadline by it
	}
	r.tick, r.wakeAt, r.want, r.done, r.n = tick, time.Now().Add(d), len(dst), nil, 0
	r.joiners = append(r.joiners[:0], joiner{want: len(dst), lost: lost})
	r.users.Store(1)
	r.gate.Lock()
	tw.cur = r
	tw.mu.Unlock()
	return tw.lead(ctx, g, w, r, tick, d, dst)
}

// lead is the leader's part of round r, from its sleep to its own share.
// Between the gate's Lock and Unlock it calls the injected clock; should
// that panic (or call runtime.Goexit), the deferred abandon still lets the
// followers go, with nothing claimed for them, and the panic goes on to
// the leader's caller.
func (tw *tickWait) lead(ctx context.Context, g *Generator, w *waiter, r *round, tick int64, d time.Duration, dst []ID) (int, error) {
	holding := true // the gate is still held
	defer func() {
		if holding {
			tw.abandon(r)
		}
	}()
	reached, err := g.sleepUntil(ctx, tick, d, !w.stalled)
	w.stalled = !reached

	tw.mu.Lock()
	tw.cur = nil // no one joins from here on, so want, done and joiners are final
	want, done := r.want, r.done
	tw.mu.Unlock()
	if err == nil {
		g.claimRound(r, want)
		r.share(r.claimed(), want)
	}
	if done != nil {
		close(done)
	}
	holding = false
	r.gate.Unlock()
	n := 0
	if err == nil {
		n = r.take(g.layout, r.joiners[0].offset, dst)
	}
	tw.release(r)
	return n, err
}

// abandon ends round r whose leader did not finish it: no one joins any
// more, and the followers are let go with an empty share, since the
// offsets may not have been written (an unwritten offset is 0 for every
// follower, which would hand them all the same IDs). The IDs the leader
// may already have claimed are dropped: space, not uniqueness.
func (tw *tickWait) abandon(r *round) {
	tw.mu.Lock()
	if tw.cur == r {
		tw.cur = nil
	}
	done := r.done
	tw.mu.Unlock()
	r.n = 0
	if done != nil {
		close(done)
	}
	r.gate.Unlock()
	tw.release(r)
}

// share sets each joiner's offset into the have IDs claimed for want. With
// enough for everyone, offsets follow the order of joining; otherwise the
// joiners that lost the most earlier rounds come first, and those left
// over get an offset past the end, an empty share.
func (r *round) share(have, want int) {
	r.order = r.order[:0]
	for i := range r.joiners {
		r.order = append(r.order, int32(i))
	}
	if have < want {
		slices.SortStableFunc(r.order, func(a, b int32) int {
			return cmp.Compare(r.joiners[b].lost, r.joiners[a].lost)
		})
	}
	offset := 0
	for _, i := range r.order {
		j := &r.joiners[i]
		j.offset = min(offset, have)
		offset += j.want
	}
}

// follow is a follower's wait for r's leader: on the gate, which the
// leader lets go of within the follower's deadline, or, for a caller whose
// ctx can be done, on done or ctx, whichever comes first.
func (tw *tickWait) follow(ctx context.Context, g *Generator, r *round, done chan struct{}, idx int, dst []ID) (int, error) {
	defer tw.release(r)
	if done == nil {
		r.gate.RLock()
		//lint:ignore SA2001 the empty critical section is the wait for the leader
		r.gate.RUnlock()
		return r.take(g.layout, r.joiners[idx].offset, dst), nil
	}
	select {
	case <-done:
		return r.take(g.layout, r.joiners[idx].offset, dst), nil
	case <-ctx.Done():
		return 0, ctx.Err() // the share reserved for this caller is dropped: space, not uniqueness
	}
}

// release ends one caller's use of r; the last one puts it up for reuse.
func (tw *tickWait) release(r *round) {
	if r.users.Add(-1) != 0 {
		return
	}
	tw.mu.Lock()
	if tw.nfree < maxFreeRounds {
		r.next = tw.free
		tw.free = r
		tw.nfree++
	}
	tw.mu.Unlock()
}

// early is how long before the tick the leader's sleep ends; nanosleep(2)
// wakes 60-120 µs late at the median on the machines measured (the kernel's
// 50 µs timer slack plus the wake-up), and the leader yields through
// whatever is left. Waking a little after the tick costs nothing while the
// tick has room; yielding longer would cost CPU on every tick.
const early = 100 * time.Microsecond

// sleepUntil is the leader's wait for tick, d away by the clock: a
// precise sleep to just before it, then yielding the processor until the
// clock shows the tick, for at most 2×early past d in real time. It
// reports whether the clock shows the tick when it returns. If not (an
// injected clock that does not move, say), the caller passes yield false
// for its next tick wait, which is then a plain sleep of at least early,
// so that such a clock costs wake-ups, not a busy core; a wait after which
// the clock does show the tick lets the caller yield again.
func (g *Generator) sleepUntil(ctx context.Context, tick int64, d time.Duration, yield bool) (bool, error) {
	if d > preciseUpTo {
		return true, sleep(ctx, d)
	}
	if !yield {
		if err := sleep(ctx, max(d, early)); err != nil {
			return true, err
		}
		return g.showsTick(tick), nil
	}
	start := time.Now()
	if err := ctx.Err(); err != nil {
		return true, err
	}
	if d > early {
		preciseSleep(d - early)
	}
	for time.Since(start) < d+2*early {
		if err := ctx.Err(); err != nil {
			return true, err
		}
		if g.showsTick(tick) {
			return true, nil
		}
		runtime.Gosched()
	}
	// Read once more: a wake-up late enough to end the window may well
	// have come after the tick.
	return g.showsTick(tick), ctx.Err()
}

// showsTick reports whether the clock has reached tick, or left the
// layout's range, which the caller's next step reports.
func (g *Generator) showsTick(tick int64) bool {
	_, off := g.read()
	t, ok := g.layout.ticksAt(off, g.maxTicks, g.recip)
	return !ok || t >= tick
}

// claimRound claims up to want IDs for a round, with one CAS per tick the
// claim spans, stopping at the first claim that cannot be made at once;
// whoever gets no share then tries again.
func (g *Generator) claimRound(r *round, want int) {
	have := uint64(0)
	for have < uint64(want) && r.n < len(r.ranges) {
		_, d := g.read()
		ticks, ok := g.layout.ticksAt(d, g.maxTicks, g.recip)
		if !ok {
			return
		}
		behind, _ := g.observe(ticks)
		st := g.state.Load()
		if st.kind != held {
			return
		}
		t, seq, got, cs := g.ring.claim(ticks, uint64(want)-have, st.b)
		if cs != claimed || g.state.Load() != st {
			return
		}
		if behind {
			g.stats.spare.Add(got)
		}
		r.ranges[r.n] = claimRange{tick: t, machine: st.machine, seq: seq, count: got}
		r.n++
		have += got
	}
}

// preciseUpTo is the longest wait a tickWait leader makes with the
// precise sleeper. The Go runtime's timers wake about 1 ms late when the
// process is otherwise idle, which would skip whole 1 ms ticks at
// saturation.
const preciseUpTo = 2 * time.Millisecond

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

// waitChange waits up to d for changed to be closed or ctx to be done, and
// returns ctx's error if it was. A nil changed never closes. It is for the
// rare wait on a lease, so its timer may allocate.
func waitChange(ctx context.Context, changed <-chan struct{}, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-changed:
	case <-t.C:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}
