package machineid_postgres

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake/internal/pgtest"
	"github.com/ringflake/ringflake/machineid"
)

// TestRetakeFindsItsOwnRow takes again with a token that already holds a
// row, as a Holder does after a take whose answer was lost, while a lower
// row has come free meanwhile: the take must answer the row the token
// holds, not take a second one.
func TestRetakeFindsItsOwnRow(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	pool, err := pgxpool.New(ctx, pgtest.Start(t).DSN())
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	require.NoError(t, CreateTable(ctx, pool, ""))
	s := &store{db: pool, table: defaultTable, sql: newStatements(defaultTable)}
	claim := func(token string) machineid.Claim {
		now := time.Now()
		return machineid.Claim{Token: token, Lo: 0, Hi: 3, TTL: time.Minute, Now: now, Until: now.Add(time.Minute), MaxOffset: time.Second}
	}
	for i, token := range []string{"a", "b", "t"} {
		g, err := s.Take(ctx, claim(token))
		require.NoError(t, err)
		require.Equal(t, int64(i), g.ID, "the lowest free ID")
	}
	require.NoError(t, s.Release(ctx, claim("a"), 0, time.Time{}))
	g, err := s.Take(ctx, claim("t"))
	require.NoError(t, err)
	assert.Equal(t, int64(2), g.ID, "a take again by the token that holds ID 2, with ID 0 free")
	var owned int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM ringflake_machine_ids WHERE owner = 't'`).Scan(&owned))
	assert.Equal(t, 1, owned, "rows the token owns")
}
