package machineid_postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake/machineid"
	mp "github.com/ringflake/ringflake/machineid_postgres"
)

// wide is the widest range a table takes.
var wide = machineid.WithRange(0, 1<<16-1)

// TestTakeAddsRowsAsNeeded has 10 holders take IDs of 65,536 from an empty
// table: the table gets a row for each ID taken, not one for every ID of
// the range.
func TestTakeAddsRowsAsNeeded(t *testing.T) {
	t.Parallel()
	_, pool := startDB(t)
	for k := range 10 {
		id, err := newLeaser(t, pool, wide).MachineID(ctxT(t))
		require.NoError(t, err)
		require.Equal(t, int64(k), id, "the lowest free ID")
	}
	var rows int64
	require.NoError(t, pool.QueryRow(ctxT(t), `SELECT count(*) FROM ringflake_machine_ids`).Scan(&rows))
	assert.Equal(t, int64(10), rows, "rows of a table from which 10 IDs of 65,536 were taken")
}

// TestTakeReadsTheRowsHeld has a take, with 10 IDs of 65,536 held, read
// about as many rows as are held, not the range. The database counts the
// rows read for the take's transaction, on a connection of its own.
func TestTakeReadsTheRowsHeld(t *testing.T) {
	t.Parallel()
	srv, pool := startDB(t)
	for range 10 {
		_, err := newLeaser(t, pool, wide).MachineID(ctxT(t))
		require.NoError(t, err)
	}

	conn, err := pgx.Connect(ctxT(t), srv.DSN())
	require.NoError(t, err)
	defer func() { _ = conn.Close(context.Background()) }()
	tx, err := conn.Begin(ctxT(t))
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(context.Background()) }()
	// A TTL long enough that the holder makes no call but the take on the
	// transaction, which takes one call at a time.
	h, err := mp.New(tx, wide, machineid.WithTTL(time.Minute))
	require.NoError(t, err)
	id, err := h.MachineID(ctxT(t))
	require.NoError(t, err)
	assert.Equal(t, int64(10), id, "the lowest free ID")
	var read int64
	require.NoError(t, tx.QueryRow(ctxT(t), `SELECT coalesce(sum(coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0)), 0)
FROM pg_stat_xact_user_tables WHERE relname = 'ringflake_machine_ids'`).Scan(&read))
	// No row is free, so the take runs take, fill and take again: the
	// row the token owns looked for among the rows, then the lowest free
	// one through the primary key past the rows held, twice, and fill's
	// gap among the rows with an index probe each, about six reads per row
	// held. The range's width is not in it.
	const held = 10
	assert.LessOrEqual(t, read, int64(8*held+16), "rows a take read with 10 IDs of 65,536 held")
}
