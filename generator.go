package ringflake

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringflake/ringflake/machineid"
)

// Generator issues unique IDs. It is safe for concurrent use by any number
// of goroutines, and issuing takes no lock: one clock read, one atomic load
// of the machine state and one CAS on the current tick's ring slot.
//
// Make a Generator with [New]; the zero value returns [ErrClosed].
type Generator struct {
	ring     ring
	state    atomic.Pointer[machineState] // replaced by New, the lease watcher and Close; read by every issue
	clock    func() time.Time             // written once by New
	layout   Layout                       // written once by New
	maxTicks int64                        // layout.MaxTicks(), written once by New
	maxWait  time.Duration                // written once by New

	leaser    machineid.Leaser // nil unless the machine ID is leased
	stopWatch func()           // stops the lease watch; nil unless leased
	closeOnce sync.Once
	closeErr  error // written inside closeOnce
}

// machineState is an immutable snapshot of the machine ID and the ticks it
// may issue. Replacing the whole snapshot with one pointer store keeps the
// machine ID and its bounds consistent for a reader without a lock.
type machineState struct {
	machine int64
	b       bounds
	valid   bool // false while a lease is lost, and after Close
	closed  bool
}

// New returns a Generator configured by opts. It returns an error wrapping
// [ErrInvalidConfig] if the layout is invalid, the ring size is outside
// 1..[MaxRingSize], MaxWait is negative, the clock is nil, the machine ID is
// outside 0..Layout.MaxMachine(), or both WithMachineID and
// WithMachineIDService are given. With WithMachineIDService, it also
// returns the service's error, wrapped, if no machine ID was had within the
// acquire timeout.
func New(opts ...Option) (*Generator, error) {
	c := defaultConfig()
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	g := &Generator{
		ring:     newRing(c.ringSize, c.layout.SequenceBits),
		clock:    c.clock,
		layout:   c.layout,
		maxTicks: c.layout.MaxTicks(),
		maxWait:  c.maxWait,
	}
	if g.clock == nil {
		g.clock = time.Now
	}
	if c.service == nil {
		g.state.Store(g.fixed(c.machineID))
		return g, nil
	}
	if err := g.attach(c.service, c.acquireTimeout); err != nil {
		return nil, err
	}
	return g, nil
}

// fixed is the state of a machine ID that is not leased.
func (g *Generator) fixed(machine int64) *machineState {
	return &machineState{machine: machine, b: bounds{floor: -1, ceil: g.maxTicks}, valid: true}
}

// NextID returns a new ID. It may wait, in real time and at most MaxWait,
// for the next tick when the current one is used up, for a clock that is
// behind, or for a lease to be confirmed. It returns a [*ClockError]
// wrapping [ErrClockBeforeEpoch], [ErrTimeOverflow], [ErrClockBehind],
// [ErrSequenceExhausted] or [ErrLeaseLost], or [ErrClosed]. NextID is safe
// for concurrent use and does not allocate unless it fails.
func (g *Generator) NextID() (ID, error) {
	var id [1]ID
	_, err := g.fill(nil, id[:])
	return id[0], err
}

// NextIDContext is NextID with a context: a wait also ends when ctx is
// done, and then NextIDContext returns ctx.Err().
func (g *Generator) NextIDContext(ctx context.Context) (ID, error) {
	var id [1]ID
	_, err := g.fill(ctx, id[:])
	return id[0], err
}

// MachineID returns the machine ID the generator issues with now. With a
// leased ID it can change when the lease is lost and another ID is taken.
// It returns -1 if the generator is closed. MachineID is safe for
// concurrent use.
func (g *Generator) MachineID() int64 {
	if g == nil {
		return -1
	}
	st := g.state.Load()
	if st == nil || st.closed {
		return -1
	}
	return st.machine
}

// Layout returns the generator's layout, for decoding its IDs.
func (g *Generator) Layout() Layout {
	if g == nil {
		return Layout{}
	}
	return g.layout
}

// Close stops the generator: later calls return [ErrClosed]. If the machine
// ID is leased, Close releases the lease and returns the service's error.
// Close is safe for concurrent use and to call more than once.
func (g *Generator) Close() error {
	if g == nil || g.clock == nil {
		return nil
	}
	g.closeOnce.Do(func() {
		g.state.Store(&machineState{machine: -1, closed: true})
		if g.stopWatch != nil {
			g.stopWatch()
		}
		if g.leaser != nil {
			g.closeErr = g.leaser.Close()
		}
	})
	return g.closeErr
}

// fill issues len(dst) IDs, or as many as it can before the first failure,
// which it returns with the count. All IDs from one claim share one tick.
func (g *Generator) fill(ctx context.Context, dst []ID) (int, error) {
	if g == nil || g.clock == nil {
		return 0, ErrClosed
	}
	var w waiter
	n := 0
	for n < len(dst) {
		now := g.clock()
		ticks, d, ok := g.layout.ticksOf(now, g.maxTicks)
		if !ok {
			return n, g.rangeError(now, d)
		}
		st := g.state.Load()
		if !st.valid {
			if st.closed {
				return n, ErrClosed
			}
			if err := w.wait(ctx, g, leasePoll(g.layout.Tick), &ClockError{Err: ErrLeaseLost, Clock: now}, true); err != nil {
				return n, err
			}
			continue
		}
		t, seq, got, cs := g.ring.claim(ticks, uint64(len(dst)-n), st.b)
		if cs == claimed {
			// A lease change between the load and the CAS may have made
			// st.machine someone else's; the claimed sequences are then
			// dropped, which costs space but never uniqueness.
			if g.state.Load() != st {
				continue
			}
			for i := uint64(0); i < got; i++ {
				dst[n] = g.layout.compose(t, st.machine, int64(seq+i))
				n++
			}
			continue
		}
		need, cerr := g.plan(cs, now, ticks, d, t, st.b)
		if err := w.wait(ctx, g, need, cerr, cs == aboveCeil); err != nil {
			return n, err
		}
	}
	return n, nil
}

// plan says how long to wait, by the generator's clock, before a claim that
// failed with cs can succeed, and the error to return if waiting is not
// allowed. d is now's offset from the epoch and t the tick the claim tried.
func (g *Generator) plan(cs claimStatus, now time.Time, ticks int64, d time.Duration, t int64, b bounds) (time.Duration, *ClockError) {
	tick := g.layout.Tick
	switch cs {
	case exhausted:
		need := time.Duration(ticks+1)*tick - d
		if t > ticks {
			return need, &ClockError{Err: ErrClockBehind, Clock: now, By: time.Duration(t)*tick - d}
		}
		return need, &ClockError{Err: ErrSequenceExhausted, Clock: now}
	case belowFloor:
		need := time.Duration(b.floor+1)*tick - d
		return need, &ClockError{Err: ErrClockBehind, Clock: now, By: need}
	default: // aboveCeil: the lease has not been renewed far enough yet
		return leasePoll(tick), &ClockError{Err: ErrLeaseLost, Clock: now}
	}
}

// leasePoll is how often a call waiting for a lease looks again.
func leasePoll(tick time.Duration) time.Duration {
	return min(max(tick, time.Millisecond), 10*time.Millisecond)
}

// rangeError explains a clock reading outside the layout's range.
func (g *Generator) rangeError(now time.Time, d time.Duration) error {
	if d < 0 {
		return &ClockError{Err: ErrClockBeforeEpoch, Clock: now, By: -d}
	}
	return &ClockError{Err: ErrTimeOverflow, Clock: now, By: d}
}

// waiter bounds one call's waiting by real elapsed time, measured with the
// monotonic clock so that neither an injected clock nor a wall-clock step can
// stretch it.
type waiter struct {
	start time.Time // set at the first wait
}

// wait sleeps for need unless that would exceed the generator's MaxWait, in
// which case it returns fail with Waited filled in. With partial, it sleeps
// whatever budget is left instead of failing at once, for conditions that
// may clear before the clock says so (a lease renewal).
func (w *waiter) wait(ctx context.Context, g *Generator, need time.Duration, fail *ClockError, partial bool) error {
	var elapsed time.Duration
	if !w.start.IsZero() {
		elapsed = time.Since(w.start)
	}
	left := g.maxWait - elapsed
	if need > left && (!partial || left <= 0) {
		fail.Waited = elapsed
		return fail
	}
	if w.start.IsZero() {
		w.start = time.Now()
	}
	return sleep(ctx, max(min(need, left), 0))
}

// sleep pauses for d, or until ctx is done. A context that can never be done
// takes the allocation-free path.
func sleep(ctx context.Context, d time.Duration) error {
	if ctx == nil || ctx.Done() == nil {
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
