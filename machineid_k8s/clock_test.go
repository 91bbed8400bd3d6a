package machineid_k8s_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/internal/k8stest"
	"github.com/ringflake/ringflake/machineid"
	"github.com/ringflake/ringflake/machineid_k8s"
)

// testClockOff has a fleet hold machine ID 0 of 0..7, and then newcomers
// whose clocks are 30s ahead and 30s behind the API server's ask for an
// ID: each is refused at once, naming the API server's clock, and leaves
// ID 1's Lease without a holder and without a mark. A newcomer on the
// right clock then takes ID 1 without waiting, its clock measured to
// within half a second and the round trip.
func testClockOff(t *testing.T, s *k8stest.Server, ns string) {
	admin := newClient(t, s, s.Token(k8stest.Admin))
	rng := machineid.WithRange(0, 7)
	_, err := machineID(newHolder(t, newClient(t, s, s.Token(k8stest.Admin)), ns, rng, machineid_k8s.WithIdentity("fleet")))
	require.NoError(t, err)
	for _, tt := range []struct {
		name string
		off  time.Duration
		way  string
	}{
		{"ahead", 30 * time.Second, "ahead of"},
		{"behind", -30 * time.Second, "behind"},
	} {
		l := newHolder(t, newClient(t, s, s.Token(k8stest.Admin)), ns, rng, machineid_k8s.WithIdentity("newcomer"))
		clock := func() time.Time { return time.Now().Add(tt.off) }
		start := time.Now()
		_, err := ringflake.New(t.Context(), ringflake.WithMachineIDSource(l), ringflake.WithClock(clock))
		require.ErrorIs(t, err, machineid.ErrClockOffset, tt.name)
		assert.Less(t, time.Since(start), 5*time.Second, "%s: the refusal comes at once", tt.name)
		var ce *machineid.ClockOffsetError
		require.ErrorAs(t, err, &ce)
		assert.InDelta(t, tt.off, ce.By, float64(ce.Within+100*time.Millisecond), "%s: the offset: %v", tt.name, ce.ClockOffset)
		assert.ErrorContains(t, err, "machineid: the clock is off the fleet's: this process's clock is ")
		assert.ErrorContains(t, err, "s "+tt.way+" the API server's clock (±")
		lease := getLease(t, admin, ns, "ringflake-machine-1")
		assert.Nil(t, lease.Spec.HolderIdentity, "%s: the refused holder must free the Lease", tt.name)
		assert.NotContains(t, lease.Annotations, "ringflake.io/mark", "%s: the refused holder must write no mark", tt.name)
	}
	right := newHolder(t, newClient(t, s, s.Token(k8stest.Admin)), ns, rng)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	g, err := ringflake.New(ctx, ringflake.WithMachineIDSource(right))
	require.NoError(t, err)
	t.Cleanup(func() { _ = g.Close() })
	l := g.Lease()
	assert.Equal(t, int64(1), l.ID, "a released Lease is free at once")
	assert.True(t, l.After.IsZero(), "After = %v; want none: no refused newcomer left a mark", l.After)
	assert.Equal(t, "the API server's clock", l.Clock.Against)
	assert.Less(t, l.Clock.Within, time.Second, "the uncertainty: half the API server's second and half the round trip")
	t.Logf("the right newcomer's clock: %v", l.Clock)
	// Each renewal reads the API server's clock anew: the managedFields
	// time moves with every write.
	time.Sleep(3 * ttl / 2)
	l = g.Lease()
	assert.InDelta(t, 0, l.Clock.By, float64(l.Clock.Within+100*time.Millisecond), "after renewals: %v", l.Clock)
}

// testExhaustedSaysWho fills a range: a newcomer whose deadline comes
// before any Lease may be taken over fails saying who holds the IDs, when
// the first may be taken over and how long it waited.
func testExhaustedSaysWho(t *testing.T, s *k8stest.Server, ns string) {
	for _, who := range []string{"pod-a", "pod-b"} {
		_, err := machineID(newHolder(t, newClient(t, s, s.Token(k8stest.Admin)), ns, machineid.WithRange(0, 1), machineid_k8s.WithIdentity(who)))
		require.NoError(t, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), ttl/2)
	defer cancel()
	_, err := newHolder(t, newClient(t, s, s.Token(k8stest.Admin)), ns, machineid.WithRange(0, 1)).MachineID(ctx)
	require.ErrorIs(t, err, machineid.ErrExhausted)
	assert.ErrorContains(t, err, "machine IDs 0..1 held by pod-a, pod-b (Leases ringflake-machine-* in the namespace "+ns+", seen renewed within their duration plus the margin); the first may be taken over in at most ")
	assert.ErrorContains(t, err, "; waited ")
}

// longTTL is the TTL of the tests whose take waits inside its call: a
// contender waits 12s (TTL + margin) to take an abandoned ID over.
const longTTL = 10 * time.Second

// abandoned has a holder take machine ID 0 of 0..0 with longTTL and then
// lose its network, as a pod cut off would: its Lease stays held, unrenewed,
// until a contender has seen it unchanged for TTL + margin. It returns the
// Lease's mark.
func abandoned(t *testing.T, s *k8stest.Server, ns string) string {
	c := newClient(t, s, s.Token(k8stest.Admin))
	_, err := machineID(newHolder(t, c, ns, machineid.WithRange(0, 0), machineid.WithTTL(longTTL), machineid_k8s.WithIdentity("gone")))
	require.NoError(t, err)
	c.cut.Store(true)
	return getLease(t, newClient(t, s, s.Token(k8stest.Admin)), ns, "ringflake-machine-0").Annotations["ringflake.io/mark"]
}

// testTakeWaitsClockAhead has a newcomer whose clock is 8s ahead take an
// abandoned ID: its take waits 12s inside the call, and half that round
// trip must not hide the offset. It is refused, and writes no mark.
func testTakeWaitsClockAhead(t *testing.T, s *k8stest.Server, ns string) {
	mark := abandoned(t, s, ns)
	l := newHolder(t, newClient(t, s, s.Token(k8stest.Admin)), ns, machineid.WithRange(0, 0), machineid.WithTTL(longTTL))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ahead := func() time.Time { return time.Now().Add(8 * time.Second) }
	_, err := ringflake.New(ctx, ringflake.WithMachineIDSource(l), ringflake.WithClock(ahead))
	require.ErrorIs(t, err, machineid.ErrClockOffset, "a clock 8s ahead, after a take that waited")
	var ce *machineid.ClockOffsetError
	require.ErrorAs(t, err, &ce)
	t.Logf("refused: %v", ce.ClockOffset)
	assert.Less(t, ce.Within, time.Second, "the offset judged from a quick call: %v", ce.ClockOffset)
	lease := getLease(t, newClient(t, s, s.Token(k8stest.Admin)), ns, "ringflake-machine-0")
	assert.Nil(t, lease.Spec.HolderIdentity, "the refused holder must free the Lease")
	assert.Equal(t, mark, lease.Annotations["ringflake.io/mark"], "the refused holder must write no mark")
}

// testTakeWaitsClockRight has a newcomer on the right clock take an
// abandoned ID: its take waits 12s inside the call, and it takes the ID,
// its clock measured to within half the API server's second and a quick
// call's round trip.
func testTakeWaitsClockRight(t *testing.T, s *k8stest.Server, ns string) {
	abandoned(t, s, ns)
	l := newHolder(t, newClient(t, s, s.Token(k8stest.Admin)), ns, machineid.WithRange(0, 0), machineid.WithTTL(longTTL))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	g, err := ringflake.New(ctx, ringflake.WithMachineIDSource(l))
	require.NoError(t, err, "a right clock, after a take that waited")
	t.Cleanup(func() { _ = g.Close() })
	c := g.Lease().Clock
	t.Logf("the newcomer's clock: %v", c)
	assert.Equal(t, "the API server's clock", c.Against)
	assert.InDelta(t, 0, c.By, float64(c.Within+100*time.Millisecond), "a right clock: %v", c)
}
