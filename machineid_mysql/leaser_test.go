package machineid_mysql_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/internal/mysqltest"
	"github.com/ringflake/ringflake/machineid"
	mm "github.com/ringflake/ringflake/machineid_mysql"
)

func TestLowestFreeID(t *testing.T) {
	t.Parallel()
	dsn := mysqltest.Shared(t)
	db := newPool(t, dsn)
	require.NoError(t, mm.CreateTable(ctxT(t), db, ""))
	take := func() (*machineid.Holder, int64) {
		l := newLeaser(t, db, machineid.WithRange(5, 9))
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
	crashedDB := newPool(t, dsn)
	crashed := newLeaser(t, crashedDB, machineid.WithRange(8, 8))
	_, err := crashed.MachineID(ctxT(t))
	require.NoError(t, err)
	require.NoError(t, crashedDB.Close())
	_, id = take()
	assert.Equal(t, int64(9), id, "ID 8 is held until it expires")
	require.Eventually(t, func() bool { return readRow(t, db, 8).expired }, 3*ttl, 10*time.Millisecond, "ID 8's row should expire a TTL after its last renewal")
	_, id = take()
	assert.Equal(t, int64(8), id, "ID 8 expired")
}

// TestExclusiveUnderContention has more clients than IDs take at once:
// every ID goes to exactly one, and the others are refused with
// ErrExhausted. The losers wait for an ID to free until their deadline, so
// the leases are long enough that none runs out meanwhile.
func TestExclusiveUnderContention(t *testing.T) {
	t.Parallel()
	dsn := mysqltest.Shared(t)
	require.NoError(t, mm.CreateTable(ctxT(t), newPool(t, dsn), ""))
	const clients, ids = 24, 16
	for round := range 2 {
		leasers := make([]*machineid.Holder, clients)
		got := make([]int64, clients)
		errs := make([]error, clients)
		var g errgroup.Group
		for i := range leasers {
			leasers[i] = newLeaser(t, newPool(t, dsn), machineid.WithRange(0, ids-1), machineid.WithTTL(time.Minute))
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

// TestReleaseLowersMark checks the mark Release leaves: lowered to what the
// holder issued, but never below the mark it inherited nor above the one it
// had; kept when issued is unknown.
func TestReleaseLowersMark(t *testing.T) {
	t.Parallel()
	db := sharedDB(t)
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
			prev := newLeaser(t, db, machineid.WithRange(id, id))
			_, err := prev.MachineID(ctxT(t))
			require.NoError(t, err)
			require.NoError(t, prev.Release(inherited))

			l := newLeaser(t, db, machineid.WithRange(id, id))
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
			r := readRow(t, db, id)
			assert.Nil(t, r.owner, "a released row has no owner")
			assert.Nil(t, r.holder, "a released row names no holder")
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
	db := sharedDB(t)
	l := newLeaser(t, db)
	id, err := l.MachineID(ctxT(t))
	require.NoError(t, err)
	_, err = db.ExecContext(ctxT(t), `UPDATE ringflake_machine_ids SET owner = 'other' WHERE id = ?`, id)
	require.NoError(t, err)
	before := readRow(t, db, id)
	require.NoError(t, l.Release(time.Unix(1, 0)))
	after := readRow(t, db, id)
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
	db := sharedDB(t)
	l, err := mm.New(db, mm.WithTable("no_such_table"))
	require.NoError(t, err)
	require.NoError(t, l.Release(time.Now()), "nothing to release, and no statement to fail")

	l = newLeaser(t, db)
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
	srv, db := startDB(t)

	t.Run("cancelled", func(t *testing.T) {
		l := newLeaser(t, db)
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
		assert.Less(t, time.Since(start), 2*time.Second, "MachineID should return soon after its context's deadline")

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
		case <-time.After(5 * time.Second):
			t.Fatal("MachineID did not return soon after Release")
		}
	})
}

func TestMissingTable(t *testing.T) {
	t.Parallel()
	db := sharedDB(t)
	l := newLeaser(t, db, mm.WithTable("elsewhere"))
	_, err := l.MachineID(ctxT(t))
	require.Error(t, err)
	assert.ErrorContains(t, err, "table elsewhere does not exist; create it with TableSQL or CreateTable")
	require.NoError(t, mm.CreateTable(ctxT(t), db, "elsewhere"))
	require.NoError(t, mm.CreateTable(ctxT(t), db, "elsewhere"), "CreateTable twice")
	_, err = l.MachineID(ctxT(t))
	assert.NoError(t, err)
}

// TestGeneratorFollowsLease checks the Leaser with a real generator: it
// issues on the leased ID, within the lease's marks, and its Close releases
// the ID and lowers the mark to what it issued.
func TestGeneratorFollowsLease(t *testing.T) {
	t.Parallel()
	// Close releases, which the call timeout (TTL/3) bounds; a longer
	// lease than the package's, as machineid_postgres found under load.
	const long = 3 * ttl
	db := sharedDB(t)
	l := newLeaser(t, db, machineid.WithRange(3, 3), machineid.WithTTL(long))
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

	r := readRow(t, db, 3)
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
