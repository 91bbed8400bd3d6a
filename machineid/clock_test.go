package machineid_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake/internal/holderclock"
	"github.com/ringflake/ringflake/machineid"
)

// clockedLimits are the bounds of a memStore that reports its clock.
var clockedLimits = machineid.Limits{Name: "memstore", MaxIDs: 1 << 16, Clock: true}

// clockedHolder returns a Holder on a client of its own to s, which
// reports its clock, with its own clock off the store's by off.
func clockedHolder(t *testing.T, s *memStore, off time.Duration, opts ...machineid.Option) *machineid.Holder {
	t.Helper()
	c := newMemClient(s)
	var set memSettings
	h, err := machineid.NewHolder(c, &set, clockedLimits, opts...)
	require.NoError(t, err)
	require.True(t, holderclock.Set(h, func() time.Time { return time.Now().Add(off) }))
	t.Cleanup(func() { close(c.unstick); _ = h.Release(time.Time{}) })
	return h
}

// TestClockOffRefused takes an ID with clocks 30s ahead and behind the
// store's: refused at once with a *ClockOffsetError that says which way, by
// how much, against what and the bound; the ID stays free and its mark as
// it was, so that a holder with the right clock takes it next and need not
// wait. A clock within the bound takes the ID and reports its offset, and
// so does one past it with the check off.
func TestClockOffRefused(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		off  time.Duration
		way  string
	}{
		{"ahead", 30 * time.Second, "ahead of the memstore's clock"},
		{"behind", -30 * time.Second, "behind the memstore's clock"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newMemStore(true)
			s.clocked = true
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			start := time.Now()
			h := clockedHolder(t, s, tt.off, machineid.WithRange(5, 5))
			_, err := h.MachineID(ctx)
			took := time.Since(start)
			require.ErrorIs(t, err, machineid.ErrClockOffset)
			var ce *machineid.ClockOffsetError
			require.ErrorAs(t, err, &ce)
			assert.InDelta(t, tt.off, ce.By, float64(ce.Within), "By, within the measurement's uncertainty, %v", ce.Within)
			assert.Equal(t, "the memstore's clock", ce.Against)
			assert.Equal(t, 2*time.Second, ce.Bound, "the default bound")
			assert.Equal(t, int64(5), ce.ID)
			// The figure is the measured one, to the millisecond: 30.001s
			// on a loaded machine, as the uncertainty allows.
			assert.Contains(t, err.Error(), "machineid: the clock is off the fleet's: this process's clock is "+ce.ClockOffset.String())
			assert.Contains(t, ce.ClockOffset.String(), tt.way)
			assert.Contains(t, err.Error(), "at most 2s is allowed (machineid.WithMaxClockOffset), so machine ID 5 was not taken")
			assert.Less(t, took, 5*time.Second, "the refusal comes at once: waiting does not set a clock right")
			l := h.Lease()
			assert.False(t, l.Held)
			assert.ErrorIs(t, l.Err, machineid.ErrClockOffset, "Lease().Err")
			assert.True(t, l.Clock.Past(), "Lease().Clock = %v; want it past the bound", l.Clock)
			assert.True(t, s.mark(5).IsZero(), "the refused holder wrote a mark: %v", s.mark(5))

			right := clockedHolder(t, s, 0, machineid.WithRange(5, 5))
			id, err := right.MachineID(ctx)
			require.NoError(t, err, "a holder on the store's clock, after the refused one")
			assert.Equal(t, int64(5), id)
			assert.True(t, right.Lease().After.IsZero(), "After = %v; want none: the refused holder left no mark to wait out", right.Lease().After)
		})
	}
	t.Run("within the bound", func(t *testing.T) {
		t.Parallel()
		s := newMemStore(true)
		s.clocked = true
		h := clockedHolder(t, s, time.Second, machineid.WithRange(0, 0))
		_, err := h.MachineID(context.Background())
		require.NoError(t, err)
		c := h.Lease().Clock
		assert.InDelta(t, time.Second, c.By, float64(500*time.Millisecond), "By")
		assert.False(t, c.Past())
		assert.Contains(t, c.String(), "ahead of the memstore's clock")
		assert.False(t, s.mark(0).IsZero(), "the mark raised once the clock passed")
	})
	t.Run("check off", func(t *testing.T) {
		t.Parallel()
		s := newMemStore(true)
		s.clocked = true
		h := clockedHolder(t, s, -time.Minute, machineid.WithRange(0, 0), machineid.WithMaxClockOffset(-1))
		_, err := h.MachineID(context.Background())
		require.NoError(t, err, "a clock a minute behind, with the check off")
		c := h.Lease().Clock
		assert.InDelta(t, -time.Minute, c.By, float64(time.Second), "By, measured with the check off")
		assert.Equal(t, time.Duration(-1), c.Bound)
		assert.False(t, c.Past(), "nothing is past a bound that is off")
	})
}

// TestClockOffWhileHeldKeepsTheLease moves a holder's clock 30s ahead
// while it holds its ID: the renewals measure it and report it past the
// bound, and the lease stays held.
func TestClockOffWhileHeldKeepsTheLease(t *testing.T) {
	t.Parallel()
	h, _, setOff := offsetHolder(t, true)
	require.False(t, h.Lease().Clock.Past())
	setOff(30 * time.Second)
	require.Eventually(t, func() bool { return h.Lease().Clock.Past() }, 10*time.Second, time.Millisecond, "a renewal measures the new offset")
	l := h.Lease()
	assert.True(t, l.Held, "a clock off while held is reported, never a reason to stop: %v", l.Err)
	assert.InDelta(t, 30*time.Second, l.Clock.By, float64(time.Second))
}

// TestMaxClockOffsetOption checks the option's bounds.
func TestMaxClockOffsetOption(t *testing.T) {
	t.Parallel()
	s := newMemStore(true)
	var set memSettings
	_, err := machineid.NewHolder(newMemClient(s), &set, memLimits, machineid.WithMaxClockOffset(time.Hour+1))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "invalid configuration: max clock offset = 1h0m0.000000001s; valid: up to 1h0m0s; negative turns the check off")
	for _, d := range []time.Duration{-time.Hour, -1, 0, time.Hour} {
		_, err := machineid.NewHolder(newMemClient(s), &set, memLimits, machineid.WithMaxClockOffset(d))
		assert.NoError(t, err, "WithMaxClockOffset(%v)", d)
	}
}

// TestMachineIDWaitsForAFreeID fills a range of one ID, and checks that a
// newcomer whose deadline comes first fails with ErrExhausted saying how
// long it waited; that one with time enough gets the ID once its holder,
// cut off, has let the lease expire, having reported the wait meanwhile;
// and that Release ends a wait at once.
func TestMachineIDWaitsForAFreeID(t *testing.T) {
	t.Parallel()
	ttl := 500 * time.Millisecond
	s := newMemStore(true)
	a, ac := newHolder(t, s, machineid.WithRange(0, 0), machineid.WithTTL(ttl))
	_, err := a.MachineID(context.Background())
	require.NoError(t, err)

	short, _ := newHolder(t, s, machineid.WithRange(0, 0), machineid.WithTTL(ttl))
	ctx, cancel := context.WithTimeout(context.Background(), 3*ttl)
	start := time.Now()
	_, err = short.MachineID(ctx)
	cancel()
	require.ErrorIs(t, err, machineid.ErrExhausted, "a newcomer whose deadline came first")
	assert.Contains(t, err.Error(), "every ID in 0..0 is held; waited ")
	assert.GreaterOrEqual(t, time.Since(start), ttl, "it waited, rather than failing at once")

	b, _ := newHolder(t, s, machineid.WithRange(0, 0), machineid.WithTTL(ttl))
	var mu sync.Mutex
	var waiting bool
	stop := b.Watch(func(l machineid.Lease) {
		if l.ID < 0 && errors.Is(l.Err, machineid.ErrExhausted) {
			mu.Lock()
			waiting = true
			mu.Unlock()
		}
	})
	defer stop()
	got := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_, err := b.MachineID(ctx)
		got <- err
	}()
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return waiting }, 10*time.Second, time.Millisecond,
		"the waiting newcomer's lease reports the wait")
	ac.cut.Store(true) // a crash: the lease expires in the store after its TTL
	require.NoError(t, <-got, "the newcomer gets the ID once the crashed holder's lease expired")
	assert.Equal(t, int64(0), b.Lease().ID)

	c, _ := newHolder(t, s, machineid.WithRange(0, 0), machineid.WithTTL(ttl))
	got = make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_, err := c.MachineID(ctx)
		got <- err
	}()
	require.Eventually(t, func() bool { return errors.Is(c.Lease().Err, machineid.ErrExhausted) }, 10*time.Second, time.Millisecond)
	require.NoError(t, c.Release(time.Time{}))
	select {
	case err := <-got:
		assert.ErrorIs(t, err, machineid.ErrReleased, "a wait ended by Release")
	case <-time.After(5 * time.Second):
		t.Fatal("MachineID still waiting 5s after Release")
	}
}

// TestClockOffRefusedOnRetake has a holder lose its lease, to a store
// restart that drops it, while its clock is 30s ahead: the renewer's takes
// are refused, and the lease reports why, so that a generator's Ready and
// serve's /readyz say it; once the clock is set right, a take succeeds
// again. (A lease the store still holds is renewed whatever the clock:
// a renewal measures, never refuses.)
func TestClockOffRefusedOnRetake(t *testing.T) {
	t.Parallel()
	h, s, setOff := offsetHolder(t, false)
	setOff(30 * time.Second)
	s.restart() // the lease and the mark are gone
	require.Eventually(t, func() bool { return errors.Is(h.Lease().Err, machineid.ErrClockOffset) }, 10*time.Second, time.Millisecond,
		"the renewer's take is refused for the clock, and the lease says so")
	l := h.Lease()
	assert.False(t, l.Held)
	assert.ErrorIs(t, l.Err, machineid.ErrLeaseLost, "the loss, and why no lease is taken again")
	assert.True(t, s.mark(0).Before(time.Now().Add(10*time.Second)), "the refused takes wrote no mark 30s ahead: %v", s.mark(0))
	setOff(0)
	require.Eventually(t, func() bool { return h.Lease().Held }, 10*time.Second, time.Millisecond, "a clock set right takes the lease again")
}

// TestMachineIDCutShortWhileWaiting has a newcomer find a range of one ID
// full and then ask again with a store that answers no more: the deadline
// cuts the last try short, and MachineID still says the range was full and
// how long it waited, with the cut call as the last try. It once returned
// only the cut call's timeout, which a loaded machine's slow store gave
// (the conformance suite's Wait, on etcd).
func TestMachineIDCutShortWhileWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ttl = time.Second
		s := newMemStore(true)
		a, _ := newHolder(t, s, machineid.WithRange(0, 0), machineid.WithTTL(ttl))
		_, err := a.MachineID(context.Background())
		require.NoError(t, err)

		c := &hangAfterFirstTake{memClient: newMemClient(s)}
		b, err := machineid.NewHolder(c, &memSettings{}, memLimits, machineid.WithRange(0, 0), machineid.WithTTL(ttl))
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), ttl/2)
		defer cancel()
		_, err = b.MachineID(ctx)
		require.ErrorIs(t, err, machineid.ErrExhausted, "the range was full when last heard of")
		assert.ErrorIs(t, err, context.DeadlineExceeded, "the last try was cut short")
		assert.Contains(t, err.Error(), "every ID in 0..0 is held; waited ")
		assert.Contains(t, err.Error(), "; the last try: ")
		assert.Greater(t, c.takes.Load(), int32(1), "it tried again")
		require.NoError(t, b.Release(time.Time{}))
	})
}

// hangAfterFirstTake is a client whose Takes after the first wait for
// their context to end, as a store a loaded machine holds back.
type hangAfterFirstTake struct {
	*memClient
	takes atomic.Int32
}

func (c *hangAfterFirstTake) Take(ctx context.Context, cl machineid.Claim) (machineid.Grant, error) {
	if c.takes.Add(1) > 1 {
		<-ctx.Done()
		return machineid.Grant{}, ctx.Err()
	}
	return c.memClient.Take(ctx, cl)
}

// offsetHolder returns a Holder of ID 0, on a 300ms TTL, that holds its
// lease on a memStore that reports its clock (keeping its data over a
// restart if keeps), with the store, and a function that sets how far the
// holder's clock runs ahead of the store's.
func offsetHolder(t *testing.T, keeps bool) (*machineid.Holder, *memStore, func(time.Duration)) {
	t.Helper()
	s := newMemStore(keeps)
	s.clocked = true
	var off atomic.Int64
	var set memSettings
	h, err := machineid.NewHolder(newMemClient(s), &set, clockedLimits, machineid.WithRange(0, 0), machineid.WithTTL(300*time.Millisecond))
	require.NoError(t, err)
	holderclock.Set(h, func() time.Time { return time.Now().Add(time.Duration(off.Load())) })
	t.Cleanup(func() { _ = h.Release(time.Time{}) })
	_, err = h.MachineID(context.Background())
	require.NoError(t, err)
	return h, s, func(d time.Duration) { off.Store(int64(d)) }
}

// slowFirstTake is a memClient whose first Take waits 12s inside the call
// before it takes, as a Kubernetes take waits TTL + margin for an abandoned
// Lease: the store's reading comes at the end of a long round trip.
type slowFirstTake struct {
	*memClient
	takes atomic.Int32
}

func (c *slowFirstTake) Take(ctx context.Context, cl machineid.Claim) (machineid.Grant, error) {
	if c.takes.Add(1) == 1 {
		time.Sleep(12 * time.Second)
	}
	return c.memClient.Take(ctx, cl)
}

// TestSlowTakeHidesNoOffset takes an ID with a first take that waits 12s
// inside its call: half that round trip must not hide a clock 8s ahead of a
// 2s bound. It is refused, and writes no mark; a right clock, after the
// same wait, takes the ID, measured by a quick call.
func TestSlowTakeHidesNoOffset(t *testing.T) {
	for _, tt := range []struct {
		name string
		off  time.Duration
	}{
		{"8s ahead", 8 * time.Second},
		{"right", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := newMemStore(true)
				s.clocked = true
				c := &slowFirstTake{memClient: newMemClient(s)}
				h, err := machineid.NewHolder(c, &memSettings{}, clockedLimits, machineid.WithRange(0, 0), machineid.WithTTL(10*time.Second))
				require.NoError(t, err)
				require.True(t, holderclock.Set(h, func() time.Time { return time.Now().Add(tt.off) }))
				defer func() { _ = h.Release(time.Time{}) }()
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				_, err = h.MachineID(ctx)
				if tt.off == 0 {
					require.NoError(t, err)
					assert.Less(t, h.Lease().Clock.Within, time.Second, "measured by the quick call: %v", h.Lease().Clock)
					return
				}
				require.ErrorIs(t, err, machineid.ErrClockOffset)
				var ce *machineid.ClockOffsetError
				require.ErrorAs(t, err, &ce)
				assert.InDelta(t, tt.off, ce.By, float64(time.Second), "the offset: %v", ce.ClockOffset)
				assert.True(t, s.mark(0).IsZero(), "the refused holder wrote a mark: %v", s.mark(0))
			})
		})
	}
}
