package ringflake_test

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/internal/fakeclock"
	"github.com/ringflake/ringflake/machineid"
)

// fakeLeaser is an in-process machineid.Leaser whose lease the test sets.
// It stands in for Redis only in these unit tests of the generator's side.
type fakeLeaser struct {
	block    bool // MachineID waits for ctx to end
	mu       sync.Mutex
	lease    machineid.Lease
	watchers map[int]func(machineid.Lease)
	n        int
	closes   int
	issued   time.Time // the last Release's argument
}

func newFakeLeaser(l machineid.Lease) *fakeLeaser {
	return &fakeLeaser{lease: l, watchers: map[int]func(machineid.Lease){}}
}

func (f *fakeLeaser) MachineID(ctx context.Context) (int64, error) {
	if f.block {
		<-ctx.Done()
		return 0, ctx.Err()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lease.ID, nil
}

func (f *fakeLeaser) Watch(fn func(machineid.Lease)) func() {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := f.n
	f.n++
	f.watchers[k] = fn
	fn(f.lease)
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.watchers, k)
	}
}

func (f *fakeLeaser) Release(issued time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closes++
	f.issued = issued
	return nil
}

// set changes the lease and tells the watchers, as a renewal would.
func (f *fakeLeaser) set(l machineid.Lease) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lease = l
	for _, fn := range f.watchers {
		fn(l)
	}
}

func (f *fakeLeaser) closeCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.closes
}

var leaseStart = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func leasedGenerator(t *testing.T, f *fakeLeaser, clock *fakeclock.Clock) *ringflake.Generator {
	t.Helper()
	g, err := ringflake.New(ringflake.WithMachineIDSource(f), ringflake.WithClock(clock.Now), ringflake.WithMaxWait(0))
	require.NoError(t, err)
	t.Cleanup(func() { _ = g.Close() })
	return g
}

func TestLeaseBounds(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	tests := []struct {
		name    string
		lease   machineid.Lease
		at      time.Time
		wantErr error // nil: issues
	}{
		{"no bounds", machineid.Lease{ID: 3, Held: true}, leaseStart, nil},
		{"not held", machineid.Lease{ID: 3}, leaseStart, ringflake.ErrLeaseLost},
		{"at the previous holder's mark", machineid.Lease{ID: 3, Held: true, After: leaseStart}, leaseStart, ringflake.ErrMarkAhead},
		{"before the previous holder's mark", machineid.Lease{ID: 3, Held: true, After: leaseStart.Add(5 * time.Second)}, leaseStart, ringflake.ErrMarkAhead},
		{"just past the mark", machineid.Lease{ID: 3, Held: true, After: leaseStart}, leaseStart.Add(ms), nil},
		{"at the confirmed mark", machineid.Lease{ID: 3, Held: true, Until: leaseStart}, leaseStart, nil},
		{"past the confirmed mark", machineid.Lease{ID: 3, Held: true, Until: leaseStart}, leaseStart.Add(ms), ringflake.ErrLeaseLost},
		{"inside both", machineid.Lease{ID: 3, Held: true, After: leaseStart.Add(-ms), Until: leaseStart.Add(ms)}, leaseStart, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeLeaser(machineid.Lease{ID: 3, Held: true})
			g := leasedGenerator(t, f, fakeclock.New(tt.at))
			f.set(tt.lease) // a report after New, as a renewal or a new lease makes
			id, err := g.NextID()
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr, "NextID() = %d", id)
				var ce *ringflake.ClockError
				assert.ErrorAs(t, err, &ce, "a lease refusal should be a *ClockError")
				return
			}
			require.NoError(t, err)
			p := g.Layout().Decompose(id)
			assert.Equal(t, int64(3), p.Machine)
			assert.Equal(t, tt.at, p.Time, "the ID should carry the clock's time")
		})
	}
}

func TestLeaseLostAndRegained(t *testing.T) {
	t.Parallel()
	f := newFakeLeaser(machineid.Lease{ID: 7, Held: true})
	clock := fakeclock.New(leaseStart)
	g := leasedGenerator(t, f, clock)
	_, err := g.NextID()
	require.NoError(t, err)

	f.set(machineid.Lease{ID: 7})
	_, err = g.NextID()
	require.ErrorIs(t, err, ringflake.ErrLeaseLost, "no ID may be issued on a lost lease")

	// Regained as another ID, whose previous holder used up to now.
	f.set(machineid.Lease{ID: 9, Held: true, After: clock.Now()})
	assert.Equal(t, int64(9), g.Lease().ID)
	_, err = g.NextID()
	require.ErrorIs(t, err, ringflake.ErrMarkAhead, "the new ID's previous holder's time must not be reused")
	assert.NotErrorIs(t, err, ringflake.ErrClockBehind, "the clock is not at fault")
	clock.Add(time.Millisecond)
	id, err := g.NextID()
	require.NoError(t, err)
	assert.Equal(t, int64(9), g.Layout().Decompose(id).Machine)
}

func TestLeaseAcquireFailures(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	tests := []struct {
		name    string
		f       *fakeLeaser
		opts    []ringflake.Option
		wantErr error
	}{
		{"ID above the layout's range", newFakeLeaser(machineid.Lease{ID: 5000, Held: true}), nil, ringflake.ErrInvalidConfig},
		{"negative ID", newFakeLeaser(machineid.Lease{ID: -1, Held: true}), nil, ringflake.ErrInvalidConfig},
		{"service blocks past the timeout", &fakeLeaser{block: true}, []ringflake.Option{ringflake.WithAcquireTimeout(10 * time.Millisecond)}, context.DeadlineExceeded},
		{"service fails", &fakeLeaser{}, nil, boom},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			svc := machineid.Leaser(tt.f)
			if tt.wantErr == boom {
				svc = failingLeaser{tt.f, boom}
			}
			_, err := ringflake.New(append([]ringflake.Option{ringflake.WithMachineIDSource(svc)}, tt.opts...)...)
			require.ErrorIs(t, err, tt.wantErr)
			require.Eventually(t, func() bool { return tt.f.closeCount() == 1 }, 5*time.Second, time.Millisecond,
				"a failed New should release the leaser it could not use")
		})
	}
}

// failingLeaser is a fakeLeaser whose MachineID fails.
type failingLeaser struct {
	*fakeLeaser
	err error
}

func (f failingLeaser) MachineID(context.Context) (int64, error) { return 0, f.err }

func TestGeneratorCloseReleasesTheLease(t *testing.T) {
	t.Parallel()
	f := newFakeLeaser(machineid.Lease{ID: 1, Held: true})
	g, err := ringflake.New(ringflake.WithMachineIDSource(f))
	require.NoError(t, err)
	require.NoError(t, g.Close())
	require.NoError(t, g.Close())
	assert.Equal(t, 1, f.closeCount(), "Close should release the lease exactly once")
	assert.Equal(t, g.Layout().Epoch.Add(-time.Nanosecond), f.issued, "nothing issued: Release is told the instant before the epoch")
	f.set(machineid.Lease{ID: 1, Held: true}) // a late report must not reopen it
	_, err = g.NextID()
	assert.ErrorIs(t, err, ringflake.ErrClosed)
	assert.Equal(t, int64(-1), g.Lease().ID)
}

func TestPlainSourceGivesAFixedID(t *testing.T) {
	t.Parallel()
	src := machineid.FromFunc(1023, func(context.Context) (int64, error) { return 12, nil })
	g, err := ringflake.New(ringflake.WithMachineIDSource(src))
	require.NoError(t, err)
	defer g.Close()
	id, err := g.NextID()
	require.NoError(t, err)
	assert.Equal(t, int64(12), g.Layout().Decompose(id).Machine)
}

// countingClock is a fake clock that counts its reads.
type countingClock struct {
	*fakeclock.Clock
	reads atomic.Int64
}

func (c *countingClock) Now() time.Time {
	c.reads.Add(1)
	return c.Clock.Now()
}

// waitingOnLostLease starts a call that waits for a lost lease, with a
// MaxWait that outlasts the test, lets it wait for 100 ms, and returns the
// generator, a channel with the call's result, and the clock reads the call
// made while it waited.
func waitingOnLostLease(t *testing.T, f *fakeLeaser) (*ringflake.Generator, chan error, int64) {
	t.Helper()
	clock := &countingClock{Clock: fakeclock.New(leaseStart)}
	g, err := ringflake.New(ringflake.WithMachineIDSource(f), ringflake.WithClock(clock.Now), ringflake.WithMaxWait(time.Hour))
	require.NoError(t, err)
	t.Cleanup(func() { _ = g.Close() })
	f.set(machineid.Lease{ID: 7})
	done := make(chan error, 1)
	go func() {
		_, err := g.NextID()
		done <- err
	}()
	time.Sleep(100 * time.Millisecond)
	return g, done, clock.reads.Load()
}

func result(t *testing.T, done chan error, after string) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatalf("the call waiting for the lease did not return after %s", after)
		return nil
	}
}

// TestLeaseWaitWakesOnReport checks that a call waiting for a lost lease
// sleeps until the lease changes instead of polling, and wakes when it does.
func TestLeaseWaitWakesOnReport(t *testing.T) {
	t.Parallel()
	f := newFakeLeaser(machineid.Lease{ID: 7, Held: true})
	g, done, reads := waitingOnLostLease(t, f)
	// One read, and one more to rule out a descheduled caller, are all a
	// waiting call needs; polling every tick would have made about 100.
	assert.LessOrEqual(t, reads, int64(3), "clock reads while waiting 100 ms for a lost lease")
	f.set(machineid.Lease{ID: 7, Held: true})
	require.NoError(t, result(t, done, "it was regained"))
	assert.Equal(t, int64(7), g.Lease().ID)
}

// TestCloseWakesLeaseWait checks that Close ends a wait for a lost lease.
func TestCloseWakesLeaseWait(t *testing.T) {
	t.Parallel()
	g, done, _ := waitingOnLostLease(t, newFakeLeaser(machineid.Lease{ID: 7, Held: true}))
	require.NoError(t, g.Close())
	require.ErrorIs(t, result(t, done, "Close"), ringflake.ErrClosed)
}

// A lease report with an ID the layout cannot hold stops issuing, and the
// error says why.
func TestLeaseOutsideTheLayoutIsNotHeld(t *testing.T) {
	t.Parallel()
	f := newFakeLeaser(machineid.Lease{ID: 3, Held: true})
	g := leasedGenerator(t, f, fakeclock.New(leaseStart))
	f.set(machineid.Lease{ID: 4096, Held: true})
	_, err := g.NextID()
	require.ErrorIs(t, err, ringflake.ErrLeaseLost)
	assert.Contains(t, err.Error(), "machine ID 4096, outside the layout's 0..1023")
	assert.False(t, g.Lease().Held == true && g.Lease().ID == 4096 && err == nil)
}

// stuckLeaser is a fakeLeaser whose MachineID ignores its context and
// answers only once the test lets it.
type stuckLeaser struct {
	*fakeLeaser
	answer chan struct{}
}

func (s stuckLeaser) MachineID(context.Context) (int64, error) {
	<-s.answer
	return s.fakeLeaser.MachineID(context.Background())
}

// A service that ignores its context cannot hold New past the acquire
// timeout, and a lease it hands over after New gave up is released, not
// leaked.
func TestAcquireIgnoringContextIsBounded(t *testing.T) {
	t.Parallel()
	s := stuckLeaser{newFakeLeaser(machineid.Lease{ID: 4, Held: true}), make(chan struct{})}
	done := make(chan error, 1)
	go func() {
		_, err := ringflake.New(ringflake.WithMachineIDSource(s), ringflake.WithAcquireTimeout(20*time.Millisecond))
		done <- err
	}()
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Contains(t, err.Error(), "no answer within the acquire timeout (20ms)")
	case <-time.After(5 * time.Second):
		close(s.answer)
		t.Fatal("New still waiting 5 s into a 20ms acquire timeout")
	}
	assert.Zero(t, s.closeCount(), "nothing to release while the call is unanswered")
	close(s.answer) // the late answer: a lease New no longer wants
	require.Eventually(t, func() bool { return s.closeCount() == 1 }, 5*time.Second, time.Millisecond,
		"the lease handed over after New gave up should be released")
}

// panickyLeaser is a fakeLeaser whose MachineID panics, or calls
// runtime.Goexit, the way a test helper's t.Fatal would.
type panickyLeaser struct {
	*fakeLeaser
	goexit bool
}

func (p panickyLeaser) MachineID(context.Context) (int64, error) {
	if p.goexit {
		runtime.Goexit()
	}
	panic("service failed")
}

// A service that panics makes New fail with an error naming the panic's
// value, after its leaser is closed; one that exits its goroutine makes
// New fail. Neither leaves the lease behind or New waiting. A panic whose
// value is an error is wrapped, so errors.Is finds it.
func TestAcquireServicePanicsAndGoexits(t *testing.T) {
	t.Parallel()
	p := panickyLeaser{fakeLeaser: newFakeLeaser(machineid.Lease{ID: 2, Held: true})}
	_, pv, err := newRecovering(ringflake.WithMachineIDSource(p))
	require.Nil(t, pv, "New should turn the service's panic into an error")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "panicked: service failed", "the error should carry the panic's value")
	assert.Equal(t, 1, p.closeCount(), "the leaser is closed")

	boom := errors.New("boom")
	src := machineid.FromFunc(1023, func(context.Context) (int64, error) { panic(boom) })
	_, pv, err = newRecovering(ringflake.WithMachineIDSource(src))
	require.Nil(t, pv, "New should turn the source's panic into an error")
	assert.ErrorIs(t, err, boom, "a panic with an error is wrapped")

	x := panickyLeaser{fakeLeaser: newFakeLeaser(machineid.Lease{ID: 2, Held: true}), goexit: true}
	_, err = ringflake.New(ringflake.WithMachineIDSource(x))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "runtime.Goexit")
	assert.Equal(t, 1, x.closeCount(), "the leaser is closed")
}

// onceBrokenLeaser is a fakeLeaser whose MachineID panics on its first
// call and answers after that.
type onceBrokenLeaser struct {
	*fakeLeaser
	calls *atomic.Int32
}

func (o onceBrokenLeaser) MachineID(ctx context.Context) (int64, error) {
	if o.calls.Add(1) == 1 {
		panic("store client not ready")
	}
	return o.fakeLeaser.MachineID(ctx)
}

// newRecovering calls New and recovers a panic from it, so that a test can
// fail on a panic rather than crash.
func newRecovering(opts ...ringflake.Option) (g *ringflake.Generator, panicked any, err error) {
	defer func() { panicked = recover() }()
	g, err = ringflake.New(opts...)
	return g, nil, err
}

// A New whose source panics gives up its claim on the Leaser, whichever
// way it ends: the next New with the same Leaser is not refused as in use.
// The panic comes back as New's error, naming the source and the value.
func TestPanickingSourceFreesItsLeaser(t *testing.T) {
	t.Parallel()
	o := onceBrokenLeaser{newFakeLeaser(machineid.Lease{ID: 2, Held: true}), new(atomic.Int32)}
	_, p, err := newRecovering(ringflake.WithMachineIDSource(o))
	assert.Nil(t, p, "New should not panic when its source does")
	if assert.Error(t, err, "New with a source that panicked") {
		assert.Contains(t, err.Error(), "ringflake_test.onceBrokenLeaser) panicked: store client not ready", "the error names the source and the panic")
	}
	assert.Equal(t, 1, o.closeCount(), "the Leaser is released: it may hold what it took before it panicked")

	g, p, err := newRecovering(ringflake.WithMachineIDSource(o))
	require.Nil(t, p, "the second New should not panic")
	require.NoError(t, err, "the Leaser's claim should have been undone when the first New failed")
	defer g.Close()
	id, err := g.NextID()
	require.NoError(t, err)
	assert.Equal(t, int64(2), g.Layout().Decompose(id).Machine)
}

// watchPanicsLeaser is a fakeLeaser whose Watch panics on its first call.
type watchPanicsLeaser struct {
	*fakeLeaser
	calls *atomic.Int32
}

func (w watchPanicsLeaser) Watch(fn func(machineid.Lease)) func() {
	if w.calls.Add(1) == 1 {
		panic("watch failed")
	}
	return w.fakeLeaser.Watch(fn)
}

// Watch is called on New's own goroutine, so its panic goes on to New's
// caller as a direct call's would; the claim on the Leaser is undone all
// the same.
func TestPanickingWatchFreesItsLeaser(t *testing.T) {
	t.Parallel()
	w := watchPanicsLeaser{newFakeLeaser(machineid.Lease{ID: 4, Held: true}), new(atomic.Int32)}
	_, p, _ := newRecovering(ringflake.WithMachineIDSource(w))
	require.Equal(t, "watch failed", p, "Watch's panic reaches New's caller")
	g, p, err := newRecovering(ringflake.WithMachineIDSource(w))
	require.Nil(t, p)
	require.NoError(t, err, "the Leaser's claim should have been undone when the first New panicked")
	require.NoError(t, g.Close())
}

// slowLeaser answers after a delay, honouring nothing.
type slowLeaser struct {
	*fakeLeaser
	delay time.Duration
}

func (s slowLeaser) MachineID(context.Context) (int64, error) {
	time.Sleep(s.delay)
	return s.fakeLeaser.MachineID(context.Background())
}

// An acquire timeout meant as "as long as it takes" must not overflow into
// no wait at all.
func TestHugeAcquireTimeout(t *testing.T) {
	t.Parallel()
	s := slowLeaser{newFakeLeaser(machineid.Lease{ID: 6, Held: true}), 20 * time.Millisecond}
	g, err := ringflake.New(ringflake.WithMachineIDSource(s), ringflake.WithAcquireTimeout(math.MaxInt64))
	require.NoError(t, err)
	defer g.Close()
	assert.Equal(t, int64(6), g.Lease().ID)
}

// One Leaser holds one machine ID: two live generators on it would issue
// the same IDs. The second New is refused, and the first's Close frees it.
func TestLeaserServesOneGenerator(t *testing.T) {
	t.Parallel()
	f := newFakeLeaser(machineid.Lease{ID: 5, Held: true})
	g, err := ringflake.New(ringflake.WithMachineIDSource(f))
	require.NoError(t, err)
	_, err = ringflake.New(ringflake.WithMachineIDSource(f))
	require.ErrorIs(t, err, ringflake.ErrInvalidConfig)
	assert.Contains(t, err.Error(), "already serves a live generator")
	assert.Zero(t, f.closeCount(), "the refused New must not release the first generator's lease")
	_, err = g.NextID()
	require.NoError(t, err, "the first generator keeps issuing")
	require.NoError(t, g.Close())
	g2, err := ringflake.New(ringflake.WithMachineIDSource(f))
	require.NoError(t, err, "after Close the Leaser is free (this fake can lease again; a real one may refuse)")
	require.NoError(t, g2.Close())
}

// A Leaser that cannot be a map key is refused with a clear error, not a
// panic.
type sliceLeaser []*fakeLeaser

func (s sliceLeaser) MachineID(ctx context.Context) (int64, error) { return s[0].MachineID(ctx) }
func (s sliceLeaser) Watch(fn func(machineid.Lease)) func()        { return s[0].Watch(fn) }
func (s sliceLeaser) Release(issued time.Time) error               { return s[0].Release(issued) }

func TestIncomparableLeaserIsRefused(t *testing.T) {
	t.Parallel()
	_, err := ringflake.New(ringflake.WithMachineIDSource(sliceLeaser{newFakeLeaser(machineid.Lease{ID: 1, Held: true})}))
	require.ErrorIs(t, err, ringflake.ErrInvalidConfig)
	assert.Contains(t, err.Error(), "must be comparable")
}

// New waits out a mark the lease inherited, so that the generator it
// returns can issue at once; the wait is logged with how long, until when
// and the mark.
func TestNewWaitsOutTheInheritedMark(t *testing.T) {
	t.Parallel()
	var rec records
	mark := time.Now().Add(150 * time.Millisecond)
	f := newFakeLeaser(machineid.Lease{ID: 5, Held: true, After: mark})
	g, err := ringflake.New(ringflake.WithMachineIDSource(f), ringflake.WithMaxWait(0), ringflake.WithLogger(slog.New(&rec)))
	require.NoError(t, err)
	defer g.Close()
	assert.False(t, time.Now().Before(mark), "New returned before the clock passed the mark")
	id, err := g.NextID()
	require.NoError(t, err, "the first call after New issues, even with MaxWait 0")
	assert.True(t, g.Layout().Decompose(id).Time.After(mark), "the ID's time is past the inherited mark")
	got := rec.get(markWaitMsg)
	require.Len(t, got, 1)
	until := mark.Truncate(time.Millisecond).Add(time.Millisecond) // the first tick past the mark
	assert.True(t, until.Equal(got[0]["until"].(time.Time)), "until = %v; want %v", got[0]["until"], until)
	assert.True(t, mark.Equal(got[0]["mark"].(time.Time)), "mark = %v; want %v", got[0]["mark"], mark)
	assert.Positive(t, got[0]["wait"])
	assert.LessOrEqual(t, got[0]["wait"], 150*time.Millisecond+time.Millisecond, "the wait is at most the mark's lead and a tick")
	assert.Equal(t, int64(5), got[0]["machine"])
}

// markTickLayout has 200 ms ticks, so that a clock can stand inside a
// mark's tick but past the mark itself.
var markTickLayout = ringflake.Layout{TimeBits: 41, MachineBits: 10, SequenceBits: 12, Epoch: ringflake.DefaultLayout().Epoch, Tick: 200 * time.Millisecond}

// newPastTheMark calls New on a lease whose inherited mark is 50 ms into
// leaseStart's 200 ms tick, with a clock that stands at 100 ms into it
// until New has looked at it twice (its check of the layout, and its first
// look at the mark), and then moves to the next tick. It returns the
// generator and how often New read the clock.
func newPastTheMark(t *testing.T, opts ...ringflake.Option) (*ringflake.Generator, int64) {
	t.Helper()
	return newPastTheMarkWhen(t, nil, opts...)
}

// newPastTheMarkWhen is newPastTheMark, with the clock moved on once moveOn
// reports true instead (nil: after two reads).
func newPastTheMarkWhen(t *testing.T, moveOn func() bool, opts ...ringflake.Option) (*ringflake.Generator, int64) {
	t.Helper()
	tick := markTickLayout.Tick
	require.Zero(t, leaseStart.Sub(markTickLayout.Epoch)%tick, "leaseStart should begin a tick")
	clock := &countingClock{Clock: fakeclock.New(leaseStart.Add(tick / 2))}
	f := newFakeLeaser(machineid.Lease{ID: 5, Held: true, After: leaseStart.Add(tick / 4)})
	if moveOn == nil {
		moveOn = func() bool { return clock.reads.Load() >= 2 }
	}
	go func() {
		for !moveOn() {
			time.Sleep(time.Millisecond)
		}
		clock.Set(leaseStart.Add(tick))
	}()
	g, err := ringflake.New(append([]ringflake.Option{ringflake.WithMachineIDSource(f), ringflake.WithLayout(markTickLayout),
		ringflake.WithClock(clock.Now), ringflake.WithMaxWait(0), ringflake.WithAcquireTimeout(time.Minute)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = g.Close() })
	return g, clock.reads.Load()
}

// New waits for an inherited mark by sleeping until the tick after it, as
// NextID does, not by reading the clock over and over: with a 200 ms tick
// and the clock inside the mark's tick but past the mark itself, the wait
// once came out as zero or less, and New spun on the clock for the rest of
// the tick. A New that sleeps reads the clock a few times.
func TestNewSleepsThroughTheMarksTick(t *testing.T) {
	t.Parallel()
	g, reads := newPastTheMark(t)
	assert.LessOrEqual(t, reads, int64(10), "clock reads in New: one per sleep, not a spin")
	id, err := g.NextID()
	require.NoError(t, err, "the first call after New issues, even with MaxWait 0")
	assert.Equal(t, leaseStart.Add(markTickLayout.Tick), g.Layout().Decompose(id).Time, "the ID's tick is the first after the mark's")
}

// The record of New's wait for the mark says how long New expects to wait,
// until when (the start of the first tick past the mark), and the mark.
func TestNewLogsTheWaitItMakes(t *testing.T) {
	t.Parallel()
	var rec records
	// The clock moves on once New has logged its wait: with a logger, New
	// reads the clock more often before it looks at the mark.
	newPastTheMarkWhen(t, func() bool { return len(rec.get(markWaitMsg)) > 0 }, ringflake.WithLogger(slog.New(&rec)))
	got := rec.get(markWaitMsg)
	require.Len(t, got, 1, "one record of the wait")
	assert.Equal(t, 100*time.Millisecond, got[0]["wait"], "the clock is 100 ms short of the next tick")
	assert.Equal(t, leaseStart.Add(markTickLayout.Tick), got[0]["until"], "the wait ends at the first tick past the mark")
	assert.Equal(t, leaseStart.Add(markTickLayout.Tick/4), got[0]["mark"], "the mark the lease inherited")
	assert.Equal(t, int64(5), got[0]["machine"])
}

// markWaitMsg is the message of New's record of a wait for the mark.
const markWaitMsg = "ringflake: waiting for the clock to pass the mark the machine ID's lease inherited"

// A process whose clock is 60 s behind the mark of its lease, with the
// default 30 s acquire timeout, fails at once. It does not log a wait it
// will not make, and its error says how far ahead the mark is, what the
// acquire timeout is and what to do. The root package names no store's
// restart floor: a lease inherits a mark, and each store says what its
// marks cover.
func TestNewFailsAtOnceWithoutAnnouncingAWait(t *testing.T) {
	t.Parallel()
	var rec records
	clock := fakeclock.New(leaseStart)
	f := newFakeLeaser(machineid.Lease{ID: 5, Held: true, After: leaseStart.Add(time.Minute)})
	_, err := ringflake.New(ringflake.WithMachineIDSource(f), ringflake.WithClock(clock.Now), ringflake.WithLogger(slog.New(&rec)))
	require.ErrorIs(t, err, ringflake.ErrMarkAhead)
	var ce *ringflake.ClockError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, time.Minute+time.Millisecond, ce.By, "the clock is a minute and a tick short of the first tick past the mark")
	assert.Zero(t, ce.Waited, "New did not wait")
	assert.Equal(t, leaseStart, ce.Clock)
	msg := err.Error()
	assert.Contains(t, msg, "1m0.001s", "the error says how far ahead the mark is")
	assert.Contains(t, msg, "acquire timeout (30s)", "the error names the acquire timeout")
	assert.Contains(t, msg, "WithAcquireTimeout", "the error says what to raise")
	assert.Contains(t, msg, "clock", "the error says the clock may be at fault")
	assert.NotContains(t, msg, "restart", "the root package claims no store's restart floor")
	rec.mu.Lock()
	defer rec.mu.Unlock()
	assert.Empty(t, rec.list, "nothing logged: New did not wait")
	assert.Equal(t, 1, f.closeCount(), "the lease is released")
}

// A mark further ahead than the acquire timeout fails New at once with
// ErrMarkAhead and the figures, and releases the lease.
func TestNewFailsOnAMarkBeyondTheTimeout(t *testing.T) {
	t.Parallel()
	f := newFakeLeaser(machineid.Lease{ID: 5, Held: true, After: time.Now().Add(time.Hour)})
	start := time.Now()
	_, err := ringflake.New(ringflake.WithMachineIDSource(f), ringflake.WithAcquireTimeout(time.Minute))
	require.ErrorIs(t, err, ringflake.ErrMarkAhead)
	assert.NotErrorIs(t, err, ringflake.ErrClockBehind)
	var ce *ringflake.ClockError
	require.ErrorAs(t, err, &ce)
	assert.InDelta(t, time.Hour, ce.By, float64(time.Minute), "how far ahead the mark is")
	assert.Contains(t, err.Error(), "the mark the machine ID's lease inherited is ahead of the clock")
	assert.Less(t, time.Since(start), 30*time.Second, "New need not wait for a mark it cannot reach")
	assert.Equal(t, 1, f.closeCount(), "the lease is released")

	// And with a frozen injected clock, New gives up when the timeout ends.
	frozen := fakeclock.New(leaseStart)
	f2 := newFakeLeaser(machineid.Lease{ID: 5, Held: true, After: leaseStart.Add(time.Millisecond)})
	_, err = ringflake.New(ringflake.WithMachineIDSource(f2), ringflake.WithClock(frozen.Now), ringflake.WithAcquireTimeout(50*time.Millisecond))
	require.ErrorIs(t, err, ringflake.ErrMarkAhead)
}

// A lease that is not held when New starts following it fails New once
// the acquire timeout ends, with the lease's cause.
func TestNewFailsOnALeaseNeverHeld(t *testing.T) {
	t.Parallel()
	cause := errors.New("store unreachable")
	f := newFakeLeaser(machineid.Lease{ID: 5, Err: cause})
	_, err := ringflake.New(ringflake.WithMachineIDSource(f), ringflake.WithAcquireTimeout(30*time.Millisecond))
	require.ErrorIs(t, err, ringflake.ErrLeaseLost)
	assert.ErrorIs(t, err, cause)
	assert.Equal(t, 1, f.closeCount(), "the lease is released")
}

// A lease confirmed no further than the clock (a new holder whose mark was
// confirmed only as far as the one it inherited) is waited on in New until
// a renewal raises it, so that the first call issues rather than fail with
// ErrLeaseLost.
func TestNewWaitsForTheConfirmedMarkToPassTheClock(t *testing.T) {
	t.Parallel()
	f := newFakeLeaser(machineid.Lease{ID: 5, Held: true, Until: time.Now().Add(-time.Second)})
	go func() {
		time.Sleep(50 * time.Millisecond)
		f.set(machineid.Lease{ID: 5, Held: true, Until: time.Now().Add(time.Hour)}) // the renewal
	}()
	g, err := ringflake.New(ringflake.WithMachineIDSource(f), ringflake.WithMaxWait(0))
	require.NoError(t, err)
	defer g.Close()
	_, err = g.NextID()
	require.NoError(t, err, "the first call after New issues")

	never := newFakeLeaser(machineid.Lease{ID: 6, Held: true, Until: time.Now().Add(-time.Second)})
	_, err = ringflake.New(ringflake.WithMachineIDSource(never), ringflake.WithAcquireTimeout(30*time.Millisecond))
	require.ErrorIs(t, err, ringflake.ErrLeaseLost, "a mark never raised past the clock fails New")
}
