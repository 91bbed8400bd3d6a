package ringflake_test

import (
	"context"
	"errors"
	"fmt"
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

func (f *fakeLeaser) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closes++
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
	g, err := ringflake.New(ringflake.WithMachineIDService(f), ringflake.WithClock(clock.Now), ringflake.WithMaxWait(0))
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
		{"no bounds", machineid.Lease{ID: 3, Valid: true}, leaseStart, nil},
		{"invalid", machineid.Lease{ID: 3}, leaseStart, ringflake.ErrLeaseLost},
		{"at the previous holder's mark", machineid.Lease{ID: 3, Valid: true, After: leaseStart}, leaseStart, ringflake.ErrClockBehind},
		{"before the previous holder's mark", machineid.Lease{ID: 3, Valid: true, After: leaseStart.Add(5 * time.Second)}, leaseStart, ringflake.ErrClockBehind},
		{"just past the mark", machineid.Lease{ID: 3, Valid: true, After: leaseStart}, leaseStart.Add(ms), nil},
		{"at the confirmed mark", machineid.Lease{ID: 3, Valid: true, Until: leaseStart}, leaseStart, nil},
		{"past the confirmed mark", machineid.Lease{ID: 3, Valid: true, Until: leaseStart}, leaseStart.Add(ms), ringflake.ErrLeaseLost},
		{"inside both", machineid.Lease{ID: 3, Valid: true, After: leaseStart.Add(-ms), Until: leaseStart.Add(ms)}, leaseStart, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := leasedGenerator(t, newFakeLeaser(tt.lease), fakeclock.New(tt.at))
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
	f := newFakeLeaser(machineid.Lease{ID: 7, Valid: true})
	clock := fakeclock.New(leaseStart)
	g := leasedGenerator(t, f, clock)
	_, err := g.NextID()
	require.NoError(t, err)

	f.set(machineid.Lease{ID: 7})
	_, err = g.NextID()
	require.ErrorIs(t, err, ringflake.ErrLeaseLost, "no ID may be issued on a lost lease")

	// Regained as another ID, whose previous holder used up to now.
	f.set(machineid.Lease{ID: 9, Valid: true, After: clock.Now()})
	assert.Equal(t, int64(9), g.MachineID())
	_, err = g.NextID()
	require.ErrorIs(t, err, ringflake.ErrClockBehind, "the new ID's previous holder's time must not be reused")
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
		{"ID above the layout's range", newFakeLeaser(machineid.Lease{ID: 5000, Valid: true}), nil, ringflake.ErrInvalidConfig},
		{"negative ID", newFakeLeaser(machineid.Lease{ID: -1, Valid: true}), nil, ringflake.ErrInvalidConfig},
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
			_, err := ringflake.New(append([]ringflake.Option{ringflake.WithMachineIDService(svc)}, tt.opts...)...)
			require.ErrorIs(t, err, tt.wantErr)
			assert.Equal(t, 1, tt.f.closeCount(), "a failed New should close the leaser it could not use")
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
	f := newFakeLeaser(machineid.Lease{ID: 1, Valid: true})
	g, err := ringflake.New(ringflake.WithMachineIDService(f))
	require.NoError(t, err)
	require.NoError(t, g.Close())
	require.NoError(t, g.Close())
	assert.Equal(t, 1, f.closeCount(), "Close should release the lease exactly once")
	f.set(machineid.Lease{ID: 1, Valid: true}) // a late report must not reopen it
	_, err = g.NextID()
	assert.ErrorIs(t, err, ringflake.ErrClosed)
	assert.Equal(t, int64(-1), g.MachineID())
}

func TestPlainServiceGivesAFixedID(t *testing.T) {
	t.Parallel()
	g, err := ringflake.New(ringflake.WithMachineIDService(machineid.Static(12, ringflake.DefaultLayout().MaxMachine())))
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
	g, err := ringflake.New(ringflake.WithMachineIDService(f), ringflake.WithClock(clock.Now), ringflake.WithMaxWait(time.Hour))
	require.NoError(t, err)
	t.Cleanup(func() { _ = g.Close() })
	f.set(machineid.Lease{ID: 7})
	done := make(chan error, 1)
	go func() {
		_, err := g.NextIDContext(t.Context())
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
	f := newFakeLeaser(machineid.Lease{ID: 7, Valid: true})
	g, done, reads := waitingOnLostLease(t, f)
	// One read, and one more to rule out a descheduled caller, are all a
	// waiting call needs; polling every tick would have made about 100.
	assert.LessOrEqual(t, reads, int64(3), "clock reads while waiting 100 ms for a lost lease")
	f.set(machineid.Lease{ID: 7, Valid: true})
	require.NoError(t, result(t, done, "it was regained"))
	assert.Equal(t, int64(7), g.MachineID())
}

// TestCloseWakesLeaseWait checks that Close ends a wait for a lost lease.
func TestCloseWakesLeaseWait(t *testing.T) {
	t.Parallel()
	g, done, _ := waitingOnLostLease(t, newFakeLeaser(machineid.Lease{ID: 7, Valid: true}))
	require.NoError(t, g.Close())
	require.ErrorIs(t, result(t, done, "Close"), ringflake.ErrClosed)
}

// rangedLeaser is a fakeLeaser that declares the IDs it may hand out.
type rangedLeaser struct {
	*fakeLeaser
	lo, hi int64
}

func (r rangedLeaser) Range() (int64, int64) { return r.lo, r.hi }

func TestServiceRangeMustFitTheLayout(t *testing.T) {
	t.Parallel()
	layout := ringflake.DefaultLayout()
	layout.MachineBits, layout.SequenceBits = 3, 19 // machine IDs 0..7
	for _, tt := range []struct {
		lo, hi int64
		ok     bool
	}{{0, 7, true}, {3, 3, true}, {0, 8, false}, {-1, 7, false}, {5, 2, false}, {0, math.MaxInt64, false}} {
		f := newFakeLeaser(machineid.Lease{ID: 3, Valid: true})
		g, err := ringflake.New(ringflake.WithLayout(layout), ringflake.WithMachineIDService(rangedLeaser{f, tt.lo, tt.hi}))
		if tt.ok {
			require.NoError(t, err, "range %d..%d", tt.lo, tt.hi)
			require.NoError(t, g.Close())
			continue
		}
		require.ErrorIs(t, err, ringflake.ErrInvalidConfig, "range %d..%d", tt.lo, tt.hi)
		assert.Contains(t, err.Error(), fmt.Sprintf("machine ID range of service = %d..%d; valid range within 0..7", tt.lo, tt.hi))
		assert.Equal(t, 1, f.closeCount(), "range %d..%d: the refused service should be closed", tt.lo, tt.hi)
	}
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
	s := stuckLeaser{newFakeLeaser(machineid.Lease{ID: 4, Valid: true}), make(chan struct{})}
	done := make(chan error, 1)
	go func() {
		_, err := ringflake.New(ringflake.WithMachineIDService(s), ringflake.WithAcquireTimeout(20*time.Millisecond))
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

// A service that panics makes New panic with its value, as a direct call
// would, after its leaser is closed; one that exits its goroutine makes
// New fail. Neither leaves the lease behind or New waiting.
func TestAcquireServicePanicsAndGoexits(t *testing.T) {
	t.Parallel()
	p := panickyLeaser{fakeLeaser: newFakeLeaser(machineid.Lease{ID: 2, Valid: true})}
	func() {
		defer func() {
			assert.Equal(t, "service failed", recover(), "New should pass the service's panic on")
		}()
		_, _ = ringflake.New(ringflake.WithMachineIDService(p))
		t.Error("New returned despite the service's panic")
	}()
	assert.Equal(t, 1, p.closeCount(), "the leaser is closed before the panic goes on")

	x := panickyLeaser{fakeLeaser: newFakeLeaser(machineid.Lease{ID: 2, Valid: true}), goexit: true}
	_, err := ringflake.New(ringflake.WithMachineIDService(x))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "runtime.Goexit")
	assert.Equal(t, 1, x.closeCount(), "the leaser is closed")
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
	s := slowLeaser{newFakeLeaser(machineid.Lease{ID: 6, Valid: true}), 20 * time.Millisecond}
	g, err := ringflake.New(ringflake.WithMachineIDService(s), ringflake.WithAcquireTimeout(math.MaxInt64))
	require.NoError(t, err)
	defer g.Close()
	assert.Equal(t, int64(6), g.MachineID())
}
