package machineid_postgres_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/ringflake/ringflake/machineid"
	mp "github.com/ringflake/ringflake/machineid_postgres"
)

func TestLowestFreeID(t *testing.T) {
	t.Parallel()
	srv, pool := startDB(t)
	take := func() (*mp.Leaser, int64) {
		l := newLeaser(t, pool, mp.WithRange(5, 9))
		id, err := l.MachineID(ctxT(t))
		require.NoError(t, err)
		return l, id
	}
	var ls []*mp.Leaser
	for want := int64(5); want <= 7; want++ {
		l, id := take()
		assert.Equal(t, want, id, "the lowest free ID in 5..9")
		ls = append(ls, l)
	}

	// A released ID is free at once, and the lowest again.
	issued := time.Now().Add(-time.Second)
	require.NoError(t, ls[1].Release(issued))
	l, id := take()
	assert.Equal(t, int64(6), id, "the released ID 6 is the lowest free")
	assert.False(t, l.Lease().After.Before(issued), "After = %v; want at or past the time the previous holder issued up to, %v", l.Lease().After, issued)

	// A lease whose holder stopped renewing (its client is gone) is free
	// once it expires by the database's clock.
	crashed, abandon := ownLeaser(t, srv, mp.WithRange(8, 8))
	_, err := crashed.MachineID(ctxT(t))
	require.NoError(t, err)
	abandon()
	_, id = take()
	assert.Equal(t, int64(9), id, "ID 8 is held until it expires")
	time.Sleep(ttl + 100*time.Millisecond)
	_, id = take()
	assert.Equal(t, int64(8), id, "ID 8 expired")
}

func TestExclusiveUnderContention(t *testing.T) {
	t.Parallel()
	srv, _ := startDB(t)
	const clients, ids = 24, 16
	for round := range 2 {
		leasers := make([]*mp.Leaser, clients)
		got := make([]int64, clients)
		errs := make([]error, clients)
		var g errgroup.Group
		for i := range leasers {
			leasers[i] = newLeaser(t, newPool(t, srv.DSN()), mp.WithRange(0, ids-1))
			g.Go(func() error {
				got[i], errs[i] = leasers[i].MachineID(ctxT(t))
				return nil
			})
		}
		require.NoError(t, g.Wait())
		var taken []int64
		for i, err := range errs {
			if err != nil {
				assert.ErrorIs(t, err, mp.ErrExhausted, "round %d: client %d failed for another reason than a full range", round, i)
				continue
			}
			taken = append(taken, got[i])
		}
		slices.Sort(taken)
		want := make([]int64, ids)
		for i := range want {
			want[i] = int64(i)
		}
		assert.Equal(t, want, taken, "round %d: every ID taken exactly once, and nobody refused while one was free", round)
		for _, l := range leasers {
			require.NoError(t, l.Release(time.Time{}))
		}
	}
}

// TestChurnKeepsLeasesApart has clients take, hold and release a few IDs
// over and over, and checks, from when each was told its lease was held and
// not held, that no two ever held one ID at once, and that each holder's
// After covers what the previous holder issued and the After it had.
func TestChurnKeepsLeasesApart(t *testing.T) {
	t.Parallel()
	srv, _ := startDB(t)
	const clients, ids = 6, 3
	type span struct {
		who      int
		id       int64
		from, to time.Time // when the holder was told its lease was held, and not held
		after    time.Time // the lease's After
		issued   time.Time // what the holder passed to Release
	}
	var (
		mu    sync.Mutex
		spans []span
	)
	end := time.Now().Add(2 * time.Second)
	var g errgroup.Group
	for c := range clients {
		l, _ := ownLeaser(t, srv, mp.WithRange(0, ids-1))
		rec := watch(t, l)
		g.Go(func() error {
			rng := rand.New(rand.NewPCG(uint64(c), 1))
			for time.Now().Before(end) {
				from := rec.len()
				id, err := l.MachineID(context.Background())
				if errors.Is(err, mp.ErrExhausted) {
					time.Sleep(time.Duration(rng.IntN(20)) * time.Millisecond)
					continue
				}
				if err != nil {
					return fmt.Errorf("client %d: %w", c, err)
				}
				held, i, err := rec.wait(from, ttl, "held", func(l machineid.Lease) bool { return l.Held })
				if err != nil {
					return err
				}
				time.Sleep(time.Duration(rng.IntN(30)) * time.Millisecond)
				issued := time.Now().Add(-time.Duration(rng.IntN(20)) * time.Millisecond)
				if err := l.Release(issued); err != nil {
					return fmt.Errorf("client %d: %w", c, err)
				}
				released, _, err := rec.wait(i, ttl, "not held", func(l machineid.Lease) bool { return !l.Held })
				if err != nil {
					return err
				}
				mu.Lock()
				spans = append(spans, span{who: c, id: id, from: held.at, to: released.at, after: held.After, issued: issued})
				mu.Unlock()
			}
			return nil
		})
	}
	require.NoError(t, g.Wait())
	byID := map[int64][]span{}
	for _, s := range spans {
		byID[s.id] = append(byID[s.id], s)
	}
	require.Len(t, byID, ids, "every ID should have been held")
	for id, ss := range byID {
		slices.SortFunc(ss, func(a, b span) int { return a.from.Compare(b.from) })
		for i := 1; i < len(ss); i++ {
			prev, cur := ss[i-1], ss[i]
			assert.True(t, prev.to.Before(cur.from), "ID %d: client %d was told it held it at %v, before client %d was told its lease ended, at %v", id, cur.who, cur.from, prev.who, prev.to)
			assert.False(t, cur.after.Before(prev.issued), "ID %d: client %d's After %v is below what client %d issued up to, %v", id, cur.who, cur.after, prev.who, prev.issued)
			assert.False(t, cur.after.Before(prev.after), "ID %d: client %d's After %v is below client %d's, %v", id, cur.who, cur.after, prev.who, prev.after)
		}
	}
	t.Logf("%d leases taken and released", len(spans))
}
