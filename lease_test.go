package ringflake_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
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

	releaseErr  error  // what Release returns
	onRelease   func() // if not nil, called by Release under mu
	onMachineID func() // if not nil, called once, by the first MachineID
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
	if f.onMachineID != nil {
		f.onMachineID()
		f.onMachineID = nil
	}
	return f.lease.ID, nil
}

func (f *fakeLeaser) Watch(fn func(machineid.Lease)) func() {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := f.n
	f.n++
	if f.watchers == nil {
		f.watchers = map[int]func(machineid.Lease){}
	}
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
	if f.onRelease != nil {
		f.onRelease()
	}
	return f.releaseErr
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

// within returns t's context with a deadline d from now.
func within(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

func leasedGenerator(t *testing.T, f *fakeLeaser, clock *fakeclock.Clock) *ringflake.Generator {
	t.Helper()
	g, err := ringflake.New(t.Context(), ringflake.WithMachineIDSource(f), ringflake.WithClock(clock.Now), ringflake.WithMaxWait(-1))
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
		wait    time.Duration // New's deadline; 0 for none
		wantErr error
	}{
		{"ID above the layout's range", newFakeLeaser(machineid.Lease{ID: 5000, Held: true}), 0, ringflake.ErrInvalidConfig},
		{"negative ID", newFakeLeaser(machineid.Lease{ID: -1, Held: true}), 0, ringflake.ErrInvalidConfig},
		{"service blocks past the deadline", &fakeLeaser{block: true}, 10 * time.Millisecond, context.DeadlineExceeded},
		{"service fails", &fakeLeaser{}, 0, boom},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			svc := machineid.Leaser(tt.f)
			if tt.wantErr == boom {
				svc = failingLeaser{tt.f, boom}
			}
			ctx := t.Context()
			if tt.wait > 0 {
				ctx = within(t, tt.wait)
			}
			_, err := ringflake.New(ctx, ringflake.WithMachineIDSource(svc))
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
	g, err := ringflake.New(t.Context(), ringflake.WithMachineIDSource(f))
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
	g, err := ringflake.New(t.Context(), ringflake.WithMachineIDSource(src))
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
	g, err := ringflake.New(t.Context(), ringflake.WithMachineIDSource(f), ringflake.WithClock(clock.Now), ringflake.WithMaxWait(time.Hour))
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
// error says why. Lease, and so /readyz and ringflake_machine_id, report
// the ID as it is and not held: never as another machine's real ID, which
// the worker wrapper of a datacenter split once reported (issue 25, defect
// 5), nor as held, which Lease once reported for an ID above the layout's.
func TestLeaseOutsideTheLayoutIsNotHeld(t *testing.T) {
	t.Parallel()
	f := newFakeLeaser(machineid.Lease{ID: 3, Held: true})
	g := leasedGenerator(t, f, fakeclock.New(leaseStart))
	f.set(machineid.Lease{ID: 4096, Held: true})
	_, err := g.NextID()
	require.ErrorIs(t, err, ringflake.ErrLeaseLost)
	assert.Contains(t, err.Error(), "machine ID 4096, outside the layout's 0..1023")
	l := g.Lease()
	assert.Equal(t, int64(4096), l.ID, "the lease's own ID")
	assert.False(t, l.Held, "an ID outside the layout is not held")
	assert.ErrorIs(t, l.Err, ringflake.ErrLeaseLost, "Lease().Err says why")
	assert.ErrorIs(t, g.Ready(), ringflake.ErrLeaseLost, "Ready says why")
	assert.Contains(t, g.Ready().Error(), "outside the layout's 0..1023")

	// Under a datacenter split alike: the lease is of a whole machine ID.
	split := ringflake.DefaultLayout()
	split.DatacenterBits = 5
	lo, hi, err := split.Workers(3)
	require.NoError(t, err)
	f2 := newFakeLeaser(machineid.Lease{ID: lo, Held: true})
	g2, err := ringflake.New(t.Context(), ringflake.WithMachineIDSource(f2), ringflake.WithLayout(split), ringflake.WithClock(fakeclock.New(leaseStart).Now))
	require.NoError(t, err)
	defer g2.Close()
	f2.set(machineid.Lease{ID: 2000, Held: true})
	assert.Equal(t, machineid.Lease{ID: 2000, Held: false, Err: g2.Lease().Err}, g2.Lease())
	assert.NotContains(t, []int64{lo, hi}, g2.Lease().ID, "never another machine's real ID")
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

// A service that ignores its context cannot hold New past its context's
// deadline, and a lease it hands over after New gave up is released, not
// leaked.
func TestAcquireIgnoringContextIsBounded(t *testing.T) {
	t.Parallel()
	s := stuckLeaser{newFakeLeaser(machineid.Lease{ID: 4, Held: true}), make(chan struct{})}
	done := make(chan error, 1)
	go func() {
		_, err := ringflake.New(within(t, 20*time.Millisecond), ringflake.WithMachineIDSource(s))
		done <- err
	}()
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Contains(t, err.Error(), "ringflake: getting the machine ID: no answer from the machine ID source (ringflake_test.stuckLeaser) within the deadline of New's context: ")
	case <-time.After(5 * time.Second):
		close(s.answer)
		t.Fatal("New still waiting 5 s into a 20ms deadline")
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
	_, err = ringflake.New(t.Context(), ringflake.WithMachineIDSource(x))
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
	g, err = ringflake.New(context.Background(), opts...)
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

// Watch's panic goes on to New's caller as a direct call's would, though
// Watch runs on a goroutine of its own (so that a slow watcher cannot hold
// New past its context); the claim on the Leaser is undone all the same.
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

// A deadline meant as "as long as it takes" must not overflow into no wait
// at all.
func TestFarDeadline(t *testing.T) {
	t.Parallel()
	s := slowLeaser{newFakeLeaser(machineid.Lease{ID: 6, Held: true}), 20 * time.Millisecond}
	ctx, cancel := context.WithDeadline(t.Context(), time.Unix(1<<62, 0))
	defer cancel()
	g, err := ringflake.New(ctx, ringflake.WithMachineIDSource(s))
	require.NoError(t, err)
	defer g.Close()
	assert.Equal(t, int64(6), g.Lease().ID)
}

// One Leaser holds one machine ID: two live generators on it would issue
// the same IDs. The second New is refused, and the first's Close frees it.
func TestLeaserServesOneGenerator(t *testing.T) {
	t.Parallel()
	f := newFakeLeaser(machineid.Lease{ID: 5, Held: true})
	g, err := ringflake.New(t.Context(), ringflake.WithMachineIDSource(f))
	require.NoError(t, err)
	_, err = ringflake.New(t.Context(), ringflake.WithMachineIDSource(f))
	require.ErrorIs(t, err, ringflake.ErrInvalidConfig)
	assert.Contains(t, err.Error(), "already serves a live generator")
	assert.Zero(t, f.closeCount(), "the refused New must not release the first generator's lease")
	_, err = g.NextID()
	require.NoError(t, err, "the first generator keeps issuing")
	require.NoError(t, g.Close())
	g2, err := ringflake.New(t.Context(), ringflake.WithMachineIDSource(f))
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
	_, err := ringflake.New(t.Context(), ringflake.WithMachineIDSource(sliceLeaser{newFakeLeaser(machineid.Lease{ID: 1, Held: true})}))
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
	g, err := ringflake.New(t.Context(), ringflake.WithMachineIDSource(f), ringflake.WithMaxWait(-1), ringflake.WithLogger(slog.New(&rec)))
	require.NoError(t, err)
	defer g.Close()
	assert.False(t, time.Now().Before(mark), "New returned before the clock passed the mark")
	id, err := g.NextID()
	require.NoError(t, err, "the first call after New issues, even with a MaxWait that never waits")
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
	g, err := ringflake.New(t.Context(), append([]ringflake.Option{ringflake.WithMachineIDSource(f), ringflake.WithLayout(markTickLayout),
		ringflake.WithClock(clock.Now), ringflake.WithMaxWait(-1)}, opts...)...)
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
	require.NoError(t, err, "the first call after New issues, even with a MaxWait that never waits")
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

// A process whose clock is 60 s behind the mark of its lease, with New's
// default bound of 30 s, fails at once. It does not log a wait it will not
// make, and its error says how far ahead the mark is, what the bound is and
// what to do. The root package names no store's
// restart floor: a lease inherits a mark, and each store says what its
// marks cover.
func TestNewFailsAtOnceWithoutAnnouncingAWait(t *testing.T) {
	t.Parallel()
	var rec records
	clock := fakeclock.New(leaseStart)
	f := newFakeLeaser(machineid.Lease{ID: 5, Held: true, After: leaseStart.Add(time.Minute)})
	_, err := ringflake.New(t.Context(), ringflake.WithMachineIDSource(f), ringflake.WithClock(clock.Now), ringflake.WithLogger(slog.New(&rec)))
	require.ErrorIs(t, err, ringflake.ErrMarkAhead)
	var ce *ringflake.ClockError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, time.Minute+time.Millisecond, ce.By, "the clock is a minute and a tick short of the first tick past the mark")
	assert.Zero(t, ce.Waited, "New did not wait")
	assert.Equal(t, leaseStart, ce.Clock)
	msg := err.Error()
	assert.Contains(t, msg, "1m0.001s", "the error says how far ahead the mark is")
	assert.Contains(t, msg, "New's default bound of 30s (its context has no deadline) ends first", "the error names New's bound")
	assert.Contains(t, msg, "give New a context with a later deadline", "the error says what to raise")
	assert.Contains(t, msg, "clock", "the error says the clock may be at fault")
	assert.NotContains(t, msg, "restart", "the root package claims no store's restart floor")
	rec.mu.Lock()
	defer rec.mu.Unlock()
	assert.Empty(t, rec.list, "nothing logged: New did not wait")
	assert.Equal(t, 1, f.closeCount(), "the lease is released")
}

// A mark further ahead than New's deadline fails New at once with
// ErrMarkAhead and the figures, and releases the lease.
func TestNewFailsOnAMarkBeyondTheTimeout(t *testing.T) {
	t.Parallel()
	f := newFakeLeaser(machineid.Lease{ID: 5, Held: true, After: time.Now().Add(time.Hour)})
	start := time.Now()
	_, err := ringflake.New(within(t, time.Minute), ringflake.WithMachineIDSource(f))
	require.ErrorIs(t, err, ringflake.ErrMarkAhead)
	assert.NotErrorIs(t, err, ringflake.ErrClockBehind)
	var ce *ringflake.ClockError
	require.ErrorAs(t, err, &ce)
	assert.InDelta(t, time.Hour, ce.By, float64(time.Minute), "how far ahead the mark is")
	assert.Contains(t, err.Error(), "the mark the machine ID's lease inherited is ahead of the clock")
	assert.Less(t, time.Since(start), 30*time.Second, "New need not wait for a mark it cannot reach")
	assert.Equal(t, 1, f.closeCount(), "the lease is released")

	// And with a frozen injected clock, New gives up when its deadline comes.
	frozen := fakeclock.New(leaseStart)
	f2 := newFakeLeaser(machineid.Lease{ID: 5, Held: true, After: leaseStart.Add(time.Millisecond)})
	_, err = ringflake.New(within(t, 50*time.Millisecond), ringflake.WithMachineIDSource(f2), ringflake.WithClock(frozen.Now))
	require.ErrorIs(t, err, ringflake.ErrMarkAhead)
	assert.Contains(t, err.Error(), "the deadline of New's context", "the error names New's bound")
}

// A lease that is not held when New starts following it fails New once
// its deadline comes, with the lease's cause.
func TestNewFailsOnALeaseNeverHeld(t *testing.T) {
	t.Parallel()
	cause := errors.New("store unreachable")
	f := newFakeLeaser(machineid.Lease{ID: 5, Err: cause})
	_, err := ringflake.New(within(t, 30*time.Millisecond), ringflake.WithMachineIDSource(f))
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
	g, err := ringflake.New(t.Context(), ringflake.WithMachineIDSource(f), ringflake.WithMaxWait(-1))
	require.NoError(t, err)
	defer g.Close()
	_, err = g.NextID()
	require.NoError(t, err, "the first call after New issues")

	never := newFakeLeaser(machineid.Lease{ID: 6, Held: true, Until: time.Now().Add(-time.Second)})
	_, err = ringflake.New(within(t, 30*time.Millisecond), ringflake.WithMachineIDSource(never))
	require.ErrorIs(t, err, ringflake.ErrLeaseLost, "a mark never raised past the clock fails New")
}

// gatedStore is a machineid.Store whose Take ignores its context and
// answers once gate is closed, and which counts its releases.
type gatedStore struct {
	gate     chan struct{}
	releases atomic.Int32
}

func (s *gatedStore) Take(_ context.Context, c machineid.Claim) (machineid.Grant, error) {
	<-s.gate
	return machineid.Grant{ID: c.Lo, Until: time.Now().Add(c.TTL)}, nil
}

func (s *gatedStore) Renew(_ context.Context, c machineid.Claim, id int64) (machineid.Grant, error) {
	return machineid.Grant{ID: id, Until: time.Now().Add(c.TTL)}, nil
}

func (s *gatedStore) Release(context.Context, machineid.Claim, int64, time.Time) error {
	s.releases.Add(1)
	return nil
}

// heldRelease is a Leaser whose Release waits for proceed.
type heldRelease struct {
	*machineid.Holder
	proceed chan struct{}
}

func (h *heldRelease) Release(issued time.Time) error {
	<-h.proceed
	return h.Holder.Release(issued)
}

// A New that gave up on a Holder whose store answered late, retried on the
// same Holder, keeps its lease: the late answer's release, in the
// background, frees the abandoned session, not the retry's. The retry
// waits for that release rather than share the lease it frees; before,
// the retry took the abandoned session's lease, the release then freed
// it, and the retried generator failed with ErrLeaseLost from then on
// (issue 25, defect 1).
func TestRetriedNewAfterADeadlineKeepsItsLease(t *testing.T) {
	t.Parallel()
	s := &gatedStore{gate: make(chan struct{})}
	var set struct{}
	h, err := machineid.NewHolder(s, &set, machineid.Limits{Name: "gated"}, machineid.WithRange(3, 3))
	require.NoError(t, err)
	l := &heldRelease{h, make(chan struct{})}
	_, err = ringflake.New(within(t, 20*time.Millisecond), ringflake.WithMachineIDSource(l))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	type made struct {
		g   *ringflake.Generator
		err error
	}
	retry := make(chan made, 1)
	go func() {
		g, err := ringflake.New(within(t, time.Minute), ringflake.WithMachineIDSource(l))
		retry <- made{g, err}
	}()
	// Give the retry time to reach its wait; the outcome must not depend
	// on it, only the chance of catching a retry that does not wait.
	time.Sleep(50 * time.Millisecond)
	close(s.gate) // the first New's call answers, late
	var m made
	select {
	case m = <-retry: // the retry did not wait for the late answer's release
	case <-time.After(200 * time.Millisecond):
	}
	close(l.proceed) // the late answer's release
	if m.g == nil && m.err == nil {
		m = <-retry
	}
	require.NoError(t, m.err, "the retried New")
	defer m.g.Close()
	require.Equal(t, int32(1), s.releases.Load(), "the first New's late answer was released before the retry's lease began")
	_, err = m.g.NextID()
	require.NoError(t, err, "the retried New's generator issues after the abandoned answer's release")
	assert.NoError(t, m.g.Ready())
}

// A New that fails after it has released its lease does not forget a
// claim that another New made since: two live generators on one Leaser
// would issue the same IDs. Before, New forgot the claim of the Leaser
// under a datacenter's worker wrapper once more after the release, and a
// third New was let in beside the second (issue 25, defect 2). The window
// is a few instructions wide, so this runs rounds for 3 s: without -race,
// it caught the old code's double claim in each of 5 runs, and a claim
// forgotten once more after New's release in 2 runs of 3 (under -race it
// runs a few hundred rounds, and seldom catches it).
func TestFailedNewLeavesOtherClaimsAlone(t *testing.T) {
	t.Parallel()
	deadline := time.Now().Add(3 * time.Second)
	rounds := 0
	for ; time.Now().Before(deadline); rounds++ {
		f := newFakeLeaser(machineid.Lease{ID: 5, Held: true, After: time.Now().Add(time.Hour)})
		f.onRelease = func() { f.lease = machineid.Lease{ID: 5, Held: true} } // the next New can have it
		claimed := make(chan struct{})
		f.onMachineID = func() { close(claimed) }
		second := make(chan *ringflake.Generator, 1)
		go func() {
			<-claimed // the first New holds its claim
			for {
				if g, err := ringflake.New(t.Context(), ringflake.WithMachineIDSource(f), ringflake.WithRingSize(1)); err == nil {
					second <- g
					return
				}
			}
		}()
		_, err := ringflake.New(t.Context(), ringflake.WithMachineIDSource(f))
		require.ErrorIs(t, err, ringflake.ErrMarkAhead, "the first New")
		g := <-second
		third, err := ringflake.New(t.Context(), ringflake.WithMachineIDSource(f))
		if err == nil {
			third.Close()
		}
		require.ErrorIs(t, err, ringflake.ErrInvalidConfig, "round %d: a third New on a Leaser a live generator uses", rounds)
		require.NoError(t, g.Close())
	}
	t.Logf("%d rounds", rounds)
}

// New returns a Leaser's release error with its own, joined, on each way
// out after the Leaser was asked: the mark ahead of the clock, an ID the
// layout cannot hold, a source that failed. Before, each release's error
// was dropped (issue 25, defect 4).
func TestNewReturnsTheReleaseError(t *testing.T) {
	t.Parallel()
	errRelease := errors.New("release refused")
	boom := errors.New("boom")
	markAhead := newFakeLeaser(machineid.Lease{ID: 5, Held: true, After: time.Now().Add(time.Hour)})
	outside := newFakeLeaser(machineid.Lease{ID: 5000, Held: true})
	failing := newFakeLeaser(machineid.Lease{ID: 5, Held: true})
	for _, tt := range []struct {
		name string
		f    *fakeLeaser
		src  machineid.Leaser
		want error
	}{
		{"mark ahead", markAhead, markAhead, ringflake.ErrMarkAhead},
		{"ID outside the layout", outside, outside, ringflake.ErrInvalidConfig},
		{"source failed", failing, failingLeaser{failing, boom}, boom},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.f.releaseErr = errRelease
			_, err := ringflake.New(t.Context(), ringflake.WithMachineIDSource(tt.src))
			require.ErrorIs(t, err, tt.want)
			assert.ErrorIs(t, err, errRelease, "New's error carries the release's")
			assert.Contains(t, err.Error(), "releasing the machine ID's lease: release refused")
			assert.Equal(t, 1, tt.f.closeCount())
		})
	}
}

// Ready follows the lease as NextID judges it: nil while held and within
// its marks; ErrMarkAhead with how long until the clock passes the
// inherited mark; ErrLeaseLost with the cause while not held, and with how
// far the clock is past the confirmed mark; ErrClosed after Close.
func TestReadyFollowsTheLease(t *testing.T) {
	t.Parallel()
	cause := errors.New("store unreachable")
	ms := time.Millisecond
	f := newFakeLeaser(machineid.Lease{ID: 3, Held: true})
	clock := fakeclock.New(leaseStart)
	g := leasedGenerator(t, f, clock)
	require.NoError(t, g.Ready())
	for _, tt := range []struct {
		name  string
		lease machineid.Lease
		want  error // nil: ready
		by    time.Duration
		text  string
	}{
		{"held", machineid.Lease{ID: 3, Held: true, Until: leaseStart.Add(time.Second)}, nil, 0, ""},
		{"mark ahead", machineid.Lease{ID: 3, Held: true, After: leaseStart.Add(2 * time.Second)}, ringflake.ErrMarkAhead, 2*time.Second + ms, "passes it in 2.001s"},
		{"not held", machineid.Lease{ID: 3, Err: cause}, ringflake.ErrLeaseLost, 0, "machineid: lease lost: store unreachable: clock 2026-03-01T12:00:00Z"},
		{"past the confirmed mark", machineid.Lease{ID: 3, Held: true, Until: leaseStart.Add(-time.Second)}, ringflake.ErrLeaseLost, time.Second - ms, "is 999ms past the lease's confirmed mark"},
	} {
		f.set(tt.lease)
		err := g.Ready()
		if tt.want == nil {
			assert.NoError(t, err, tt.name)
			continue
		}
		require.ErrorIs(t, err, tt.want, tt.name)
		var ce *ringflake.ClockError
		require.ErrorAs(t, err, &ce, tt.name)
		assert.Equal(t, tt.by, ce.By, tt.name)
		assert.Equal(t, leaseStart, ce.Clock, tt.name)
		assert.Contains(t, err.Error(), tt.text, tt.name)
		assert.NotContains(t, err.Error(), "waited", "%s: Ready waits for nothing", tt.name)
		if tt.lease.Err != nil {
			assert.ErrorIs(t, err, tt.lease.Err, "%s: the cause", tt.name)
		}
		_, nerr := g.NextID()
		assert.ErrorIs(t, nerr, tt.want, "%s: NextID fails alike", tt.name)
	}
	require.NoError(t, g.Close())
	assert.ErrorIs(t, g.Ready(), ringflake.ErrClosed)
	var zero ringflake.Generator
	assert.ErrorIs(t, zero.Ready(), ringflake.ErrClosed)
}

// A lease's cause that says the lease was lost is not said twice: the
// generator's error is the cause, with the clock.
func TestLeaseLostIsSaidOnce(t *testing.T) {
	t.Parallel()
	f := newFakeLeaser(machineid.Lease{ID: 3, Held: true})
	g := leasedGenerator(t, f, fakeclock.New(leaseStart))
	cause := fmt.Errorf("renewing machine ID 3: %w: machine ID 3 was taken by another owner", machineid.ErrLeaseLost)
	f.set(machineid.Lease{ID: 3, Err: cause})
	_, err := g.NextID()
	require.ErrorIs(t, err, ringflake.ErrLeaseLost)
	assert.Equal(t, "renewing machine ID 3: machineid: lease lost: machine ID 3 was taken by another owner: clock 2026-03-01T12:00:00Z", err.Error())
	assert.Equal(t, 1, strings.Count(err.Error(), "lease lost"))
}

// lateStore is a machineid.Store whose Take ignores its context and answers
// late past its deadline, with a mark an hour ahead, and whose Release
// takes a second, whatever its context says.
type lateStore struct{ late time.Duration }

func (s *lateStore) Take(ctx context.Context, c machineid.Claim) (machineid.Grant, error) {
	d, _ := ctx.Deadline()
	time.Sleep(time.Until(d) + s.late)
	return machineid.Grant{ID: c.Lo, After: time.Now().Add(time.Hour), Until: c.Until}, nil
}

func (s *lateStore) Renew(_ context.Context, c machineid.Claim, id int64) (machineid.Grant, error) {
	return machineid.Grant{ID: id, Until: c.Until}, nil
}

func (s *lateStore) Release(context.Context, machineid.Claim, int64, time.Time) error {
	time.Sleep(time.Second)
	return nil
}

// New returns within 50 ms of its context's end whatever its source does,
// even when the source answers late, inside those 50 ms, and New then
// waits for the release of what it will not use: the two waits past the
// context's end share the one grace. Before, each had a grace of its own,
// and such a New returned up to 100 ms past its context's end (found by
// internal/leasesim, seed 389 of its first runs: New took 53 ms past its
// deadline). In virtual time, so that the figures are exact.
func TestNewEndsWithinOneGraceOfItsContext(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h, err := machineid.NewHolder[struct{}](&lateStore{late: 30 * time.Millisecond}, nil, machineid.Limits{Name: "late"}, machineid.WithRange(3, 3))
		require.NoError(t, err)
		began := time.Now()
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		_, err = ringflake.New(ctx, ringflake.WithMachineIDSource(h),
			ringflake.WithLayout(ringflake.Layout{TimeBits: 41, MachineBits: 10, SequenceBits: 12, Epoch: time.Date(1999, 1, 1, 0, 0, 0, 0, time.UTC)}))
		took := time.Since(began)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.LessOrEqualf(t, took, 250*time.Millisecond, "New took %v with a deadline of 200ms: more than 50ms past it", took)
		time.Sleep(2 * time.Second) // the release New left running ends
	})
}

// oneWatchLeaser keeps one watcher at a time, as a Leaser may: the contract
// does not ask for more. New's notice watch must have stopped before the
// generator's starts, or the notice's stop, run late, would leave the
// generator deaf to the lease.
type oneWatchLeaser struct{ *fakeLeaser }

func (o oneWatchLeaser) Watch(fn func(machineid.Lease)) func() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.watchers = map[int]func(machineid.Lease){0: fn}
	fn(o.lease)
	return func() {
		o.mu.Lock()
		defer o.mu.Unlock()
		o.watchers = nil
	}
}

func TestOneWatcherLeaserIsFollowed(t *testing.T) {
	t.Parallel()
	for i := range 20 {
		l := oneWatchLeaser{newFakeLeaser(machineid.Lease{ID: 3, Held: true})}
		g, err := ringflake.New(t.Context(), ringflake.WithMachineIDSource(l))
		require.NoError(t, err)
		l.set(machineid.Lease{ID: 3, Err: machineid.ErrLeaseLost})
		_, err = g.NextID()
		assert.ErrorIs(t, err, ringflake.ErrLeaseLost, "run %d: the generator heard the lease was lost", i)
		g.Close()
	}
}
