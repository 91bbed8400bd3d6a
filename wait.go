package ringflake

import (
	"cmp"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringflake/ringflake/internal/mutant"
)

// This file is the path a call takes when its claim fails: why, how long to
// wait, and the wait itself. It reads top to bottom:
//
//	attempt   one call's progress, the state every function here takes
//	pause     plan a wait for the failed claim, check it against MaxWait, wait
//	tickWait  callers waiting for the same tick share one sleeper (rounds)
//	sleeps    the precise sleep to a tick, and the plain ones

// attempt is one call's progress: the reading its latest claim used, what
// came of the claim, and how long the call has waited. step fills it, and
// pause and the tick wait read it.
type attempt struct {
	r      reading       // the latest clock reading
	d      time.Duration // r's offset from the epoch
	ticks  int64         // the tick r shows
	behind bool          // ticks is more than a tick behind latest
	latest int64         // the latest tick the clock had shown when r was read
	st     *machineState // the machine state the claim was checked against
	cs     claimStatus   // why the claim failed
	t      int64         // the tick the claim would have issued from

	start     time.Time // set at the first wait; zero if the call never waited
	rechecked bool      // a step back was seen once and the clock read again
	reread    bool      // a long wait's stale reading sent the call round once
	lost      int       // tick waits this call came away from empty
	stalled   bool      // the clock did not show the tick after the last tick wait: sleep, do not yield
}

// Why a claim failed, beyond the ring's own statuses.
const (
	notHeld claimStatus = statusCount + iota // the machine ID's lease is not held
	stale                                    // the machine state changed under the claim: go round
)

// elapsed returns how long the call has waited so far.
func (a *attempt) elapsed() time.Duration {
	if a.start.IsZero() {
		return 0
	}
	return time.Since(a.start)
}

// pause waits for a failed claim's condition to clear, within the call's
// MaxWait, or returns the error that explains why it cannot. A wait for the
// next tick may come back with IDs already claimed for the caller in dst;
// pause returns how many.
func (g *Generator) pause(a *attempt, dst []ID) (int, error) {
	need, at, fail := g.plan(a)
	if a.cs == exhausted && at > a.ticks+1 {
		// A wait longer than a tick, judged from a reading that may be
		// old: a caller descheduled since it read the clock could sleep,
		// or fail, for ticks the clock has already passed. Read it again;
		// if it has moved on, go round again at once, else measure the
		// wait from the fresh reading (the error, if any, still describes
		// the reading the claim used). Once per call, so that a clock that
		// flips between two readings cannot keep the call going round
		// without ever waiting.
		_, d2 := g.read()
		t2, ok := g.layout.ticksAt(d2, g.maxTicks, g.recip)
		if ok && t2 > a.ticks && !a.reread {
			a.reread = true
			return 0, nil
		}
		if ok {
			need = max(g.span(at)-d2, 1)
		}
	}
	// A lease may come back, or its mark be raised, before the clock says
	// so: for those, wait what is left rather than fail at once.
	partial := a.cs == aboveCeil || a.cs == notHeld
	sleepFor, err := a.budget(g.maxWait, need, fail, partial)
	if err != nil {
		err.Clock = a.r.time()
		return 0, err
	}
	switch a.cs {
	case exhausted:
		n := g.ticks.wait(g, a, at, sleepFor, dst)
		if n == 0 {
			a.lost++
		}
		return n, nil
	case aboveCeil, notHeld:
		waitChange(a.st.changed, nil, sleepFor)
	default: // belowFloor: only time helps
		time.Sleep(mutant.Delay(sleepFor))
	}
	return 0, nil
}

// plan says how long to wait, by the generator's clock, before a claim that
// failed as a says can succeed, the tick to wait for if it is a tick, and
// the error to return if waiting is not allowed. The error is a value, so a
// wait that succeeds allocates nothing for it.
func (g *Generator) plan(a *attempt) (need time.Duration, at int64, fail ClockError) {
	switch a.cs {
	case exhausted:
		// Usually the next tick; later if the slots of the ticks after
		// this one are exhausted at later ticks (see nextServable), so
		// that callers do not wake every tick for nothing and a wait that
		// cannot end within MaxWait fails at once.
		at = g.ring.nextServable(a.ticks)
		need = g.span(at) - a.d
		if a.t > a.ticks {
			return need, at, ClockError{Err: ErrClockBehind, By: g.span(a.t) - a.d}
		}
		if a.behind {
			// The tick's spare sequence is used up while the clock is
			// behind: that is the clock's fault, not demand's.
			return need, at, ClockError{Err: ErrClockBehind, By: g.span(a.latest) - a.d}
		}
		return need, at, ClockError{Err: ErrSequenceExhausted}
	}
	// A lease's refusal: under the mark it inherited, not held (only a
	// report can help, and it closes st.changed: wait for it for as long as
	// the budget allows), or past the confirmed mark (a renewal raises it,
	// and a clock stepping back can bring the tick under it, which no report
	// announces: look at the clock again every leasePoll).
	fail, need = g.leaseFail(a.st, a.cs, a.d)
	return need, 0, fail
}

// budget returns how long to sleep for need, or the failure fail with
// Waited filled in if need does not fit in what is left of maxWait. With
// partial, a need larger than what is left is cut down instead. A need that
// is not positive can only come from a layout whose ticks overflow a
// Duration; it fails rather than spin.
func (a *attempt) budget(maxWait, need time.Duration, fail ClockError, partial bool) (time.Duration, *ClockError) {
	elapsed := a.elapsed()
	left := maxWait - elapsed
	if left <= 0 || need <= 0 || need > left && !partial {
		e := fail // a copy, so that only a failure allocates
		e.Waited = elapsed
		return 0, &e
	}
	if a.start.IsZero() {
		a.start = time.Now()
	}
	return min(need, left), nil
}

// leasePoll is how often a call waiting past a lease's confirmed mark reads
// the clock again.
func leasePoll(tick time.Duration) time.Duration {
	return min(max(tick, time.Millisecond), 10*time.Millisecond)
}

// tickWait lets every caller that waits for the same tick share one
// sleeper, and serves them before anyone else when the tick comes. The
// first caller (the leader) sleeps precisely until just before the tick,
// yields until the clock shows it, and then claims, with as few CASes as
// the tick allows, the IDs that it and every follower asked for; the
// followers wait for the leader to finish the claim, and each takes its
// own share.
//
// Why not let each caller sleep on its own: the precise sleep holds an OS
// thread (nanosleep), so a thousand callers waiting for a tick would hold a
// thousand threads, and the Go runtime stops the process at 10 000; and
// callers arriving fresh at the tick would use it up before the sleepers
// woke. BenchmarkOverload measures both designs; the one without rounds
// lives in the tests (SoloNextID), not here.
//
// Waiting allocates nothing in the steady state: rounds are reused once
// their last caller is done with them, and followers wait on the round's
// gate, a condition variable on which the leader broadcasts once its claim
// is written. The broadcast wakes every follower at once, as closing a
// channel would, and unlike a channel the gate is reused with its round. A
// read-write mutex held by the leader across its sleep would do as much,
// but a follower blocked on a mutex is not durably blocked to
// testing/synctest, whose virtual time would then stand still and never
// bring the tick. The mutexes are on the waiting path only, never on the
// path that issues.
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
// (ties in the order they joined), so that under demand above the layout's
// ceiling callers tend to be served in turn.
type round struct {
	mu     sync.Mutex   // protects open; the gate's lock
	gate   sync.Cond    // followers wait on it while open; its L is &mu
	open   bool         // the leader has not written ranges yet; set true before the round is published
	tick   int64        // the tick waited for; written by the leader before the round is published
	wakeAt time.Time    // when the leader wakes; likewise
	want   int          // IDs asked for so far; under tickWait.mu until the leader detaches the round
	users  atomic.Int32 // the leader and the followers not yet done with the round
	next   *round       // in tickWait.free

	ranges [4]claimRange // written by the leader while the round is open; read after
	n      int

	// joiners has one entry per caller, the leader first, appended under
	// tickWait.mu until the leader detaches the round; the leader then
	// writes each offset while the round is open. Its backing array is reused
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

// wait waits for tick, d from now by the caller's reading, and returns how
// many IDs it put in dst (at most len(dst)). A follower joins the round
// only if the leader wakes before the follower's own deadline, so MaxWait
// still bounds every caller; otherwise it sleeps on its own and takes
// nothing, and its next step claims for itself.
func (tw *tickWait) wait(g *Generator, a *attempt, tick int64, d time.Duration, dst []ID) int {
	deadline := a.start.Add(g.maxWait)
	tw.mu.Lock()
	if r := tw.cur; r != nil {
		if r.tick != tick || r.wakeAt.After(deadline) {
			tw.mu.Unlock()
			time.Sleep(mutant.Delay(d))
			return 0
		}
		idx := len(r.joiners)
		r.joiners = append(r.joiners, joiner{want: len(dst), lost: a.lost})
		r.want += len(dst)
		r.users.Add(1)
		tw.mu.Unlock()
		return tw.follow(g, r, idx, dst)
	}
	r := tw.free
	if r != nil {
		tw.free, r.next = r.next, nil
		tw.nfree--
	} else {
		r = newRound()
	}
	if a.stalled {
		d = max(d, early) // sleepUntil's plain sleep, so followers judge their deadline by it
	}
	r.tick, r.wakeAt, r.want, r.n = tick, time.Now().Add(d), len(dst), 0
	r.joiners = append(r.joiners[:0], joiner{want: len(dst), lost: a.lost})
	r.users.Store(1)
	r.open = true // the round's last users are gone: nobody reads it
	tw.cur = r
	tw.mu.Unlock()
	return tw.lead(g, a, r, tick, d, dst)
}

// lead is the leader's part of round r, from its sleep to its own share.
// While the round is open it calls the injected clock; should
// that panic (or call runtime.Goexit), the deferred abandon still lets the
// followers go, with nothing claimed for them, and the panic goes on to
// the leader's caller.
func (tw *tickWait) lead(g *Generator, a *attempt, r *round, tick int64, d time.Duration, dst []ID) int {
	holding := true // the round is still open
	defer func() {
		if holding {
			tw.abandon(r)
		}
	}()
	a.stalled = !g.sleepUntil(tick, d, !a.stalled)

	tw.mu.Lock()
	tw.cur = nil // no one joins from here on, so want and joiners are final
	want := r.want
	tw.mu.Unlock()
	g.claimRound(r, want)
	r.share(r.claimed(), want)
	holding = false
	r.close()
	n := r.take(g.layout, r.joiners[0].offset, dst)
	tw.release(r)
	return n
}

// claimRound claims up to want IDs for a round, with one claim per tick the
// claim spans, stopping at the first claim that cannot be made at once;
// whoever gets no share then tries again on its own.
func (g *Generator) claimRound(r *round, want int) {
	var a attempt
	for have := 0; have < want && r.n < len(r.ranges); {
		if g.look(&a) != nil {
			return
		}
		a.st = g.state.Load()
		c, cs := g.claim(&a, uint64(want-have))
		if cs != claimed {
			return
		}
		r.ranges[r.n] = c
		r.n++
		have += int(c.count)
	}
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
	tw.mu.Unlock()
	r.n = 0
	r.close()
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

// newRound returns a round, not yet open.
func newRound() *round {
	r := new(round)
	r.gate.L = &r.mu
	return r
}

// follow is a follower's wait for r's leader, on the gate, which the leader
// closes within the follower's deadline; then it takes its share.
func (tw *tickWait) follow(g *Generator, r *round, idx int, dst []ID) int {
	defer tw.release(r)
	r.mu.Lock()
	for r.open {
		r.gate.Wait()
	}
	r.mu.Unlock()
	return r.take(g.layout, r.joiners[idx].offset, dst)
}

// close ends the leader's part of r: the ranges and offsets written before
// it are seen by every follower that it wakes.
func (r *round) close() {
	r.mu.Lock()
	r.open = false
	r.mu.Unlock()
	r.gate.Broadcast()
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
// dst and returns how many. Call it only once the leader has closed the
// round.
func (r *round) take(l Layout, offset int, dst []ID) int {
	got := 0
	skip := uint64(offset)
	for _, c := range r.ranges[:r.n] {
		if skip >= c.count {
			skip -= c.count
			continue
		}
		got += c.put(l, skip, dst[got:])
		skip = 0
	}
	return got
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

// preciseUpTo is the longest wait made with the precise sleeper. The Go
// runtime's timers wake about 1 ms late when the process is otherwise idle,
// which would skip whole 1 ms ticks at saturation.
const preciseUpTo = 2 * time.Millisecond

// stillYields is how many times sleepUntil yields before it concludes from
// a monotonic clock that has not moved at all that time stands still; on a
// real clock a yield alone takes longer than its resolution.
const stillYields = 64

// sleepUntil waits for tick, d away by the clock: a precise sleep to just
// before it, then yielding the processor until the clock shows the tick,
// for at most 2×early past d in real time. It reports whether the clock
// shows the tick when it returns. If not (an injected clock that does not
// move, say), the caller passes yield false for its next tick wait, which
// is then a plain sleep of at least early, so that such a clock costs
// wake-ups, not a busy core; a wait after which the clock does show the
// tick lets the caller yield again.
func (g *Generator) sleepUntil(tick int64, d time.Duration, yield bool) bool {
	if d > preciseUpTo {
		time.Sleep(mutant.Delay(d))
		return true
	}
	if !yield {
		time.Sleep(mutant.Delay(max(d, early)))
		return g.showsTick(tick)
	}
	start := time.Now()
	if d > early {
		preciseSleep(d - early)
	}
	for yields := 0; time.Since(start) < d+2*early; yields++ {
		if g.showsTick(tick) {
			return true
		}
		if yields == stillYields && time.Since(start) == 0 {
			// Time stands still while this goroutine runs: a bubble of
			// testing/synctest, whose clock moves only while every
			// goroutine in it is blocked. Yielding would wait for ever.
			time.Sleep(mutant.Delay(d + 2*early))
			return g.showsTick(tick)
		}
		runtime.Gosched()
	}
	// Read once more: a wake-up late enough to end the window may well
	// have come after the tick.
	return g.showsTick(tick)
}

// showsTick reports whether the clock has reached tick, or left the
// layout's range, which the caller's next step reports.
func (g *Generator) showsTick(tick int64) bool {
	_, off := g.read()
	t, ok := g.layout.ticksAt(off, g.maxTicks, g.recip)
	return !ok || t >= tick
}

// waitChange waits up to d for changed or done to be closed; a nil channel
// never closes. It is for the rare wait on a lease, so its timer may
// allocate.
func waitChange(changed, done <-chan struct{}, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(mutant.Delay(d))
	defer t.Stop()
	select {
	case <-changed:
	case <-done:
	case <-t.C:
	}
}
