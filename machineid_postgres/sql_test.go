package machineid_postgres_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/ringflake/ringflake/internal/pgtest"
	"github.com/ringflake/ringflake/machineid"
	mp "github.com/ringflake/ringflake/machineid_postgres"
)

// TestTableNames checks that the documented statement makes a table the
// Holder can use, and that CreateTable makes one under any valid name: in
// a schema, or a reserved word.
func TestTableNames(t *testing.T) {
	t.Parallel()
	srv := pgtest.Start(t)
	pool := newPool(t, srv.DSN())
	_, err := pool.Exec(ctxT(t), mp.TableSQL)
	require.NoError(t, err, "TableSQL")
	_, err = pool.Exec(ctxT(t), `CREATE SCHEMA ids`)
	require.NoError(t, err)
	for _, table := range []string{"", "ids.machine_leases", "user", "ids.select"} {
		t.Run(table, func(t *testing.T) {
			var opts []machineid.Option
			if table != "" {
				opts = append(opts, mp.WithTable(table))
			}
			l := newLeaser(t, pool, opts...)
			if table != "" {
				require.NoError(t, mp.CreateTable(ctxT(t), pool, table))
			}
			id, err := l.MachineID(ctxT(t))
			require.NoError(t, err)
			assert.Equal(t, int64(0), id, "the first ID of a fresh table")
		})
	}
	var tables int
	require.NoError(t, pool.QueryRow(ctxT(t), `SELECT count(*) FROM pg_tables WHERE tablename IN ('ringflake_machine_ids', 'machine_leases', 'user', 'select')`).Scan(&tables))
	assert.Equal(t, 4, tables)
}

// TestCreateTableConcurrently has many processes' connections create the
// table at once on an empty database, round after round: each must succeed,
// as two processes starting together on a fresh database do.
func TestCreateTableConcurrently(t *testing.T) {
	t.Parallel()
	srv := pgtest.Start(t)
	admin := newPool(t, srv.DSN())
	const rounds, creators = 5, 8
	for round := range rounds {
		db := fmt.Sprintf("fresh_%d", round)
		_, err := admin.Exec(ctxT(t), "CREATE DATABASE "+db)
		require.NoError(t, err)
		dsn := strings.Replace(srv.DSN(), "/postgres?", "/"+db+"?", 1)
		conns := make([]*pgx.Conn, creators)
		for i := range conns {
			conns[i], err = pgx.Connect(ctxT(t), dsn)
			require.NoError(t, err)
			t.Cleanup(func() { _ = conns[i].Close(context.Background()) })
		}
		start := make(chan struct{})
		var g errgroup.Group
		for i, conn := range conns {
			g.Go(func() error {
				<-start
				if err := mp.CreateTable(ctxT(t), conn, ""); err != nil {
					return fmt.Errorf("round %d, creator %d: %w", round, i, err)
				}
				return nil
			})
		}
		close(start)
		assert.NoError(t, g.Wait(), "every concurrent creator succeeds")
	}
}
