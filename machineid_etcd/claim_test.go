package machineid_etcd_test

import (
	"context"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/ringflake/ringflake/internal/etcdtest"
	"github.com/ringflake/ringflake/machineid"
)

// TestLowestFreeID checks that each Holder takes the lowest ID no live
// lease holds, and that a released ID is the lowest free one again (its
// mark, lowered to a past time, does not stand in the way).
func TestLowestFreeID(t *testing.T) {
	t.Parallel()
	e := etcdtest.Start(t)
	c := newClient(t, e.Endpoints())
	rng := machineid.WithRange(5, 9)
	a, b := newHolder(t, c, rng), newHolder(t, c, rng)
	assert.Equal(t, int64(5), acquire(t, a), "first MachineID; want the range's lowest")
	assert.Equal(t, int64(6), acquire(t, b), "second MachineID; want the next")
	require.NoError(t, a.Release(time.Now()), "Release")
	assert.Equal(t, int64(5), acquire(t, newHolder(t, c, rng)), "MachineID after 5 was released; want 5 again")
}

// TestPrefersPassedMark checks that a Holder skips a free ID whose mark is
// ahead of its clock for one it can issue on at once, and takes the free ID
// with the earliest mark when every free one is ahead.
func TestPrefersPassedMark(t *testing.T) {
	t.Parallel()
	e := etcdtest.Start(t)
	c := newClient(t, e.Endpoints())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for id, ahead := range map[string]time.Duration{"0": time.Hour, "1": 10 * time.Minute, "2": 20 * time.Minute} {
		_, err := c.Put(ctx, "ringflake/machineid/mark/"+id, strconv.FormatInt(time.Now().Add(ahead).UnixNano(), 10))
		require.NoError(t, err)
	}
	assert.Equal(t, int64(3), acquire(t, newHolder(t, c, machineid.WithRange(0, 3))), "ID with 0..2's marks ahead; want 3, which has none")
	l := newHolder(t, c, machineid.WithRange(0, 2))
	assert.Equal(t, int64(1), acquire(t, l), "ID with every free mark ahead; want 1, the earliest")
	after := record(t, l).last().After
	assert.InDelta(t, 10*time.Minute, time.Until(after), float64(time.Minute), "After = %v; want 1's mark, 10 minutes ahead", after)
}

// TestExclusiveUnderContention has more Holders than IDs, each with its own
// client, acquire at once: every ID goes to exactly one, and the others are
// refused with ErrExhausted. The losers wait for an ID to free until their
// deadline, so the leases are long enough that none runs out meanwhile: a
// lease that ran out would rightly go to a loser (with the test TTL of 1s,
// an etcd that a loaded machine held back for a second let most of them
// run out at once).
func TestExclusiveUnderContention(t *testing.T) {
	t.Parallel()
	e := etcdtest.Start(t)
	const ids, leasers = 8, 20
	ls := make([]*machineid.Holder, leasers)
	for i := range ls {
		ls[i] = newHolder(t, newClient(t, e.Endpoints()), machineid.WithRange(0, ids-1), machineid.WithTTL(time.Minute))
	}
	got := make([]int64, leasers)
	errs := make([]error, leasers)
	var g errgroup.Group
	for i, l := range ls {
		g.Go(func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			got[i], errs[i] = l.MachineID(ctx)
			return nil
		})
	}
	require.NoError(t, g.Wait())
	var held []int64
	for i := range ls {
		if errs[i] != nil {
			assert.ErrorIs(t, errs[i], machineid.ErrExhausted, "leaser %d", i)
			continue
		}
		held = append(held, got[i])
	}
	sort.Slice(held, func(i, j int) bool { return held[i] < held[j] })
	assert.Equal(t, []int64{0, 1, 2, 3, 4, 5, 6, 7}, held, "IDs held; want each of 0..7 exactly once")

	c := newClient(t, e.Endpoints())
	tokens := map[string]bool{}
	for id := range int64(ids) {
		tok := owner(t, c, id)
		assert.NotEmpty(t, tok, "owner of %d", id)
		assert.False(t, tokens[tok], "token %s owns two IDs", tok)
		tokens[tok] = true
	}
}
