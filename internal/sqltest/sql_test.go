package sqltest_test

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite" // a pure-Go SQLite driver, for tests only

	"github.com/ringflake/ringflake"
)

// edgeIDs are IDs at the edges of every encoding, in ascending order, as in
// the root package's encoding_test.go.
var edgeIDs = []ringflake.ID{
	0, 1, 9, 10, 31, 32, 57, 58, 1023, 1024, 3363, 3364,
	1<<40 - 1, 1 << 40, 383078035417174017, 1<<62 - 1, 1 << 62, math.MaxInt64 - 1, math.MaxInt64,
}

// openDB opens a fresh SQLite database in the test's temporary directory.
func openDB(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "ids.db"))
	require.NoError(t, err, "open SQLite")
	t.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(1)
	return db
}

// TestSQLRoundTrip stores IDs through database/sql in a real database, in
// an integer column, a text column and a nullable column, and reads them
// back in each way a caller might.
func TestSQLRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openDB(t)
	_, err := db.ExecContext(ctx, `CREATE TABLE ids (id INTEGER PRIMARY KEY, txt TEXT NOT NULL, opt INTEGER)`)
	require.NoError(t, err)

	for i, id := range edgeIDs {
		opt := sql.Null[ringflake.ID]{V: id, Valid: i%2 == 0}
		_, err := db.ExecContext(ctx, `INSERT INTO ids (id, txt, opt) VALUES (?, ?, ?)`, id, id.String(), opt)
		require.NoError(t, err, "insert %d", id)
	}

	rows, err := db.QueryContext(ctx, `SELECT id, txt, opt, opt FROM ids ORDER BY id`)
	require.NoError(t, err)
	defer rows.Close()
	var got []ringflake.ID
	for rows.Next() {
		var id, txt ringflake.ID
		var opt sql.Null[ringflake.ID]
		var ptr *ringflake.ID
		require.NoError(t, rows.Scan(&id, &txt, &opt, &ptr))
		assert.Equal(t, id, txt, "text column holds the same ID")
		i := indexOf(edgeIDs, id)
		if assert.GreaterOrEqual(t, i, 0, "ID %d read back was never written", id) {
			assert.Equal(t, i%2 == 0, opt.Valid, "sql.Null validity of %d", id)
			if opt.Valid {
				assert.Equal(t, id, opt.V, "sql.Null holds the ID")
			}
			assert.Equal(t, opt.Valid, ptr != nil, "*ID is nil exactly for NULL")
		}
		got = append(got, id)
	}
	require.NoError(t, rows.Err())
	assert.Equal(t, edgeIDs, got, "IDs read back in ORDER BY order; want every ID, ascending")

	// NULL into a plain ID is an error that says what to do.
	var id ringflake.ID
	err = db.QueryRowContext(ctx, `SELECT NULL`).Scan(&id)
	assert.ErrorIs(t, err, ringflake.ErrSyntax, "scanning NULL into an ID")
	assert.ErrorContains(t, err, "sql.Null[ringflake.ID]", "the error says what to scan into")
}

// TestSQLGenerated stores IDs from a generator and checks the database
// orders them as the generator issued them.
func TestSQLGenerated(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openDB(t)
	_, err := db.ExecContext(ctx, `CREATE TABLE events (id INTEGER PRIMARY KEY, b32 TEXT NOT NULL)`)
	require.NoError(t, err)
	g, err := ringflake.New(t.Context(), ringflake.WithMachineID(3))
	require.NoError(t, err)
	defer g.Close()
	ids := make([]ringflake.ID, 200)
	n, err := g.NextN(ids)
	require.NoError(t, err)
	require.Equal(t, len(ids), n)
	for _, id := range ids {
		_, err := db.ExecContext(ctx, `INSERT INTO events (id, b32) VALUES (?, ?)`, id, id.Base32())
		require.NoError(t, err)
	}
	// Sorting by the Base32 text must give the order of the integers.
	rows, err := db.QueryContext(ctx, `SELECT id, b32 FROM events ORDER BY b32`)
	require.NoError(t, err)
	defer rows.Close()
	var prev ringflake.ID = -1
	for rows.Next() {
		var id ringflake.ID
		var b32 string
		require.NoError(t, rows.Scan(&id, &b32))
		assert.Greater(t, id, prev, "ORDER BY the Base32 column; want ascending IDs")
		prev = id
	}
	require.NoError(t, rows.Err())
}

func indexOf(ids []ringflake.ID, id ringflake.ID) int {
	for i, x := range ids {
		if x == id {
			return i
		}
	}
	return -1
}

// Example_databaseSQL stores and reads IDs through database/sql: an ID
// goes into an integer column as an int64 and scans back from it; a
// sql.Null[ringflake.ID] handles a nullable column.
func Example_databaseSQL() {
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		panic(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1) // one connection: one in-memory database
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, `CREATE TABLE orders (id INTEGER PRIMARY KEY, parent INTEGER)`); err != nil {
		panic(err)
	}
	id, parent := ringflake.ID(383078035417174018), sql.Null[ringflake.ID]{}
	child := sql.Null[ringflake.ID]{V: id, Valid: true}
	if _, err := db.ExecContext(ctx, `INSERT INTO orders VALUES (?, ?), (?, ?)`, id, parent, id+1, child); err != nil {
		panic(err)
	}
	rows, err := db.QueryContext(ctx, `SELECT id, parent FROM orders ORDER BY id`)
	if err != nil {
		panic(err)
	}
	defer rows.Close()
	for rows.Next() {
		var got ringflake.ID
		var gotParent sql.Null[ringflake.ID]
		if err := rows.Scan(&got, &gotParent); err != nil {
			panic(err)
		}
		fmt.Println(got, gotParent.V, gotParent.Valid)
	}
	fmt.Println(rows.Err())
	// Output:
	// 383078035417174018 0 false
	// 383078035417174019 383078035417174018 true
	// <nil>
}
