package machineid_k8s_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/internal/k8stest"
	"github.com/ringflake/ringflake/machineid"
	"github.com/ringflake/ringflake/machineid_k8s"
)

// TestStore runs the store's own tests against one kube-apiserver, each in
// a namespace of its own and all at once.
func TestStore(t *testing.T) {
	s := k8stest.Start(t)
	for _, tt := range []struct {
		name string
		run  func(*testing.T, *k8stest.Server, string)
	}{
		{"record", testRecord},
		{"takeover waits", testTakeoverWaits},
		{"renewal after another write", testRenewAfterWrite},
		{"taken by another", testTakenByAnother},
		{"garbage mark", testGarbageMark},
		{"missing namespace", testMissingNamespace},
		{"clock ahead", testClockAhead},
		{"clock off", testClockOff},
		{"take waits clock ahead", testTakeWaitsClockAhead},
		{"take waits clock right", testTakeWaitsClockRight},
		{"exhausted says who", testExhaustedSaysWho},
	} {
		ns := strings.ReplaceAll(tt.name, " ", "-")
		s.CreateNamespace(ns)
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.run(t, s, ns)
		})
	}
}

// getLease reads a Lease as the admin.
func getLease(t *testing.T, c *client, ns, name string) *coordinationv1.Lease {
	t.Helper()
	l, err := c.CoordinationV1().Leases(ns).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err, "reading the Lease %s/%s", ns, name)
	return l
}

// testRecord checks what a holding writes on its Lease: the name from the
// prefix and the ID, the identity and a token as holderIdentity, the TTL
// rounded up to whole seconds, the mark the Holder reports; and what
// Release leaves: no holder, the mark lowered to the time issued.
func testRecord(t *testing.T, s *k8stest.Server, ns string) {
	admin := newClient(t, s, s.Token(k8stest.Admin))
	l, err := machineid_k8s.New(admin.CoordinationV1(), machineid_k8s.WithNamespace(ns), machineid_k8s.WithPrefix("ids-"),
		machineid_k8s.WithIdentity("pod-a"), machineid.WithTTL(1500*time.Millisecond), machineid.WithRange(3, 5))
	require.NoError(t, err, "New")
	id, err := machineID(l)
	require.NoError(t, err, "MachineID")
	assert.Equal(t, int64(3), id, "the lowest ID of the range")

	lease := getLease(t, admin, ns, "ids-3")
	require.NotNil(t, lease.Spec.HolderIdentity)
	assert.Regexp(t, `^pod-a_[0-9a-f]{32}$`, *lease.Spec.HolderIdentity, "holderIdentity: the identity and the token")
	require.NotNil(t, lease.Spec.LeaseDurationSeconds)
	assert.Equal(t, int32(2), *lease.Spec.LeaseDurationSeconds, "a TTL of 1.5s rounded up")
	mark, err := time.Parse(time.RFC3339Nano, lease.Annotations["ringflake.io/mark"])
	require.NoError(t, err, "the mark annotation, RFC 3339")
	assert.True(t, mark.Equal(l.Lease().Until), "mark %v; want the Holder's Until %v", mark, l.Lease().Until)
	assert.NotContains(t, lease.Annotations, "ringflake.io/after", "a fresh ID inherits no mark")

	issued := time.Now().Add(-time.Second).Truncate(time.Microsecond)
	require.NoError(t, l.Release(issued), "Release")
	lease = getLease(t, admin, ns, "ids-3")
	assert.Nil(t, lease.Spec.HolderIdentity, "holderIdentity after Release")
	mark, err = time.Parse(time.RFC3339Nano, lease.Annotations["ringflake.io/mark"])
	require.NoError(t, err)
	assert.True(t, mark.Equal(issued), "mark after Release(%v) = %v; want it lowered to issued", issued, mark)

	again, err := machineid_k8s.New(admin.CoordinationV1(), machineid_k8s.WithNamespace(ns), machineid_k8s.WithPrefix("ids-"), machineid.WithRange(3, 5))
	require.NoError(t, err)
	t.Cleanup(func() { _ = again.Release(time.Time{}) })
	start := time.Now()
	id, err = machineID(again)
	require.NoError(t, err, "MachineID after a release")
	assert.Equal(t, int64(3), id, "the released ID, free at once")
	assert.Less(t, time.Since(start), ttl, "a released ID is taken without waiting out its duration")
	assert.True(t, again.Lease().After.Equal(issued), "After %v; want the released mark %v", again.Lease().After, issued)
}

// testTakeoverWaits abandons a holder and has another ask for its ID with
// one MachineID call: the ID is taken over only once the second holder
// has seen the Lease unchanged for its duration (2s) plus the safety
// margin (400ms), on its own clock, and its After is the first's Until.
func testTakeoverWaits(t *testing.T, s *k8stest.Server, ns string) {
	rng := machineid.WithRange(0, 0)
	ca := newClient(t, s, s.Token(k8stest.Admin))
	a := newHolder(t, ca, ns, rng)
	_, err := machineID(a)
	require.NoError(t, err)
	time.Sleep(ttl / 2)
	ca.cut.Store(true)
	until := getLease(t, newClient(t, s, s.Token(k8stest.Admin)), ns, "ringflake-machine-0").Annotations["ringflake.io/mark"]

	b := newHolder(t, newClient(t, s, s.Token(k8stest.Admin)), ns, rng)
	start := time.Now()
	id, err := machineID(b)
	waited := time.Since(start)
	require.NoError(t, err, "MachineID, which waits within its 5s for the abandoned Lease")
	assert.Equal(t, int64(0), id)
	assert.GreaterOrEqual(t, waited, ttl+ttl/5, "the takeover came %v after the first sight of the Lease; want the Lease's duration plus the margin", waited)
	assert.Equal(t, until, b.Lease().After.UTC().Format(time.RFC3339Nano), "After; want the abandoned holder's last mark")
	assert.False(t, a.Lease().Held, "the abandoned holder still says it holds the ID after it was taken over")
	t.Logf("taken over %v after the first call", waited.Round(time.Millisecond))
}

// testRenewAfterWrite changes a held Lease behind the holder's back (a
// label, as kubectl label would), so that the holder's next renewal, an
// update conditioned on its last write, conflicts: it reads the Lease
// again, finds itself still the holder, and keeps its lease.
func testRenewAfterWrite(t *testing.T, s *k8stest.Server, ns string) {
	admin := newClient(t, s, s.Token(k8stest.Admin))
	l := newHolder(t, admin, ns)
	id, err := machineID(l)
	require.NoError(t, err)
	leases := admin.CoordinationV1().Leases(ns)
	lease := getLease(t, admin, ns, fmt.Sprintf("ringflake-machine-%d", id))
	lease.Labels = map[string]string{"edited": "by-hand"}
	_, err = leases.Update(context.Background(), lease, metav1.UpdateOptions{})
	require.NoError(t, err, "labelling the Lease")
	until := l.Lease().Until

	deadline := time.Now().Add(2 * ttl)
	for time.Now().Before(deadline) {
		assert.True(t, l.Lease().Held, "the lease lost after a label was set on it: %v", l.Lease().Err)
		time.Sleep(50 * time.Millisecond)
	}
	assert.True(t, l.Lease().Until.After(until), "Until did not move past %v in two TTLs", until)
	assert.Equal(t, "by-hand", getLease(t, admin, ns, lease.Name).Labels["edited"], "the label kept")
}

// testTakenByAnother writes another holder into a held Lease: the holder's
// next renewal reports the loss, naming the new holder.
func testTakenByAnother(t *testing.T, s *k8stest.Server, ns string) {
	admin := newClient(t, s, s.Token(k8stest.Admin))
	l := newHolder(t, admin, ns, machineid.WithRange(0, 0))
	_, err := machineID(l)
	require.NoError(t, err)
	lost := make(chan machineid.Lease, 1)
	stop := l.Watch(func(lease machineid.Lease) {
		if !lease.Held && lease.Err != nil {
			select {
			case lost <- lease:
			default:
			}
		}
	})
	defer stop()
	lease := getLease(t, admin, ns, "ringflake-machine-0")
	intruder := "intruder"
	lease.Spec.HolderIdentity = &intruder
	_, err = admin.CoordinationV1().Leases(ns).Update(context.Background(), lease, metav1.UpdateOptions{})
	require.NoError(t, err)
	select {
	case got := <-lost:
		assert.ErrorIs(t, got.Err, machineid.ErrLeaseLost)
		assert.Contains(t, got.Err.Error(), `is held by "intruder"`)
	case <-time.After(2 * ttl):
		t.Fatalf("no loss reported within %v of another holder's write; lease %+v", 2*ttl, l.Lease())
	}
}

// testGarbageMark edits a released Lease's mark into something that is not
// a time: its ID is refused with an error naming the Lease and the
// annotation, never taken as unmarked, and the next ID is taken instead.
func testGarbageMark(t *testing.T, s *k8stest.Server, ns string) {
	admin := newClient(t, s, s.Token(k8stest.Admin))
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{
		Name: "ringflake-machine-0", Annotations: map[string]string{"ringflake.io/mark": "next tuesday"},
	}}
	_, err := admin.CoordinationV1().Leases(ns).Create(context.Background(), lease, metav1.CreateOptions{})
	require.NoError(t, err)

	only := newHolder(t, admin, ns, machineid.WithRange(0, 0))
	_, err = machineID(only)
	require.Error(t, err, "MachineID with the only ID's mark garbled")
	t.Log(err)
	for _, want := range []string{"ringflake-machine-0", "ringflake.io/mark", `"next tuesday"`, "not an RFC 3339 time"} {
		assert.Contains(t, err.Error(), want)
	}

	next := newHolder(t, admin, ns, machineid.WithRange(0, 1))
	id, err := machineID(next)
	require.NoError(t, err, "MachineID with another ID free")
	assert.Equal(t, int64(1), id, "the ID after the refused one")
}

// testMissingNamespace leases from a namespace that does not exist: the
// error says so, with the API server's own words.
func testMissingNamespace(t *testing.T, s *k8stest.Server, _ string) {
	l := newHolder(t, newClient(t, s, s.Token(k8stest.Admin)), "no-such-namespace")
	_, err := machineID(l)
	require.Error(t, err)
	t.Log(err)
	assert.Contains(t, err.Error(), "the namespace no-such-namespace does not exist")
	assert.Contains(t, err.Error(), `namespaces "no-such-namespace" not found`)
}

// testClockAhead hands an ID over from a holder whose clock runs 2s ahead
// to one whose clock is right: the second waits for its clock to pass the
// mark the first left, and the two issue disjoint IDs.
func testClockAhead(t *testing.T, s *k8stest.Server, ns string) {
	const skew = 2 * time.Second
	ahead := func() time.Time { return time.Now().Add(skew) }
	rng := machineid.WithRange(0, 0)
	a, err := ringflake.New(t.Context(), ringflake.WithMachineIDSource(newHolder(t, newClient(t, s, s.Token(k8stest.Admin)), ns, rng)),
		ringflake.WithClock(ahead))
	require.NoError(t, err, "New with a clock ahead")
	var last ringflake.ID
	for range 100 {
		last, err = a.NextID()
		require.NoError(t, err)
	}
	require.NoError(t, a.Close(), "Close with a clock ahead")

	start := time.Now()
	b, err := ringflake.New(t.Context(), ringflake.WithMachineIDSource(newHolder(t, newClient(t, s, s.Token(k8stest.Admin)), ns, rng)))
	require.NoError(t, err, "New with a right clock")
	defer b.Close()
	waited := time.Since(start)
	first, err := b.NextID()
	require.NoError(t, err)
	assert.Greater(t, first, last, "b's first ID not after a's last")
	assert.Greater(t, waited, skew-500*time.Millisecond, "New on the right clock took %v; want about the skew, %v", waited, skew)
}

// TestUnreachable leases through an API server address nothing listens
// on: MachineID fails soon, saying what it was doing and the dial's error.
func TestUnreachable(t *testing.T) {
	t.Parallel()
	cfg := &k8stest.Server{URL: "https://127.0.0.1:1"}
	c := newClient(t, cfg, "token")
	l := newHolder(t, c, "default")
	_, err := machineID(l)
	require.Error(t, err)
	t.Log(err)
	assert.Contains(t, err.Error(), "listing the Leases")
	assert.Contains(t, err.Error(), "connection refused")
}
