package ringflake_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite" // a pure-Go SQLite driver, for tests only

	"github.com/ringflake/ringflake"
)

func TestScan(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		src     any
		want    ringflake.ID
		wantErr error
	}{
		{"int64", int64(383078035417174017), 383078035417174017, nil},
		{"int64 zero", int64(0), 0, nil},
		{"int64 max", int64(math.MaxInt64), math.MaxInt64, nil},
		{"uint64", uint64(42), 42, nil},
		{"string", "383078035417174017", 383078035417174017, nil},
		{"bytes", []byte("9223372036854775807"), math.MaxInt64, nil},
		{"NULL", nil, 77, ringflake.ErrSyntax},
		{"negative int64", int64(-1), 77, ringflake.ErrRange},
		{"uint64 2^63", uint64(1 << 63), 77, ringflake.ErrRange},
		{"bad string", "12x", 77, ringflake.ErrSyntax},
		{"empty bytes", []byte{}, 77, ringflake.ErrSyntax},
		{"negative string", "-3", 77, ringflake.ErrRange},
		{"float64", 1.5, 77, ringflake.ErrSyntax},
		{"time", time.Unix(0, 0), 77, ringflake.ErrSyntax},
		{"bool", true, 77, ringflake.ErrSyntax},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			id := ringflake.ID(77)
			err := id.Scan(tt.src)
			if tt.wantErr != nil {
				assert.ErrorIs(t, err, tt.wantErr, "Scan(%#v)", tt.src)
			} else {
				assert.NoError(t, err, "Scan(%#v)", tt.src)
			}
			assert.Equal(t, tt.want, id, "ID after Scan(%#v)", tt.src)

			n := ringflake.NullID{ID: 77, Valid: true}
			err = n.Scan(tt.src)
			switch {
			case tt.src == nil:
				assert.NoError(t, err, "NullID.Scan(nil)")
				assert.Equal(t, ringflake.NullID{}, n, "NullID after Scan(nil)")
			case tt.wantErr != nil:
				assert.ErrorIs(t, err, tt.wantErr, "NullID.Scan(%#v)", tt.src)
				assert.Equal(t, ringflake.NullID{ID: 77, Valid: true}, n, "NullID changed on error")
			default:
				assert.NoError(t, err, "NullID.Scan(%#v)", tt.src)
				assert.Equal(t, ringflake.NullID{ID: tt.want, Valid: true}, n)
			}
		})
	}
}

func TestValue(t *testing.T) {
	t.Parallel()
	v, err := ringflake.ID(383078035417174017).Value()
	require.NoError(t, err)
	assert.Equal(t, int64(383078035417174017), v, "Value is an int64")
	_, err = ringflake.ID(-1).Value()
	assert.ErrorIs(t, err, ringflake.ErrRange)

	v, err = ringflake.NullID{}.Value()
	assert.NoError(t, err)
	assert.Nil(t, v, "invalid NullID is NULL")
	v, err = ringflake.NullID{ID: 5, Valid: true}.Value()
	assert.NoError(t, err)
	assert.Equal(t, int64(5), v)
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
		opt := ringflake.NullID{ID: id, Valid: i%2 == 0}
		_, err := db.ExecContext(ctx, `INSERT INTO ids (id, txt, opt) VALUES (?, ?, ?)`, id, id.String(), opt)
		require.NoError(t, err, "insert %d", id)
	}

	rows, err := db.QueryContext(ctx, `SELECT id, txt, opt, opt FROM ids ORDER BY id`)
	require.NoError(t, err)
	defer rows.Close()
	var got []ringflake.ID
	for rows.Next() {
		var id, txt ringflake.ID
		var opt ringflake.NullID
		var ptr *ringflake.ID
		require.NoError(t, rows.Scan(&id, &txt, &opt, &ptr))
		assert.Equal(t, id, txt, "text column holds the same ID")
		i := indexOf(edgeIDs, id)
		if assert.GreaterOrEqual(t, i, 0, "ID %d read back was never written", id) {
			assert.Equal(t, ringflake.NullID{ID: id, Valid: i%2 == 0}.Valid, opt.Valid, "NullID validity of %d", id)
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
}

// TestSQLGenerated stores IDs from a generator and checks the database
// orders them as the generator issued them.
func TestSQLGenerated(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openDB(t)
	_, err := db.ExecContext(ctx, `CREATE TABLE events (id INTEGER PRIMARY KEY, b32 TEXT NOT NULL)`)
	require.NoError(t, err)
	g, err := ringflake.New(ringflake.WithMachineID(3))
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

func ExampleID_Scan() {
	var id ringflake.ID
	// What drivers hand Scan: an int64 for integer columns, text otherwise.
	for _, src := range []any{int64(383078035417174017), []byte("383078035417174018"), nil} {
		err := id.Scan(src)
		fmt.Println(id, err)
	}
	// Output:
	// 383078035417174017 <nil>
	// 383078035417174018 <nil>
	// 383078035417174018 ringflake: Scan NULL: invalid ID syntax: scan a nullable column into a NullID or a *ringflake.ID
}

func ExampleID_Value() {
	v, err := ringflake.ID(383078035417174017).Value()
	fmt.Printf("%T %v %v\n", v, v, err)
	// Output: int64 383078035417174017 <nil>
}

func ExampleNullID() {
	// A nullable column: NULL scans as an invalid NullID, not an error.
	var n ringflake.NullID
	for _, src := range []any{nil, int64(42)} {
		err := n.Scan(src)
		fmt.Println(n.Valid, n.ID, err)
	}
	v, _ := ringflake.NullID{}.Value()
	fmt.Println(v)
	// Output:
	// false 0 <nil>
	// true 42 <nil>
	// <nil>
}

func ExampleNullID_MarshalJSON() {
	b, _ := json.Marshal([]ringflake.NullID{{ID: 42, Valid: true}, {}})
	fmt.Println(string(b))
	// Output: ["42",null]
}

func ExampleNullID_UnmarshalJSON() {
	var v []ringflake.NullID
	err := json.Unmarshal([]byte(`["42",null,43]`), &v)
	fmt.Println(v, err)
	// Output: [{42 true} {0 false} {43 true}] <nil>
}

// Example_databaseSQL stores and reads IDs through database/sql: an ID
// goes into an integer column as an int64 and scans back from it; a
// NullID handles a nullable column.
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
	id, parent := ringflake.ID(383078035417174017), ringflake.NullID{}
	if _, err := db.ExecContext(ctx, `INSERT INTO orders VALUES (?, ?)`, id, parent); err != nil {
		panic(err)
	}
	var got ringflake.ID
	var gotParent ringflake.NullID
	err = db.QueryRowContext(ctx, `SELECT id, parent FROM orders`).Scan(&got, &gotParent)
	fmt.Println(got, gotParent.Valid, err)
	// Output: 383078035417174017 false <nil>
}
