package machineid_mysql_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake/internal/mysqltest"
	"github.com/ringflake/ringflake/machineid"
	mm "github.com/ringflake/ringflake/machineid_mysql"
)

// ttl is the lease TTL of most tests: short, so expiry tests stay short,
// and long enough that renewals keep up under the race detector on a
// loaded machine (machineid_postgres found 1s too short for that).
const ttl = 2 * time.Second

var (
	_ mm.DB = (*sql.DB)(nil)
	_ mm.DB = (*sql.Conn)(nil)
)

// TestMain runs a child process's part when the test binary was started as
// one (see process_test.go), else the tests.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(child())
	}
	code := m.Run()
	mysqltest.Cleanup()
	os.Exit(code)
}

// sharedDB returns a pool to a database of the test's own, with the
// default table, on the server the tests share: for tests that neither
// stop nor pause their server.
func sharedDB(t *testing.T) *sql.DB {
	t.Helper()
	db := newPool(t, mysqltest.Shared(t))
	require.NoError(t, mm.CreateTable(ctxT(t), db, ""))
	return db
}

// startDB starts a server with the default table and returns it with a
// pool to it.
func startDB(t *testing.T) (*mysqltest.Server, *sql.DB) {
	t.Helper()
	srv := mysqltest.Start(t)
	db := newPool(t, srv.DSN())
	require.NoError(t, mm.CreateTable(ctxT(t), db, ""))
	return srv, db
}

// newPool returns a pool to dsn, closed when the test ends: a client of its
// own, as another process would have.
func newPool(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// newLeaser returns a Holder on db with the test TTL and opts, released
// when the test ends (before its pool closes: cleanups run last first).
func newLeaser(t *testing.T, db mm.DB, opts ...machineid.Option) *machineid.Holder {
	t.Helper()
	l, err := mm.New(db, append([]machineid.Option{machineid.WithTTL(ttl)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Release(time.Time{}) })
	return l
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
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		for i := from; i < len(r.reports); i++ {
			if ok(r.reports[i].Lease) {
				rep := r.reports[i]
				r.mu.Unlock()
				return rep, i
			}
		}
		from = max(from, len(r.reports))
		changed := r.changed
		r.mu.Unlock()
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatal(fmt.Errorf("no report of %s within %v; reports: %+v", what, d, r.all()))
		}
	}
}

func held(l machineid.Lease) bool    { return l.Held }
func notHeld(l machineid.Lease) bool { return !l.Held }

// row is one machine ID's row, as the database holds it.
type row struct {
	owner     *string
	holder    *string
	expiresAt time.Time // UTC, the database's clock
	mark      *time.Time
	inherited *time.Time
	expired   bool // expires_at has passed by the database's clock
}

// readRow reads machine ID id's row from the default table.
func readRow(t *testing.T, db mm.DB, id int64) row {
	t.Helper()
	var (
		r               row
		exp             int64
		mark, inherited sql.NullInt64
	)
	const us = "TIMESTAMPDIFF(MICROSECOND, TIMESTAMP'1970-01-01 00:00:00', %s)"
	err := db.QueryRowContext(ctxT(t), fmt.Sprintf(`SELECT owner, holder, `+us+`, `+us+`, `+us+`, expires_at < UTC_TIMESTAMP(6)
FROM ringflake_machine_ids WHERE id = ?`, "expires_at", "mark", "inherited"), id).Scan(&r.owner, &r.holder, &exp, &mark, &inherited, &r.expired)
	require.NoError(t, err, "reading machine ID %d's row", id)
	r.expiresAt = time.UnixMicro(exp)
	if mark.Valid {
		m := time.UnixMicro(mark.Int64)
		r.mark = &m
	}
	if inherited.Valid {
		i := time.UnixMicro(inherited.Int64)
		r.inherited = &i
	}
	return r
}
