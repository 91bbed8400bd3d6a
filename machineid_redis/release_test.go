package machineid_redis_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/machineid"
)

// longTTL puts a mark seconds ahead, far more than any call here takes.
const longTTL = 3 * time.Second

// A renewal raises the mark a TTL ahead; releasing with the time really
// issued brings it back down, never below what the holder inherited, and
// releasing with the zero Time (unknown) keeps it.
func TestReleaseLowersTheMarkToIssued(t *testing.T) {
	t.Parallel()
	c := client(t, settled(t, longTTL+3*bound).Addr)
	long := machineid.WithTTL(longTTL) // a mark seconds ahead makes the difference plain

	a := leased(t, c, machineid.WithRange(3, 3), long)
	_, err := a.MachineID(acquireCtx(t))
	require.NoError(t, err)
	require.True(t, leaseOf(a).Until.After(time.Now().Add(longTTL/2)), "the mark is raised a TTL ahead")
	issued := time.Now().Add(-time.Second).Truncate(time.Millisecond)
	require.NoError(t, a.Release(issued))

	b := leased(t, c, machineid.WithRange(3, 3), long)
	_, err = b.MachineID(acquireCtx(t))
	require.NoError(t, err)
	assert.True(t, leaseOf(b).After.Equal(issued), "the next holder inherits the time really issued: After = %v; want %v", leaseOf(b).After, issued)

	// What a generator that issued nothing passes: the instant before its epoch.
	nothing := ringflake.DefaultLayout().Epoch.Add(-time.Nanosecond)
	require.NoError(t, b.Release(nothing), "b issued nothing")
	d := leased(t, c, machineid.WithRange(3, 3), long)
	_, err = d.MachineID(acquireCtx(t))
	require.NoError(t, err)
	assert.True(t, leaseOf(d).After.Equal(issued), "a holder that issued nothing hands on what it inherited, not less: After = %v", leaseOf(d).After)

	require.NoError(t, d.Release(time.Time{}), "issued unknown")
	e := leased(t, c, machineid.WithRange(3, 3), long)
	_, err = e.MachineID(acquireCtx(t))
	require.NoError(t, err)
	assert.True(t, leaseOf(e).After.After(time.Now().Add(longTTL/2)), "a Release with the zero Time keeps the mark set ahead")
}

// A generator's Close hands its latest issued time to the service, so a
// restarted process that gets the same ID starts issuing at once, and
// nothing repeats.
func TestGeneratorCloseLetsTheNextHolderStartAtOnce(t *testing.T) {
	t.Parallel()
	c := client(t, settled(t, longTTL+3*bound).Addr)
	long := machineid.WithTTL(longTTL)
	seen := map[ringflake.ID]bool{}
	for round := range 3 {
		svc := leased(t, c, machineid.WithRange(9, 9), long)
		g, err := ringflake.New(t.Context(), ringflake.WithMachineIDSource(svc), ringflake.WithMaxWait(100*time.Millisecond))
		require.NoError(t, err)
		for range 5000 {
			id, err := g.NextID()
			require.NoErrorf(t, err, "round %d: the ID's mark should be the last holder's issued time, not a TTL ahead", round)
			require.False(t, seen[id], "ID %d issued twice", id)
			seen[id] = true
			require.Equal(t, int64(9), g.Layout().Decompose(id).Machine)
		}
		require.NoError(t, g.Close())
	}
}
