package machineid_mysql_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake/internal/holderclock"
	"github.com/ringflake/ringflake/internal/mysqltest"
	"github.com/ringflake/ringflake/machineid"
	mm "github.com/ringflake/ringflake/machineid_mysql"
)

// TestRenewalRaisesUntil checks that renewals raise the confirmed mark
// ahead of the holder's clock, and report it only once the database holds
// it.
func TestRenewalRaisesUntil(t *testing.T) {
	t.Parallel()
	db := sharedDB(t)
	l := newLeaser(t, db)
	rec := watch(t, l)
	id, err := l.MachineID(ctxT(t))
	require.NoError(t, err)
	first, i := rec.await(t, 0, ttl, "the first lease", held)
	assert.WithinDuration(t, time.Now().Add(ttl), first.Until, ttl/3, "Until is the holder's clock plus the TTL")
	last := first
	for range 3 {
		next, j := rec.await(t, i+1, ttl, "a renewal", held)
		assert.True(t, next.Until.After(last.Until), "each renewal raises Until: %v after %v", next.Until, last.Until)
		assert.Equal(t, first.After, next.After, "a renewal keeps After")
		r := readRow(t, db, id)
		require.NotNil(t, r.mark)
		assert.False(t, r.mark.Before(next.Until), "the database's mark %v is below the reported Until %v", *r.mark, next.Until)
		last, i = next, j
	}
	for _, rep := range rec.all() {
		assert.True(t, rep.ID == -1 || rep.Held, "a lease that renews without trouble stays held: %+v", rep)
	}
}

// TestExpiryByDatabaseClock abandons a holder whose clock is an hour ahead
// and has a holder whose clock is an hour behind wait for its ID: the row
// expires a TTL after its last renewal by the database's clock, whatever the
// holders' clocks say, and the new holder inherits the old one's mark. The
// clock check is off, so that the holders' clocks may be an hour off.
func TestExpiryByDatabaseClock(t *testing.T) {
	t.Parallel()
	dsn := mysqltest.Shared(t)
	db := newPool(t, dsn)
	require.NoError(t, mm.CreateTable(ctxT(t), db, ""))
	ahead := func() time.Time { return time.Now().Add(time.Hour) }
	behind := func() time.Time { return time.Now().Add(-time.Hour) }
	off := machineid.WithMaxClockOffset(-1)
	oldDB := newPool(t, dsn)
	old := newLeaser(t, oldDB, machineid.WithRange(0, 0), off)
	holderclock.Set(old, ahead)
	oldRec := watch(t, old)
	_, err := old.MachineID(ctxT(t))
	require.NoError(t, err)
	time.Sleep(ttl / 2) // a renewal or so
	require.NoError(t, oldDB.Close())
	lost, _ := oldRec.await(t, 0, 2*ttl, "the lease lost", func(l machineid.Lease) bool { return l.ID == 0 && !l.Held })
	assert.ErrorIs(t, lost.Err, machineid.ErrLeaseLost)
	var lastUntil time.Time
	for _, r := range oldRec.all() {
		if r.Held {
			lastUntil = r.Until
		}
	}
	expires := readRow(t, db, 0).expiresAt

	next := newLeaser(t, db, machineid.WithRange(0, 0), off)
	holderclock.Set(next, behind)
	ctx, cancel := context.WithDeadline(context.Background(), expires.Add(ttl))
	defer cancel()
	_, err = next.MachineID(ctx) // waits for ID 0 to free
	require.NoError(t, err, "ID 0 did not come free within a TTL of its expiry, %v", expires)
	taken := time.Now()
	assert.False(t, taken.Before(expires), "ID 0 was taken at %v, before it expired at %v by the database's clock", taken, expires)
	assert.True(t, lost.at.Before(expires), "the old holder was told of the loss at %v, after the row expired at %v", lost.at, expires)
	assert.False(t, next.Lease().After.Before(lastUntil), "the new holder's After %v is below the old holder's last Until %v", next.Lease().After, lastUntil)
}

// TestTakenRowReportsLost gives the holder's row to another owner behind
// its back: the next renewal must report the loss at once, as ErrLost,
// and the holder must take the lowest free ID instead.
func TestTakenRowReportsLost(t *testing.T) {
	t.Parallel()
	db := sharedDB(t)
	l := newLeaser(t, db)
	rec := watch(t, l)
	id, err := l.MachineID(ctxT(t))
	require.NoError(t, err)
	require.Equal(t, int64(0), id)
	_, i := rec.await(t, 0, ttl, "the lease", held)
	_, err = db.ExecContext(ctxT(t), `UPDATE ringflake_machine_ids SET owner = 'intruder' WHERE id = 0`)
	require.NoError(t, err)

	lost, i := rec.await(t, i, ttl, "the lease lost", notHeld)
	assert.ErrorIs(t, lost.Err, machineid.ErrLeaseLost)
	assert.Equal(t, int64(0), lost.ID)
	again, _ := rec.await(t, i, ttl, "a new lease", held)
	assert.Equal(t, int64(1), again.ID, "ID 0 is the intruder's; 1 is the lowest free")
	owner := readRow(t, db, 0).owner
	require.NotNil(t, owner)
	assert.Equal(t, "intruder", *owner, "the holder must not take back a row another owns")
}

// TestLossReportedWhenServerFails stops the database under a holder (a
// shutdown, a kill -9, a pause with SIGSTOP) for longer than the TTL: the
// loss must be reported, with the failed renewal as its cause, before the
// last expiry the database wrote for the row; and the holder must get its
// ID back once the database answers again.
func TestLossReportedWhenServerFails(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name         string
		fail, answer func(*mysqltest.Server)
	}{
		{"shutdown", (*mysqltest.Server).Stop, (*mysqltest.Server).Start},
		{"kill -9", (*mysqltest.Server).Kill, (*mysqltest.Server).Start},
		{"SIGSTOP", (*mysqltest.Server).Pause, (*mysqltest.Server).Resume},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, db := startDB(t)
			logExpiries(t, db)
			l := newLeaser(t, db)
			rec := watch(t, l)
			id, err := l.MachineID(ctxT(t))
			require.NoError(t, err)
			first, i := rec.await(t, 0, ttl, "the lease", held)

			tt.fail(srv)
			failed := time.Now()
			lost, i := rec.await(t, i, 2*ttl, "the lease lost", notHeld)
			assert.ErrorIs(t, lost.Err, machineid.ErrLeaseLost, "the cause is the lease running out")
			assert.ErrorContains(t, lost.Err, "renewing machine ID", "the cause wraps the failed renewal")
			time.Sleep(time.Until(failed.Add(ttl))) // longer than the TTL
			tt.answer(srv)
			back, _ := rec.await(t, i, 3*ttl, "the lease back", held)
			assert.Equal(t, id, back.ID, "the holder gets its own ID back")
			assert.Equal(t, first.After, back.After, "the same holder keeps its After")

			// The database's clock is this machine's.
			var expires int64
			require.NoError(t, db.QueryRowContext(ctxT(t), `SELECT MAX(TIMESTAMPDIFF(MICROSECOND, TIMESTAMP'1970-01-01 00:00:00', expires_at))
FROM expiries WHERE logged_at < TIMESTAMPADD(MICROSECOND, ?, TIMESTAMP'1970-01-01 00:00:00')`, failed.UnixMicro()).Scan(&expires))
			assert.True(t, lost.at.Before(time.UnixMicro(expires)), "the loss was reported at %v, after the row expired at %v by the database's clock", lost.at, time.UnixMicro(expires))
			t.Logf("the loss was reported %v after the failure, %v before the row's expiry", lost.at.Sub(failed).Round(time.Millisecond), time.UnixMicro(expires).Sub(lost.at).Round(time.Millisecond))
		})
	}
}

// logExpiries makes the database log every expires_at it writes to the
// default table for an owner, in a table expiries, with when it wrote it.
func logExpiries(t *testing.T, db mm.DB) {
	t.Helper()
	for _, stmt := range []string{
		`CREATE TABLE expiries (id BIGINT, owner VARCHAR(64), expires_at DATETIME(6), logged_at DATETIME(6))`,
		`CREATE TRIGGER log_expiry AFTER UPDATE ON ringflake_machine_ids FOR EACH ROW
INSERT INTO expiries VALUES (NEW.id, NEW.owner, NEW.expires_at, UTC_TIMESTAMP(6))`,
	} {
		_, err := db.ExecContext(ctxT(t), stmt)
		require.NoError(t, err, stmt)
	}
}

// TestCallTimeoutBoundsRenewals pauses the database: renewals hang, and
// the call timeout must end each one, so that the lease lost names a
// timed-out renewal as its cause. A renewal that hung would leave the loss
// with no cause. Which comes first, the deadline or the first timeout, is
// up to the scheduler on a loaded machine, so the loss may be reported
// before its cause: a renewal that times out then tells the watchers again.
func TestCallTimeoutBoundsRenewals(t *testing.T) {
	t.Parallel()
	srv, db := startDB(t)
	l := newLeaser(t, db, machineid.WithCallTimeout(100*time.Millisecond))
	rec := watch(t, l)
	_, err := l.MachineID(ctxT(t))
	require.NoError(t, err)
	_, i := rec.await(t, 0, ttl, "the lease", held)
	srv.Pause()
	defer srv.Resume()
	lost, i := rec.await(t, i, 2*ttl, "the lease lost", notHeld)
	assert.ErrorIs(t, lost.Err, machineid.ErrLeaseLost)
	timedOut, _ := rec.await(t, i, 2*ttl, "the lease lost to a timed-out renewal", func(l machineid.Lease) bool {
		return !l.Held && errors.Is(l.Err, context.DeadlineExceeded)
	})
	assert.ErrorIs(t, timedOut.Err, machineid.ErrLeaseLost)
	assert.ErrorContains(t, timedOut.Err, "renewing machine ID", "the cause should be a timed-out renewal")
	assert.Equal(t, lost.ID, timedOut.ID, "the same lease")
}
