package machineid_etcd_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/internal/etcdtest"
	"github.com/ringflake/ringflake/machineid"
)

// TestClockOffIsRefused has a fleet of three holders on the true clock hold
// machine IDs 0..2 of 0..7, and then newcomers whose clocks are 30s ahead
// and 30s behind ask for an ID: each is refused at once against the median
// of the live holders' clocks, and leaves ID 3 free and unmarked. A
// newcomer on the true clock then takes ID 3 without waiting, its clock
// measured within about half a second.
func TestClockOffIsRefused(t *testing.T) {
	t.Parallel()
	e := etcdtest.Start(t)
	rng := machineid.WithRange(0, 7)
	for range 3 {
		acquire(t, newHolder(t, newClient(t, e.Endpoints()), rng))
	}
	c := newClient(t, e.Endpoints())
	for _, tt := range []struct {
		name string
		off  time.Duration
		way  string
	}{
		{"ahead", 30 * time.Second, "ahead of"},
		{"behind", -30 * time.Second, "behind"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l := newHolder(t, newClient(t, e.Endpoints()), rng)
			clock := func() time.Time { return time.Now().Add(tt.off) }
			start := time.Now()
			_, err := ringflake.New(t.Context(), ringflake.WithMachineIDSource(l), ringflake.WithClock(clock))
			require.ErrorIs(t, err, machineid.ErrClockOffset)
			assert.Less(t, time.Since(start), 5*time.Second, "the refusal comes at once")
			var ce *machineid.ClockOffsetError
			require.ErrorAs(t, err, &ce)
			assert.InDelta(t, tt.off, ce.By, float64(ce.Within+100*time.Millisecond), "the offset: %v", ce.ClockOffset)
			assert.ErrorContains(t, err, "machineid: the clock is off the fleet's: this process's clock is ")
			assert.ErrorContains(t, err, "s "+tt.way+" the median of 3 live holders' clocks (±")
			assert.Equal(t, int64(3), ce.ID)
			assert.Empty(t, owner(t, c, 3), "the refused holder must free ID 3")
			r, err := c.Get(context.Background(), "ringflake/machineid/mark/3")
			require.NoError(t, err)
			assert.Empty(t, r.Kvs, "the refused holder must write no mark")
		})
	}
	right := newHolder(t, newClient(t, e.Endpoints()), rng)
	g, err := ringflake.New(t.Context(), ringflake.WithMachineIDSource(right))
	require.NoError(t, err)
	t.Cleanup(func() { _ = g.Close() })
	l := g.Lease()
	assert.Equal(t, int64(3), l.ID)
	assert.True(t, l.After.IsZero(), "After = %v; want none: no refused newcomer left a mark", l.After)
	assert.True(t, strings.HasPrefix(l.Clock.Against, "the median of 3 live holders' clocks"), "Lease().Clock = %v", l.Clock)
	assert.Less(t, l.Clock.Within, time.Second, "the estimate's uncertainty: half a second and half the round trip")
	t.Logf("the right newcomer's clock: %v", l.Clock)
}

// TestFleetClockAgesRecords reads holders' clocks from records that are
// seconds old: on a TTL of 30s renewals come every 10s, so a record may
// be that old. Each is aged by its lease's TimeToLive, so the newcomer,
// whose clock is right, is measured within the estimate's uncertainty of
// 0, not seconds ahead.
func TestFleetClockAgesRecords(t *testing.T) {
	t.Parallel()
	e := etcdtest.Start(t)
	long := []machineid.Option{machineid.WithRange(0, 7), machineid.WithTTL(30 * time.Second)}
	for range 3 {
		acquire(t, newHolder(t, newClient(t, e.Endpoints()), long...))
	}
	time.Sleep(4 * time.Second) // the records age; no renewal comes
	l := newHolder(t, newClient(t, e.Endpoints()), long...)
	acquire(t, l)
	c := l.Lease().Clock
	require.True(t, strings.HasPrefix(c.Against, "the median of 3"), "Lease().Clock = %v", c)
	assert.InDelta(t, 0, c.By, float64(c.Within), "a right clock, against records 4s old: %v", c)
}

// TestNoFleetNoReference checks that the first holder of an empty fleet
// has nothing to compare its clock with, and takes its ID: etcd keeps no
// clock of its own.
func TestNoFleetNoReference(t *testing.T) {
	t.Parallel()
	e := etcdtest.Start(t)
	l := newHolder(t, newClient(t, e.Endpoints()), machineid.WithRange(0, 0))
	acquire(t, l)
	assert.Empty(t, l.Lease().Clock.Against, "Lease().Clock = %v; want no measurement", l.Lease().Clock)
}

// TestExhaustedSaysWhoHolds fills a range: a newcomer whose deadline comes
// first fails saying how many hold the IDs, when the first frees and how
// long it waited.
func TestExhaustedSaysWhoHolds(t *testing.T) {
	t.Parallel()
	e := etcdtest.Start(t)
	for range 2 {
		acquire(t, newHolder(t, newClient(t, e.Endpoints()), machineid.WithRange(0, 1)))
	}
	ctx, cancel := context.WithTimeout(context.Background(), ttl/2)
	defer cancel()
	_, err := newHolder(t, newClient(t, e.Endpoints()), machineid.WithRange(0, 1)).MachineID(ctx)
	require.ErrorIs(t, err, machineid.ErrExhausted)
	assert.ErrorContains(t, err, `machine IDs 0..1 held, each by an owner key under "ringflake/machineid/owner/" (holders are random tokens); the first frees in at most `)
	assert.ErrorContains(t, err, "; waited ")
}

// TestFleetClockAfterLeaderChange kills the leader of a three-member
// cluster while three holders' clock records are 12s old: the new leader
// keeps every etcd lease alive anew, so their TimeToLive no longer says how
// old the records are. A newcomer on the true clock, asking within the next
// TTL, must not be refused for a fleet clock that seems 12s behind.
func TestFleetClockAfterLeaderChange(t *testing.T) {
	t.Parallel()
	e := etcdtest.StartCluster(t)
	// A TTL of 60s: renewals every 20s, so no holder records its clock
	// again before the newcomer asks.
	long := []machineid.Option{machineid.WithRange(0, 7), machineid.WithTTL(time.Minute)}
	for range 3 {
		acquire(t, newHolder(t, newClient(t, e.Endpoints()), long...))
	}
	time.Sleep(12 * time.Second) // the records age
	leader := e.Leader()
	leader.Kill()
	t.Logf("killed the leader, %s; %s leads now", leader.Name, e.Leader().Name)
	l := newHolder(t, newClient(t, e.Endpoints()), long...)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	g, err := ringflake.New(ctx, ringflake.WithMachineIDSource(l))
	require.NoError(t, err, "a newcomer on the true clock, after a leader change")
	t.Cleanup(func() { _ = g.Close() })
	c := g.Lease().Clock
	t.Logf("the newcomer's clock: %v", c)
	if c.Against != "" {
		assert.InDelta(t, 0, c.By, float64(c.Within), "a right clock: %v", c)
	}
}

// shifted is a clock that reads off ahead of the true time, and can step.
type shifted struct{ off atomic.Int64 }

func (s *shifted) now() time.Time { return time.Now().Add(time.Duration(s.off.Load())) }

// generator makes a generator over a new Holder on e whose clock reads off
// ahead of the true time, and fails the test if New fails. It returns the
// generator and its clock, which the test may step. The Holder's TTL is
// 3 s unless opts say otherwise: a store reporting its clock grants the
// lease first and raises its mark with a second call, which must come
// within the TTL of the grant, and under the CPU hog at load 17 on 2 cores
// it came after 1 s, to an etcd lease that had expired (New failed).
func generator(t *testing.T, e *etcdtest.Cluster, off time.Duration, opts ...machineid.Option) (*ringflake.Generator, *shifted) {
	t.Helper()
	clk := &shifted{}
	clk.off.Store(int64(off))
	l := newHolder(t, newClient(t, e.Endpoints()), append([]machineid.Option{machineid.WithTTL(3 * ttl)}, opts...)...)
	g, err := ringflake.New(t.Context(), ringflake.WithMachineIDSource(l), ringflake.WithClock(clk.now))
	require.NoError(t, err, "New of a holder %v ahead", off)
	t.Cleanup(func() { _ = g.Close() })
	return g, clk
}

// awaitClock waits, for at most 10 s, until g's lease reports a clock
// offset that ok accepts, and returns it.
func awaitClock(t *testing.T, g *ringflake.Generator, what string, ok func(machineid.ClockOffset) bool) machineid.ClockOffset {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c := g.Lease().Clock
		if ok(c) {
			return c
		}
		require.True(t, time.Now().Before(deadline), "%s: the lease's clock is still %v", what, c)
		time.Sleep(20 * time.Millisecond)
	}
}

// leftFleet says that a holder's clock has left the fleet's: past the
// bound against a reference three live holders' clocks agree on.
func leftFleet(c machineid.ClockOffset) bool { return c.Past() && !c.Tentative }

// TestFirstClockAheadRefusesNoOne (issue 36): the first holder's clock is
// 6 s ahead, so it is the fleet's clock until others join. Newcomers on the
// true clock are admitted, their offset from it reported as tentative, not
// refused ("6.169s behind the one live holder's clock", before). Once three
// of them hold, the fleet's clock is theirs: the holder 6 s ahead reports
// its clock as past the bound against it, not tentative, and a newcomer 30 s
// ahead is refused against the three that agree.
func TestFirstClockAheadRefusesNoOne(t *testing.T) {
	t.Parallel()
	e := etcdtest.Start(t)
	rng := machineid.WithRange(0, 7)
	ahead, _ := generator(t, e, 6*time.Second, rng)
	for i := range 3 {
		g, _ := generator(t, e, 0, rng)
		c := g.Lease().Clock
		t.Logf("newcomer %d on the true clock: %v", i+1, c)
		if i == 0 {
			assert.True(t, c.Past() && c.Tentative, "against the one holder 6 s ahead: past it, tentatively: %v", c)
			assert.Equal(t, "the one live holder's clock", c.Against)
		}
		assert.False(t, leftFleet(c), "a newcomer on the true clock has not left the fleet's: %v", c)
	}
	c := awaitClock(t, ahead, "the holder 6 s ahead", leftFleet)
	assert.InDelta(t, 6*time.Second, c.By, float64(c.Within+100*time.Millisecond), "%v", c)
	t.Logf("the holder 6 s ahead: %v", c)

	l := newHolder(t, newClient(t, e.Endpoints()), rng)
	far := func() time.Time { return time.Now().Add(30 * time.Second) }
	_, err := ringflake.New(t.Context(), ringflake.WithMachineIDSource(l), ringflake.WithClock(far))
	require.ErrorIs(t, err, machineid.ErrClockOffset, "a newcomer 30 s ahead, against three clocks that agree")
	var ce *machineid.ClockOffsetError
	require.ErrorAs(t, err, &ce)
	assert.False(t, ce.Tentative)
	assert.InDelta(t, 30*time.Second, ce.By, float64(ce.Within+100*time.Millisecond), "%v", ce.ClockOffset)
}

// TestHolderSteppingAheadRefusesNoOne (issue 36): of two holders on the
// true clock, one steps 8 s ahead. Three newcomers on the true clock are
// admitted (before, each was refused as "4.48s behind the median of 2"),
// and once they hold, the holder that stepped reports its clock as past the
// bound against the fleet's, not tentative.
func TestHolderSteppingAheadRefusesNoOne(t *testing.T) {
	t.Parallel()
	e := etcdtest.Start(t)
	rng := machineid.WithRange(0, 7)
	stepper, clk := generator(t, e, 0, rng)
	right, _ := generator(t, e, 0, rng)
	clk.off.Store(int64(8 * time.Second))
	c := awaitClock(t, right, "the holder on the true clock, once the other's record says 8 s ahead",
		func(c machineid.ClockOffset) bool { return c.By < -6*time.Second })
	assert.True(t, c.Tentative, "one other holder is no fleet: %v", c)
	for i := range 3 {
		g, _ := generator(t, e, 0, rng)
		c := g.Lease().Clock
		t.Logf("newcomer %d on the true clock: %v", i+1, c)
		assert.False(t, leftFleet(c), "a newcomer on the true clock has not left the fleet's: %v", c)
	}
	c = awaitClock(t, stepper, "the holder that stepped 8 s ahead", leftFleet)
	assert.InDelta(t, 8*time.Second, c.By, float64(c.Within+100*time.Millisecond), "%v", c)
	t.Logf("the holder that stepped: %v", c)
}
