package machineid_postgres_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake/internal/pgtest"
	mp "github.com/ringflake/ringflake/machineid_postgres"
)

// TestTableNames checks that the documented statement makes a table the
// Leaser can use, and that CreateTable makes one under any valid name: in
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
			var opts []mp.Option
			if table != "" {
				opts = append(opts, mp.WithTable(table))
			}
			l := newLeaser(t, pool, opts...)
			if table != "" {
				require.NoError(t, l.CreateTable(ctxT(t)))
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
