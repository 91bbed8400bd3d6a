package machineid_mysql_test

import (
	"context"
	"database/sql"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake/machineid"
	mm "github.com/ringflake/ringflake/machineid_mysql"
)

// wide is the widest range a table takes.
var wide = machineid.WithRange(0, 1<<16-1)

// TestTakeAddsRowsAsNeeded has 10 holders take IDs of 65,536 from an empty
// table: the table gets a row for each ID taken, not one for every ID of
// the range.
func TestTakeAddsRowsAsNeeded(t *testing.T) {
	t.Parallel()
	db := sharedDB(t)
	for k := range 10 {
		id, err := newLeaser(t, db, wide).MachineID(ctxT(t))
		require.NoError(t, err)
		require.Equal(t, int64(k), id, "the lowest free ID")
	}
	var rows int64
	require.NoError(t, db.QueryRowContext(ctxT(t), `SELECT count(*) FROM ringflake_machine_ids`).Scan(&rows))
	assert.Equal(t, int64(10), rows, "rows of a table from which 10 IDs of 65,536 were taken")
}

// TestTakeReadsTheRowsHeld has a take, with 10 IDs of 65,536 held, read
// about as many rows as are held, not the range. The server counts the
// rows its storage engine handed over (the Handler_read_* counters) for the
// session, a connection of its own on which the take runs.
func TestTakeReadsTheRowsHeld(t *testing.T) {
	t.Parallel()
	db := sharedDB(t)
	const held = 10
	for range held {
		_, err := newLeaser(t, db, wide).MachineID(ctxT(t))
		require.NoError(t, err)
	}

	conn, err := db.Conn(ctxT(t))
	require.NoError(t, err)
	defer conn.Close()
	// What reading the counters costs, to take off.
	before := handlerReads(t, conn)
	idle := handlerReads(t, conn) - before
	// A TTL long enough that the holder makes no call but the take on the
	// connection, which takes one call at a time.
	h, err := mm.New(conn, wide, machineid.WithTTL(time.Minute))
	require.NoError(t, err)
	before = handlerReads(t, conn)
	id, err := h.MachineID(ctxT(t))
	require.NoError(t, err)
	read := handlerReads(t, conn) - before - idle
	require.NoError(t, h.Release(time.Time{}))
	assert.Equal(t, int64(held), id, "the lowest free ID")
	// No row is free, so the take runs find, gap, fill, grant and read:
	// find reads the range's rows through the primary key and sorts them;
	// gap reads them again into a derived table, scans it, and probes the
	// key once for each; fill, grant and read touch one row each. About six
	// reads per row held and a dozen more: 42, 72, 132 and 252 with 5, 10,
	// 20 and 40 held. The range's width is not in it.
	assert.LessOrEqual(t, read, int64(8*held+16), "rows a take read with 10 IDs of 65,536 held")
	t.Logf("a take with %d IDs of 65,536 held read %d rows (the counters' own reads, %d, taken off)", held, read, idle)
}

// handlerReads sums the session's Handler_read_* counters.
func handlerReads(t *testing.T, conn *sql.Conn) int64 {
	t.Helper()
	rows, err := conn.QueryContext(context.Background(), `SHOW SESSION STATUS LIKE 'Handler_read%'`)
	require.NoError(t, err)
	defer rows.Close()
	var sum int64
	for rows.Next() {
		var name, value string
		require.NoError(t, rows.Scan(&name, &value))
		n, err := strconv.ParseInt(value, 10, 64)
		require.NoError(t, err, name)
		sum += n
	}
	require.NoError(t, rows.Err())
	return sum
}
