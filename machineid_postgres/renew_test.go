package machineid_postgres_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake/internal/holderclock"
	"github.com/ringflake/ringflake/machineid"
	mp "github.com/ringflake/ringflake/machineid_postgres"
)

func held(l machineid.Lease) bool    { return l.Held }
func notHeld(l machineid.Lease) bool { return !l.Held }

// TestRenewalRaisesUntil checks that renewals raise the confirmed mark
// ahead of the holder's clock, and report it only once the database holds
// it.
func TestRenewalRaisesUntil(t *testing.T) {
	t.Parallel()
	_, pool := startDB(t)
	l := newLeaser(t, pool)
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
		r := readRow(t, pool, id)
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
	srv, pool := startDB(t)
	ahead := func() time.Time { return time.Now().Add(time.Hour) }
	behind := func() time.Time { return time.Now().Add(-time.Hour) }
	off := machineid.WithMaxClockOffset(-1)
	old, abandon := ownLeaser(t, srv, machineid.WithRange(0, 0), off)
	holderclock.Set(old, ahead)
	oldRec := watch(t, old)
	_, err := old.MachineID(ctxT(t))
	require.NoError(t, err)
	time.Sleep(ttl / 2) // a renewal or so
	abandon()
	lost, _ := oldRec.await(t, 0, 2*ttl, "the lease lost", func(l machineid.Lease) bool { return l.ID == 0 && !l.Held })
	assert.ErrorIs(t, lost.Err, machineid.ErrLeaseLost)
	var lastUntil time.Time
	for _, r := range oldRec.all() {
		if r.Held {
			lastUntil = r.Until
		}
	}
	expires := readRow(t, pool, 0).expiresAt

	next := newLeaser(t, pool, machineid.WithRange(0, 0), off)
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

// TestLossReportedWhenServerStops stops the database under a holder: the
// loss must be reported, from the Holder's deadline, with the failed
// renewal as its cause; the holder must get its ID back once the database
// is up again. What is timed is the Holder's deadline, not the watcher's
// receipt of the loss, which a loaded machine delays past the row's expiry
// with nothing wrong: the deadline is the sending of the last call the
// database answered plus TTL − margin at the latest (the Holder sets it
// from its own send time, read before the call reaches the DB the test
// gives it), and it must come before the row expires by the database's
// clock, which a newcomer's take waits for.
func TestLossReportedWhenServerStops(t *testing.T) {
	t.Parallel()
	srv, pool := startDB(t)
	logExpiries(t, pool)
	const margin = ttl / 5
	db := &sendLog{DB: pool}
	l := newLeaser(t, db, machineid.WithSafetyMargin(margin))
	rec := watch(t, l)
	id, err := l.MachineID(ctxT(t))
	require.NoError(t, err)
	first, i := rec.await(t, 0, ttl, "the lease", held)
	rec.await(t, i+1, ttl, "a renewal", held)

	srv.Stop()
	stopped := time.Now()
	lost, i := rec.await(t, i, 2*ttl, "the lease lost", notHeld)
	assert.ErrorIs(t, lost.Err, machineid.ErrLeaseLost, "the cause is the lease running out")
	assert.ErrorContains(t, lost.Err, "was confirmed within TTL", "the loss is the deadline's")
	assert.ErrorContains(t, lost.Err, "renewing machine ID", "the cause wraps the failed renewal")
	sent := db.lastAnswered()
	require.False(t, sent.IsZero(), "the database answered the take and a renewal")
	srv.Start()
	back, _ := rec.await(t, i, 2*ttl, "the lease back", held)
	assert.Equal(t, id, back.ID, "the holder gets its own ID back")
	assert.Equal(t, first.After, back.After, "the same holder keeps its After")

	var expires time.Time
	require.NoError(t, pool.QueryRow(ctxT(t), `SELECT max(expires_at) FROM expiries WHERE logged_at < $1`, stopped).Scan(&expires))
	deadline := sent.Round(0).Add(ttl - margin)
	assert.True(t, deadline.Before(expires), "the Holder's deadline, at most %v (the last answered call, sent at %v, + TTL − margin), is not before the row expired at %v by the database's clock", deadline, sent, expires)
}

// sendLog is a DB that notes when each query of a take or renewal was sent
// and whether the database answered it.
type sendLog struct {
	mp.DB
	mu   sync.Mutex
	last time.Time // the sending of the latest query answered
}

func (d *sendLog) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return answered{d.DB.QueryRow(ctx, sql, args...), d, time.Now()}
}

// lastAnswered returns when the latest query the database answered was
// sent.
func (d *sendLog) lastAnswered() time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.last
}

// answered is a row of sendLog's, which notes its query's sending once it
// scans without error.
type answered struct {
	pgx.Row
	d    *sendLog
	sent time.Time
}

func (r answered) Scan(dest ...any) error {
	err := r.Row.Scan(dest...)
	if err == nil {
		r.d.mu.Lock()
		if r.sent.After(r.d.last) {
			r.d.last = r.sent
		}
		r.d.mu.Unlock()
	}
	return err
}

// logExpiries makes the database log every expires_at it writes to the
// default table, in a table expiries, with when it wrote it.
func logExpiries(t *testing.T, db mp.DB) {
	t.Helper()
	for _, stmt := range []string{
		`CREATE TABLE expiries (id bigint, owner text, expires_at timestamptz, logged_at timestamptz DEFAULT clock_timestamp())`,
		`CREATE FUNCTION log_expiry() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO expiries (id, owner, expires_at) VALUES (NEW.id, NEW.owner, NEW.expires_at);
  RETURN NEW;
END $$`,
		`CREATE TRIGGER log_expiry AFTER INSERT OR UPDATE ON ringflake_machine_ids FOR EACH ROW EXECUTE FUNCTION log_expiry()`,
	} {
		_, err := db.Exec(ctxT(t), stmt)
		require.NoError(t, err, stmt)
	}
}

// TestTakenRowReportsLost gives the holder's row to another owner behind
// its back: the next renewal must report the loss at once, as ErrLost,
// and the holder must take the lowest free ID instead.
func TestTakenRowReportsLost(t *testing.T) {
	t.Parallel()
	_, pool := startDB(t)
	l := newLeaser(t, pool)
	rec := watch(t, l)
	id, err := l.MachineID(ctxT(t))
	require.NoError(t, err)
	require.Equal(t, int64(0), id)
	_, i := rec.await(t, 0, ttl, "the lease", held)
	_, err = pool.Exec(ctxT(t), `UPDATE ringflake_machine_ids SET owner = 'intruder' WHERE id = 0`)
	require.NoError(t, err)

	lost, i := rec.await(t, i, ttl, "the lease lost", notHeld)
	assert.ErrorIs(t, lost.Err, machineid.ErrLeaseLost)
	assert.Equal(t, int64(0), lost.ID)
	again, _ := rec.await(t, i, ttl, "a new lease", held)
	assert.Equal(t, int64(1), again.ID, "ID 0 is the intruder's; 1 is the lowest free")
	owner := readRow(t, pool, 0).owner
	require.NotNil(t, owner)
	assert.Equal(t, "intruder", *owner, "the holder must not take back a row another owns")
}

// TestCallTimeoutBoundsRenewals pauses the database: renewals hang, and
// the call timeout must end each one, so that the lease lost names a
// timed-out renewal as its cause. A renewal that hung would leave the loss
// with no cause. Which comes first, the deadline or the first timeout, is
// up to the scheduler on a loaded machine, so the loss may be reported
// before its cause: a renewal that times out then tells the watchers again.
func TestCallTimeoutBoundsRenewals(t *testing.T) {
	t.Parallel()
	srv, pool := startDB(t)
	l := newLeaser(t, pool, machineid.WithCallTimeout(100*time.Millisecond))
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
