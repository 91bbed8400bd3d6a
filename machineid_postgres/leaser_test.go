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

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/machineid"
	mp "github.com/ringflake/ringflake/machineid_postgres"
)

func TestLowestFreeID(t *testing.T) {
	t.Parallel()
	srv, pool := startDB(t)
	take := func() (*machineid.Holder, int64) {
		l := newLeaser(t, pool, machineid.WithRange(5, 9))
		id, err := l.MachineID(ctxT(t))
		require.NoError(t, err)
		return l, id
	}
	var ls []*machineid.Holder
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
	crashed, abandon := ownLeaser(t, srv, machineid.WithRange(8, 8))
	_, err := crashed.MachineID(ctxT(t))
	require.NoError(t, err)
	abandon()
	_, id = take()
	assert.Equal(t, int64(9), id, "ID 8 is held until it expires")
	time.Sleep(ttl + 100*time.Millisecond)
	_, id = take()
	assert.Equal(t, int64(8), id, "ID 8 expired")
}

// TestExclusiveUnderContention has more clients than IDs take at once:
// every ID goes to exactly one, and the others are refused with
// ErrExhausted. The losers wait for an ID to free until their deadline, so
// the leases are long enough that none runs out meanwhile: a lease that ran
// out would rightly go to a loser (with the test TTL of 1s, a database that
// a loaded machine held back let three of them run out).
func TestExclusiveUnderContention(t *testing.T) {
	t.Parallel()
	srv, _ := startDB(t)
	const clients, ids = 24, 16
	for round := range 2 {
		leasers := make([]*machineid.Holder, clients)
		got := make([]int64, clients)
		errs := make([]error, clients)
		var g errgroup.Group
		for i := range leasers {
			leasers[i] = newLeaser(t, newPool(t, srv.DSN()), machineid.WithRange(0, ids-1), machineid.WithTTL(time.Minute))
			g.Go(func() error {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				got[i], errs[i] = leasers[i].MachineID(ctx)
				return nil
			})
		}
		require.NoError(t, g.Wait())
		var taken []int64
		for i, err := range errs {
			if err != nil {
				assert.ErrorIs(t, err, machineid.ErrExhausted, "round %d: client %d failed for another reason than a full range", round, i)
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
	// Every lease is released, none runs out, so the TTL is long: its call
	// timeout (TTL/3) bounds Release, and a busy machine can overrun the
	// test TTL's third of a second, a bound about the store, not what this
	// test asserts.
	const long = 6 * time.Second
	var g errgroup.Group
	for c := range clients {
		l, _ := ownLeaser(t, srv, machineid.WithRange(0, ids-1), machineid.WithTTL(long))
		rec := watch(t, l)
		g.Go(func() error {
			rng := rand.New(rand.NewPCG(uint64(c), 1))
			for time.Now().Before(end) {
				from := rec.len()
				// A deadline of its own, for the same reason.
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				id, err := l.MachineID(ctx)
				cancel()
				if errors.Is(err, machineid.ErrExhausted) {
					time.Sleep(time.Duration(rng.IntN(20)) * time.Millisecond)
					continue
				}
				if err != nil {
					return fmt.Errorf("client %d: %w", c, err)
				}
				held, i, err := rec.wait(from, long, "held", func(l machineid.Lease) bool { return l.Held })
				if err != nil {
					return err
				}
				time.Sleep(time.Duration(rng.IntN(30)) * time.Millisecond)
				issued := time.Now().Add(-time.Duration(rng.IntN(20)) * time.Millisecond)
				if err := l.Release(issued); err != nil {
					return fmt.Errorf("client %d: %w", c, err)
				}
				released, _, err := rec.wait(i, long, "not held", func(l machineid.Lease) bool { return !l.Held })
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

// TestReleaseLowersMark checks the mark Release leaves: lowered to what the
// holder issued, but never below the mark it inherited nor above the one it
// had; kept when issued is unknown.
func TestReleaseLowersMark(t *testing.T) {
	t.Parallel()
	_, pool := startDB(t)
	// One holder before each case's, so that the holder inherits a mark;
	// each case on an ID of its own.
	inherited := time.Now().Add(-2 * time.Second).Truncate(time.Microsecond)
	for i, tt := range []struct {
		name    string
		unknown bool          // Release gets the zero Time
		issued  time.Duration // else Release gets inherited + issued
		want    string        // the mark left: "issued", "inherited" or "until"
	}{
		{"unknown keeps the confirmed mark", true, 0, "until"},
		{"lowered to what was issued", false, time.Second + 1, "issued"}, // 1ns: rounded up to the µs
		{"never below the inherited mark", false, -time.Second, "inherited"},
		{"never raised", false, time.Hour, "until"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			id := int64(i)
			prev := newLeaser(t, pool, machineid.WithRange(id, id))
			_, err := prev.MachineID(ctxT(t))
			require.NoError(t, err)
			require.NoError(t, prev.Release(inherited))

			l := newLeaser(t, pool, machineid.WithRange(id, id))
			_, err = l.MachineID(ctxT(t))
			require.NoError(t, err)
			lease := l.Lease()
			require.True(t, lease.After.Equal(inherited), "After = %v; want the previous holder's release mark %v", lease.After, inherited)
			var issued time.Time
			if !tt.unknown {
				issued = inherited.Add(tt.issued)
			}
			require.NoError(t, l.Release(issued))
			require.NoError(t, l.Release(issued), "a second Release")

			want := map[string]time.Time{"issued": issued.Truncate(time.Microsecond).Add(time.Microsecond), "inherited": inherited, "until": lease.Until}[tt.want]
			r := readRow(t, pool, id)
			assert.Nil(t, r.owner, "a released row has no owner")
			require.NotNil(t, r.mark)
			assert.True(t, r.mark.Equal(want), "mark = %v; want %v (%s)", *r.mark, want, tt.want)
			assert.False(t, l.Lease().Held, "a released lease is not held")
			assert.ErrorIs(t, l.Lease().Err, machineid.ErrReleased)
		})
	}
}

// TestReleaseOnlyOwnRow checks that a Release whose row went to another
// owner leaves that owner's lease and mark alone.
func TestReleaseOnlyOwnRow(t *testing.T) {
	t.Parallel()
	_, pool := startDB(t)
	l := newLeaser(t, pool)
	id, err := l.MachineID(ctxT(t))
	require.NoError(t, err)
	_, err = pool.Exec(ctxT(t), `UPDATE ringflake_machine_ids SET owner = 'other' WHERE id = $1`, id)
	require.NoError(t, err)
	before := readRow(t, pool, id)
	require.NoError(t, l.Release(time.Unix(1, 0)))
	after := readRow(t, pool, id)
	require.NotNil(t, after.owner)
	assert.Equal(t, "other", *after.owner)
	assert.Equal(t, before.mark, after.mark, "the mark of a row the holder no longer owns")
	assert.Equal(t, before.expiresAt, after.expiresAt)
}

// TestReleaseBeforeMachineID checks that a Leaser that never took a lease
// releases without a word to the database, and that one released can take
// a lease again.
func TestReleaseBeforeMachineID(t *testing.T) {
	t.Parallel()
	_, pool := startDB(t)
	l, err := mp.New(pool, mp.WithTable("no_such_table"))
	require.NoError(t, err)
	require.NoError(t, l.Release(time.Now()), "nothing to release, and no statement to fail")

	l = newLeaser(t, pool)
	id, err := l.MachineID(ctxT(t))
	require.NoError(t, err)
	require.NoError(t, l.Release(time.Time{}))
	again, err := l.MachineID(ctxT(t))
	require.NoError(t, err, "a released Leaser takes a lease again")
	assert.Equal(t, id, again)
	assert.True(t, l.Lease().Held)
}

func TestMachineIDHonoursContext(t *testing.T) {
	t.Parallel()
	srv, pool := startDB(t)

	t.Run("cancelled", func(t *testing.T) {
		l := newLeaser(t, pool)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := l.MachineID(ctx)
		assert.ErrorIs(t, err, context.Canceled)
		assert.False(t, l.Lease().Held)
	})

	t.Run("hung database", func(t *testing.T) {
		l := newLeaser(t, newPool(t, srv.DSN()))
		srv.Pause()
		defer srv.Resume()
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := l.MachineID(ctx)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Less(t, time.Since(start), time.Second, "MachineID should return soon after its context's deadline")

		// Release cuts short a MachineID that would wait longer.
		done := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			_, err := l.MachineID(ctx)
			done <- err
		}()
		time.Sleep(50 * time.Millisecond)
		_ = l.Release(time.Time{}) // the database is paused: its own statement times out
		select {
		case err := <-done:
			assert.ErrorIs(t, err, machineid.ErrReleased)
		case <-time.After(2 * time.Second):
			t.Fatal("MachineID did not return soon after Release")
		}
	})
}

func TestMissingTable(t *testing.T) {
	t.Parallel()
	_, pool := startDB(t)
	l := newLeaser(t, pool, mp.WithTable("elsewhere"))
	_, err := l.MachineID(ctxT(t))
	require.Error(t, err)
	assert.ErrorContains(t, err, "table elsewhere does not exist; create it with TableSQL or CreateTable")
	require.NoError(t, mp.CreateTable(ctxT(t), pool, "elsewhere"))
	require.NoError(t, mp.CreateTable(ctxT(t), pool, "elsewhere"), "CreateTable twice")
	_, err = l.MachineID(ctxT(t))
	assert.NoError(t, err)
}

// TestGeneratorFollowsLease checks the Leaser with a real generator: it
// issues on the leased ID, within the lease's marks, and its Close releases
// the ID and lowers the mark to what it issued.
func TestGeneratorFollowsLease(t *testing.T) {
	t.Parallel()
	// Close releases, which the call timeout (TTL/3) bounds: at the
	// package's TTL, 667ms, a database held back by a loaded machine
	// overran it (under the README's CPU hog), so this lease is longer.
	const long = 3 * ttl
	_, pool := startDB(t)
	l := newLeaser(t, pool, machineid.WithRange(3, 3), machineid.WithTTL(long))
	g, err := ringflake.New(t.Context(), ringflake.WithMachineIDSource(l))
	require.NoError(t, err)
	id, err := g.NextID()
	require.NoError(t, err)
	parts := g.Layout().Decompose(id)
	assert.Equal(t, int64(3), parts.Machine)
	lease := g.Lease()
	assert.True(t, lease.Held)
	assert.False(t, parts.Time.After(lease.Until), "issued at %v, past Until %v", parts.Time, lease.Until)
	time.Sleep(long / 2) // a renewal
	last, err := g.NextID()
	require.NoError(t, err)
	require.NoError(t, g.Close())

	r := readRow(t, pool, 3)
	assert.Nil(t, r.owner, "Close releases the row")
	require.NotNil(t, r.mark)
	lastTime := g.Layout().Decompose(last).Time
	assert.False(t, r.mark.Before(lastTime), "mark %v is below the last time issued, %v", *r.mark, lastTime)
	assert.True(t, r.mark.Before(lastTime.Add(ttl/3)), "mark %v should come down to about the last time issued, %v", *r.mark, lastTime)
}

// TestReleaseBoundedWhenUnreachable pauses the database under a holder:
// Release must give up after about the call timeout, not the TTL, so that a
// process stops soon when its database cannot be reached.
func TestReleaseBoundedWhenUnreachable(t *testing.T) {
	t.Parallel()
	srv, _ := startDB(t)
	const callTimeout = 200 * time.Millisecond
	l := newLeaser(t, newPool(t, srv.DSN()), machineid.WithTTL(10*time.Second), machineid.WithCallTimeout(callTimeout))
	_, err := l.MachineID(ctxT(t))
	require.NoError(t, err)
	srv.Pause()
	defer srv.Resume()
	start := time.Now()
	err = l.Release(time.Now())
	took := time.Since(start)
	assert.Error(t, err, "the release cannot reach the database")
	// The Holder waits at most the call timeout for a call in flight, and
	// as long again (and a tenth) for its own; the bound is generous.
	assert.Less(t, took, 10*callTimeout, "Release took %v; want about the call timeout, %v, not the TTL", took, callTimeout)
	t.Logf("Release returned after %v: %v", took, err)
}
