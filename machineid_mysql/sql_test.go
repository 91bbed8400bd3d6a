package machineid_mysql_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/ringflake/ringflake/internal/mysqltest"
	"github.com/ringflake/ringflake/machineid"
	mm "github.com/ringflake/ringflake/machineid_mysql"
)

// TestTableNames checks that the documented statement makes a table the
// Holder can use, and that CreateTable makes one under any valid name: in
// another database, or a reserved word.
func TestTableNames(t *testing.T) {
	t.Parallel()
	dsn := mysqltest.Shared(t)
	db := newPool(t, dsn)
	_, err := db.ExecContext(ctxT(t), mm.TableSQL)
	require.NoError(t, err, "TableSQL")
	other := dsn[strings.LastIndexByte(dsn, '/')+1:] + "_ids" // a database of the test's own
	_, err = db.ExecContext(ctxT(t), "CREATE DATABASE "+other)
	require.NoError(t, err)
	for _, table := range []string{"", other + ".machine_leases", "user", other + ".select"} {
		t.Run(table, func(t *testing.T) {
			var opts []machineid.Option
			if table != "" {
				opts = append(opts, mm.WithTable(table))
			}
			l := newLeaser(t, db, opts...)
			if table != "" {
				require.NoError(t, mm.CreateTable(ctxT(t), db, table))
			}
			id, err := l.MachineID(ctxT(t))
			require.NoError(t, err)
			assert.Equal(t, int64(0), id, "the first ID of a fresh table")
		})
	}
	var tables int
	require.NoError(t, db.QueryRowContext(ctxT(t), `SELECT count(*) FROM information_schema.tables
WHERE table_name IN ('ringflake_machine_ids', 'machine_leases', 'user', 'select') AND table_schema IN (DATABASE(), ?)`, other).Scan(&tables))
	assert.Equal(t, 4, tables)
}

// TestCreateTableConcurrently has many processes' connections create the
// table at once on an empty database, round after round: each must succeed,
// as two processes starting together on a fresh database do.
func TestCreateTableConcurrently(t *testing.T) {
	t.Parallel()
	const rounds, creators = 5, 8
	for round := range rounds {
		dsn := mysqltest.Shared(t) // a fresh database
		conns := make([]*sql.Conn, creators)
		for i := range conns {
			c, err := newPool(t, dsn).Conn(ctxT(t))
			require.NoError(t, err)
			t.Cleanup(func() { _ = c.Close() })
			conns[i] = c
		}
		start := make(chan struct{})
		var g errgroup.Group
		for i, conn := range conns {
			g.Go(func() error {
				<-start
				if err := mm.CreateTable(context.Background(), conn, ""); err != nil {
					return fmt.Errorf("round %d, creator %d: %w", round, i, err)
				}
				return nil
			})
		}
		close(start)
		assert.NoError(t, g.Wait(), "every concurrent creator succeeds")
	}
}
