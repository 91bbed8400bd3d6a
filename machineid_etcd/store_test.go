package machineid_etcd_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/internal/etcdtest"
	"github.com/ringflake/ringflake/machineid"
)

// TestExpiryAndReuse abandons a holder, as a crash would: it reports the
// lease lost before etcd expires it, the ID is free again after the TTL,
// and its next holder's After is at or past every Until the first was
// given.
func TestExpiryAndReuse(t *testing.T) {
	t.Parallel()
	e := etcdtest.Start(t)
	ca := newClient(t, e.Endpoints())
	a := newHolder(t, ca, machineid.WithRange(0, 0))
	ra := record(t, a)
	require.Equal(t, int64(0), acquire(t, a))
	first := ra.last().Until
	ra.waitFor(t, "a renewal raising Until", 1, 3*ttl, func(l machineid.Lease) bool { return l.Held && l.Until.After(first) })
	require.NoError(t, ca.Close(), "closing a's client")

	b := newHolder(t, newClient(t, e.Endpoints()), machineid.WithRange(0, 0))
	start := takeWhenFree(t, b)
	lost, _ := ra.waitFor(t, "a's lease lost", 0, 0, func(l machineid.Lease) bool { return !l.Held && l.ID == 0 })
	assert.ErrorIs(t, lost.Err, machineid.ErrLeaseLost, "a's cause")
	assert.True(t, lost.at.Before(start), "a reported the loss at %v, after b's successful claim started at %v", lost.at, start)

	var maxUntil time.Time
	for _, r := range ra.all() {
		if r.Until.After(maxUntil) {
			maxUntil = r.Until
		}
	}
	rb := record(t, b).last()
	assert.False(t, rb.After.Before(maxUntil), "b's After = %v; want at or past a's last Until %v", rb.After, maxUntil)
	t.Logf("a lost its lease %v before b took the ID; b's After is %v past a's Until", start.Sub(lost.at), rb.After.Sub(maxUntil))
}

// TestReleaseLowersMark checks Release's effect on the mark: down to
// issued, never below the holder's After, and kept as confirmed for the
// zero issued.
func TestReleaseLowersMark(t *testing.T) {
	t.Parallel()
	e := etcdtest.Start(t)
	c := newClient(t, e.Endpoints())
	rng := machineid.WithRange(0, 0)

	a := newHolder(t, c, rng)
	acquire(t, a)
	assert.True(t, record(t, a).last().After.IsZero(), "a fresh ID's After; want zero")
	issued := time.Now()
	require.NoError(t, a.Release(issued), "a.Release")
	assert.Equal(t, issued.UnixNano(), markOf(t, c, 0).UnixNano(), "mark after a.Release(issued); want issued")
	assert.Empty(t, owner(t, c, 0), "owner key after Release")

	b := newHolder(t, c, rng)
	acquire(t, b)
	rb := record(t, b).last()
	assert.Equal(t, issued.UnixNano(), rb.After.UnixNano(), "b's After; want a's issued")
	require.NoError(t, b.Release(time.Time{}), "b.Release(zero)")
	assert.Equal(t, rb.Until.UnixNano(), markOf(t, c, 0).UnixNano(), "mark after b.Release(zero time); want b's Until")

	d := newHolder(t, c, rng)
	acquire(t, d)
	rd := record(t, d).last()
	assert.Equal(t, rb.Until.UnixNano(), rd.After.UnixNano(), "d's After; want b's Until")
	require.NoError(t, d.Release(rd.After.Add(-time.Hour)), "d.Release(before its After)")
	assert.Equal(t, rd.After.UnixNano(), markOf(t, c, 0).UnixNano(), "mark after releasing below After; want d's After")
}

// TestKeyTaken overwrites a holder's owner key, as another writer would:
// the holder reports the loss at its next renewal, names the cause, takes
// another ID, and its Release leaves the other owner's ID alone.
func TestKeyTaken(t *testing.T) {
	t.Parallel()
	e := etcdtest.Start(t)
	c := newClient(t, e.Endpoints())
	a := newHolder(t, c, machineid.WithRange(0, 1))
	ra := record(t, a)
	require.Equal(t, int64(0), acquire(t, a))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := c.Put(ctx, "ringflake/machineid/owner/0", "intruder")
	require.NoError(t, err)

	lost, i := ra.waitFor(t, "the loss of 0", 1, 3*ttl, func(l machineid.Lease) bool { return !l.Held })
	assert.ErrorIs(t, lost.Err, machineid.ErrLeaseLost)
	assert.ErrorContains(t, lost.Err, "taken by another owner")
	again, _ := ra.waitFor(t, "a new lease", i, 3*ttl, func(l machineid.Lease) bool { return l.Held })
	assert.Equal(t, int64(1), again.ID, "ID after losing 0; want the free 1")

	mark := markOf(t, c, 0)
	require.NoError(t, a.Release(time.Now().Add(-time.Hour)))
	assert.Equal(t, mark, markOf(t, c, 0), "mark of 0 after Release; want unchanged, a no longer owns it")
	assert.Equal(t, "intruder", owner(t, c, 0), "owner of 0 after a's Release")
}

// TestLossWhenEtcdStops kills etcd under a holder: it reports the lease
// lost, with etcd's error, before etcd could expire it, and gets the same
// ID with the same After back once etcd is up again with its data.
func TestLossWhenEtcdStops(t *testing.T) {
	t.Parallel()
	e := etcdtest.Start(t)
	l := newHolder(t, newClient(t, e.Endpoints()))
	r := record(t, l)
	id := acquire(t, l)
	held := r.last()
	e.Members[0].Kill()

	lost, i := r.waitFor(t, "the loss", 1, 3*ttl, func(l machineid.Lease) bool { return !l.Held })
	assert.ErrorIs(t, lost.Err, machineid.ErrLeaseLost)
	t.Logf("cause: %v", lost.Err)
	prev := r.all()[i-1]
	// The last confirmed renewal was sent before prev was reported, so the
	// deadline is at most prev + TTL - margin (TTL/5 by default).
	assert.Less(t, lost.at.Sub(prev.at), ttl-ttl/5+300*time.Millisecond, "loss reported %v after the last confirmed renewal", lost.at.Sub(prev.at))

	// Down for 3s, gRPC's default backoff would wait up to 2.6s more
	// before it dials again.
	time.Sleep(3*time.Second - time.Since(lost.at))
	e.Members[0].Start()
	e.WaitHealthy()
	up := time.Now()
	back, _ := r.waitFor(t, "the lease back", i, 10*ttl, func(l machineid.Lease) bool { return l.Held })
	assert.Equal(t, id, back.ID, "ID after etcd restarted; want the same")
	assert.True(t, back.After.Equal(held.After), "After after etcd restarted = %v; want the same %v", back.After, held.After)
	assert.Less(t, back.at.Sub(up), ttl, "lease back %v after etcd answered; want within a TTL", back.at.Sub(up))
}

// TestReleaseRightAfterRestart releases as soon as etcd is back from an
// outage of a few seconds: the client's connection must not be left
// waiting out gRPC's backoff, or the release fails.
func TestReleaseRightAfterRestart(t *testing.T) {
	t.Parallel()
	e := etcdtest.Start(t)
	c := newClient(t, e.Endpoints())
	l := newHolder(t, c)
	r := record(t, l)
	id := acquire(t, l)
	e.Members[0].Kill()
	r.waitFor(t, "the loss", 1, 3*ttl, func(l machineid.Lease) bool { return !l.Held })
	time.Sleep(2 * time.Second)
	e.Members[0].Start()
	e.WaitHealthy()
	issued := time.Now()
	require.NoError(t, l.Release(issued), "Release right after etcd came back")
	assert.Equal(t, issued.UnixNano(), markOf(t, c, id).UnixNano(), "mark after Release")
}

// TestRenewalRaisesUntil checks that renewals raise Until ahead of time,
// and that every Until reported is the mark etcd holds or below it.
func TestRenewalRaisesUntil(t *testing.T) {
	t.Parallel()
	e := etcdtest.Start(t)
	c := newClient(t, e.Endpoints())
	l := newHolder(t, c)
	r := record(t, l)
	id := acquire(t, l)
	from := 1
	prev := r.all()[from]
	for range 3 {
		next, i := r.waitFor(t, "a higher Until", from+1, 2*ttl, func(l machineid.Lease) bool { return l.Held })
		assert.True(t, next.Until.After(prev.Until), "Until %v after %v; want higher", next.Until, prev.Until)
		assert.Greater(t, next.Until.Sub(next.at), ttl/2, "Until is %v ahead of its report; want most of a TTL", next.Until.Sub(next.at))
		assert.False(t, markOf(t, c, id).Before(next.Until), "mark in etcd below the reported Until %v", next.Until)
		prev, from = next, i
	}
}

// TestContextHonoured checks that MachineID returns soon after its context
// ends: cancelled before the call, and with a deadline against a server
// that never answers.
func TestContextHonoured(t *testing.T) {
	t.Parallel()
	l := newHolder(t, newClient(t, []string{blackhole(t)}))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := l.MachineID(ctx)
	assert.ErrorIs(t, err, context.Canceled, "MachineID with a cancelled context")

	const wait = 300 * time.Millisecond
	ctx, cancel = context.WithTimeout(context.Background(), wait)
	defer cancel()
	start := time.Now()
	_, err = l.MachineID(ctx)
	took := time.Since(start)
	assert.ErrorIs(t, err, context.DeadlineExceeded, "MachineID against a hung server")
	assert.Less(t, took, wait+500*time.Millisecond, "MachineID took %v with a %v deadline", took, wait)
}

// TestRelease checks that Release deletes the owner key, is idempotent,
// reports the lease not held with ErrReleased, needs no server when
// nothing was taken, and that a later MachineID takes a lease again.
func TestRelease(t *testing.T) {
	t.Parallel()
	t.Run("unused", func(t *testing.T) {
		l := newHolder(t, newClient(t, []string{blackhole(t)}))
		start := time.Now()
		assert.NoError(t, l.Release(time.Now()), "Release of an unused Holder")
		// A call to the black hole would last the call timeout (2 s); a
		// second leaves room for a busy machine.
		assert.Less(t, time.Since(start), time.Second, "Release of an unused Holder contacted the server")
	})
	t.Run("held", func(t *testing.T) {
		e := etcdtest.Start(t)
		c := newClient(t, e.Endpoints())
		l := newHolder(t, c)
		r := record(t, l)
		id := acquire(t, l)
		require.NoError(t, l.Release(time.Now()))
		require.NoError(t, l.Release(time.Now()), "second Release")
		last := r.last()
		assert.False(t, last.Held, "last report after Release")
		assert.ErrorIs(t, last.Err, machineid.ErrReleased, "cause after Release")
		assert.Empty(t, owner(t, c, id), "owner key after Release")
		// A new holding, on an etcd lease of its own.
		assert.Equal(t, id, acquire(t, l), "MachineID after Release; want the released ID again")
		assert.NotEmpty(t, owner(t, c, id), "owner key of the new holding")
		require.NoError(t, l.Release(time.Now()), "Release of the new holding")
		assert.Empty(t, owner(t, c, id), "owner key after the second holding's Release")
	})
	t.Run("server gone", func(t *testing.T) {
		e := etcdtest.Start(t)
		l := newHolder(t, newClient(t, e.Endpoints()))
		acquire(t, l)
		e.Members[0].Kill()
		err := l.Release(time.Now())
		assert.Error(t, err, "Release with etcd down")
		assert.Equal(t, err, l.Release(time.Time{}), "second Release; want the first one's error")
	})
}

// TestGeneratorFollowsLease runs a ringflake generator on a Holder: its IDs
// carry the leased machine ID, and Close releases the lease, lowering the
// mark to the last time it issued.
func TestGeneratorFollowsLease(t *testing.T) {
	t.Parallel()
	e := etcdtest.Start(t)
	c := newClient(t, e.Endpoints())
	l := newHolder(t, c, machineid.WithRange(3, 9))
	g, err := ringflake.New(t.Context(), ringflake.WithMachineIDSource(l))
	require.NoError(t, err, "ringflake.New")
	var last ringflake.ID
	for range 1000 {
		id, err := g.NextID()
		require.NoError(t, err, "NextID")
		last = id
	}
	parts := g.Layout().Decompose(last)
	assert.Equal(t, int64(3), parts.Machine, "machine ID in the IDs")
	require.NoError(t, g.Close(), "Close")
	assert.Empty(t, owner(t, c, 3), "owner key after Close")
	mark := markOf(t, c, 3)
	assert.False(t, mark.Before(parts.Time), "mark %v before the last ID's time %v", mark, parts.Time)
	assert.Less(t, mark.Sub(parts.Time), g.Layout().Tick, "mark %v; want within the last ID's tick %v", mark, parts.Time)
}

// TestConcurrentCalls calls MachineID, Watch and Release from many
// goroutines at once, for the race detector.
func TestConcurrentCalls(t *testing.T) {
	t.Parallel()
	e := etcdtest.Start(t)
	l := newHolder(t, newClient(t, e.Endpoints()))
	var wg sync.WaitGroup
	ids := make([]int64, 8)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			ids[i], _ = l.MachineID(ctx)
			stop := l.Watch(func(machineid.Lease) {})
			stop()
		}()
	}
	wg.Wait()
	for i, id := range ids {
		assert.Equal(t, ids[0], id, "MachineID call %d", i)
	}
	var errs [4]error
	for i := range errs {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = l.Release(time.Now()) }()
	}
	wg.Wait()
	for _, err := range errs {
		assert.NoError(t, err)
	}
}

// TestReleaseEndsMachineID releases while MachineID waits for a server that
// never answers: MachineID returns ErrReleased.
func TestReleaseEndsMachineID(t *testing.T) {
	t.Parallel()
	l := newHolder(t, newClient(t, []string{blackhole(t)}))
	done := make(chan error, 1)
	go func() {
		_, err := l.MachineID(context.Background())
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	_ = l.Release(time.Time{})
	select {
	case err := <-done:
		assert.True(t, errors.Is(err, machineid.ErrReleased) || errors.Is(err, context.DeadlineExceeded),
			"MachineID ended by Release: %v; want ErrReleased (or the call timeout, if it came first)", err)
	case <-time.After(5 * time.Second):
		t.Fatal("MachineID still waits 5s after Release")
	}
}

// TestClockAheadCostsWait hands an ID over from a holder whose clock runs
// 2s ahead to one whose clock is right: the second waits for its clock to
// pass the mark the first left, and the two issue disjoint IDs.
func TestClockAheadCostsWait(t *testing.T) {
	t.Parallel()
	e := etcdtest.Start(t)
	const skew = 2 * time.Second
	ahead := func() time.Time { return time.Now().Add(skew) }
	rng := machineid.WithRange(0, 0)
	a, err := ringflake.New(t.Context(),
		ringflake.WithMachineIDSource(newHolder(t, newClient(t, e.Endpoints()), rng)),
		ringflake.WithClock(ahead))
	require.NoError(t, err, "New with a clock ahead")
	var aIDs []ringflake.ID
	for range 100 {
		id, err := a.NextID()
		require.NoError(t, err)
		aIDs = append(aIDs, id)
	}
	require.NoError(t, a.Close(), "Close with a clock ahead")

	start := time.Now()
	b, err := ringflake.New(t.Context(), ringflake.WithMachineIDSource(newHolder(t, newClient(t, e.Endpoints()), rng)))
	require.NoError(t, err, "New with a right clock")
	defer b.Close()
	waited := time.Since(start)
	first, err := b.NextID()
	require.NoError(t, err)

	layout := ringflake.DefaultLayout()
	lastA := layout.Decompose(aIDs[len(aIDs)-1])
	firstB := layout.Decompose(first)
	assert.Equal(t, lastA.Machine, firstB.Machine, "both on ID 0")
	assert.Greater(t, first, aIDs[len(aIDs)-1], "b's first ID (time %v) not after a's last (time %v)", firstB.Time, lastA.Time)
	assert.Greater(t, waited, skew-500*time.Millisecond, "New on the right clock took %v; want about the skew, %v", waited, skew)
	t.Logf("New on the right clock waited %v for a mark %v ahead", waited.Round(time.Millisecond), skew)
}

// TestExhaustedAfterPartition cuts a holder of the range's only ID off
// etcd until its lease lapses and another holder takes the ID: once the
// partition heals, the first holder's lease names the cause that holds
// now, every ID held, not the timeouts of the partition.
func TestExhaustedAfterPartition(t *testing.T) {
	t.Parallel()
	e := etcdtest.Start(t)
	p := newProxy(t, e.Endpoints()[0])
	rng := machineid.WithRange(0, 0)
	a := newHolder(t, newClient(t, []string{p.url()}), rng)
	ra := record(t, a)
	require.Equal(t, int64(0), acquire(t, a))
	p.setCut(true)
	ra.waitFor(t, "a's lease lapsed", 1, 3*ttl, func(l machineid.Lease) bool { return !l.Held })

	b := newHolder(t, newClient(t, e.Endpoints()), rng)
	takeWhenFree(t, b)
	t.Logf("a's cause while cut off: %v", a.Lease().Err)
	p.setCut(false)
	healed := time.Now()
	exhausted := func() bool { return errors.Is(a.Lease().Err, machineid.ErrExhausted) }
	ok := assert.Eventually(t, exhausted, 10*ttl, 20*time.Millisecond, "a's cause after the partition healed, with 0 held by b; want ErrExhausted")
	cur := a.Lease()
	assert.False(t, cur.Held, "a's lease after the partition healed")
	t.Logf("a's cause %v after the heal (found: %v): %v", time.Since(healed).Round(time.Millisecond), ok, cur.Err)
}
