package machineid_etcd_test

import (
	"context"
	"strings"
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
