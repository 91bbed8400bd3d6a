package machineid_postgres_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake/internal/pgtest"
	"github.com/ringflake/ringflake/machineid"
	mp "github.com/ringflake/ringflake/machineid_postgres"
)

// ttl is the lease TTL of most tests: short, so expiry tests stay short,
// and long enough that renewals keep up under the race detector on a
// loaded machine. At 1s, the call timeout of 333ms, which a write to a
// database a loaded machine holds back overran, lost leases and failed
// releases while the database could be reached (the conformance suite;
// TestGeneratorFollowsLease's Close, under the README's CPU hog).
const ttl = 2 * time.Second

var (
	_ mp.DB = (*pgxpool.Pool)(nil)
	_ mp.DB = (*pgx.Conn)(nil)
)

// TestMain runs a child process's part when the test binary was started as
// one (see process_test.go), else the tests.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(child())
	}
	os.Exit(m.Run())
}

// startDB starts a server with the default table and returns it with a
// pool to it.
func startDB(t *testing.T) (*pgtest.Server, *pgxpool.Pool) {
	t.Helper()
	srv := pgtest.Start(t)
	pool := newPool(t, srv.DSN())
	require.NoError(t, mp.CreateTable(ctxT(t), pool, ""))
	return srv, pool
}

// newPool returns a pool to dsn, closed when the test ends: a client of its
// own, as another process would have.
func newPool(t *testing.T, dsn string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), dsn)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

// newLeaser returns a Holder on db with the test TTL and opts, released
// when the test ends (before its pool closes: cleanups run last first).
func newLeaser(t *testing.T, db mp.DB, opts ...machineid.Option) *machineid.Holder {
	t.Helper()
	l, err := mp.New(db, append([]machineid.Option{machineid.WithTTL(ttl)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Release(time.Time{}) })
	return l
}

// ownLeaser returns a Holder with a pool of its own to srv, as another
// process would have, and a function that abandons it: its pool closes, so
// it stops talking to the database as a crashed process would, and
// releases nothing.
func ownLeaser(t *testing.T, srv *pgtest.Server, opts ...machineid.Option) (*machineid.Holder, func()) {
	t.Helper()
	pool := newPool(t, srv.DSN())
	return newLeaser(t, pool, opts...), pool.Close
}

// ctxT returns a context that ends with the test, or after 30 s.
func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// report is one lease a watcher was told about, and when.
type report struct {
	machineid.Lease
	at time.Time
}

// recorder records every lease a Holder reports to it.
type recorder struct {
	mu      sync.Mutex
	reports []report
	changed chan struct{} // closed and replaced on every report
}

// watch starts recording l's reports until the test ends.
func watch(t *testing.T, l machineid.Leaser) *recorder {
	r := &recorder{changed: make(chan struct{})}
	stop := l.Watch(func(lease machineid.Lease) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.reports = append(r.reports, report{lease, time.Now()})
		close(r.changed)
		r.changed = make(chan struct{})
	})
	t.Cleanup(stop)
	return r
}

// all returns the reports so far.
func (r *recorder) all() []report {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]report(nil), r.reports...)
}

// await returns the first report from index from on that satisfies ok, and
// its index, waiting for it at most d; it fails the test if none comes. It
// must be called from the test's goroutine.
func (r *recorder) await(t *testing.T, from int, d time.Duration, what string, ok func(machineid.Lease) bool) (report, int) {
	t.Helper()
	rep, i, err := r.wait(from, d, what, ok)
	if err != nil {
		t.Fatal(err)
	}
	return rep, i
}

// wait is await for any goroutine: it returns an error if no report comes.
func (r *recorder) wait(from int, d time.Duration, what string, ok func(machineid.Lease) bool) (report, int, error) {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		for i := from; i < len(r.reports); i++ {
			if ok(r.reports[i].Lease) {
				rep := r.reports[i]
				r.mu.Unlock()
				return rep, i, nil
			}
		}
		from = max(from, len(r.reports))
		changed := r.changed
		r.mu.Unlock()
		select {
		case <-changed:
		case <-deadline.C:
			return report{}, 0, fmt.Errorf("no report of %s within %v; reports: %+v", what, d, r.all())
		}
	}
}

// len returns how many reports there are so far.
func (r *recorder) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.reports)
}

// row is one machine ID's row, as the database holds it.
type row struct {
	owner     *string
	expiresAt time.Time
	mark      *time.Time
	inherited *time.Time
	expired   bool // expires_at has passed by the database's clock
}

// readRow reads machine ID id's row from the default table.
func readRow(t *testing.T, db mp.DB, id int64) row {
	t.Helper()
	var r row
	err := db.QueryRow(ctxT(t), `SELECT owner, expires_at, mark, inherited, expires_at < clock_timestamp()
FROM ringflake_machine_ids WHERE id = $1`, id).Scan(&r.owner, &r.expiresAt, &r.mark, &r.inherited, &r.expired)
	require.NoError(t, err, "reading machine ID %d's row", id)
	return r
}
