package machineid_mysql

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake/internal/mysqltest"
	"github.com/ringflake/ringflake/machineid"
)

// TestRetakeFindsItsOwnRow takes again with a token that already holds a
// row, as a Holder does after a take whose answer was lost, while a lower
// row has come free meanwhile: the take must answer the row the token
// holds, not take a second one, and must not shorten its lease.
func TestRetakeFindsItsOwnRow(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	db, err := sql.Open("mysql", mysqltest.Shared(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	require.NoError(t, CreateTable(ctx, db, ""))
	s := &store{db: db, table: defaultTable, sql: newStatements(defaultTable)}
	claim := func(token string, ttl time.Duration) machineid.Claim {
		now := time.Now()
		return machineid.Claim{Token: token, Lo: 0, Hi: 3, TTL: ttl, Now: now, Until: now.Add(ttl), MaxOffset: time.Second}
	}
	for i, token := range []string{"a", "b", "t"} {
		g, err := s.Take(ctx, claim(token, time.Minute))
		require.NoError(t, err)
		require.Equal(t, int64(i), g.ID, "the lowest free ID")
	}
	var before string // DATETIME(6), whose text sorts as its time
	require.NoError(t, db.QueryRowContext(ctx, `SELECT expires_at FROM ringflake_machine_ids WHERE id = 2`).Scan(&before))
	require.NoError(t, s.Release(ctx, claim("a", time.Minute), 0, time.Time{}))
	g, err := s.Take(ctx, claim("t", time.Second)) // a late take of a shorter lease
	require.NoError(t, err)
	assert.Equal(t, int64(2), g.ID, "a take again by the token that holds ID 2, with ID 0 free")
	var owned int
	require.NoError(t, db.QueryRowContext(ctx, `SELECT count(*) FROM ringflake_machine_ids WHERE owner = 't'`).Scan(&owned))
	assert.Equal(t, 1, owned, "rows the token owns")
	var after string
	require.NoError(t, db.QueryRowContext(ctx, `SELECT expires_at FROM ringflake_machine_ids WHERE id = 2`).Scan(&after))
	assert.GreaterOrEqual(t, after, before, "the token's own take moved its expiry back, from %v to %v", before, after)
}
