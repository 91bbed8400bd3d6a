package machineid_postgres_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/machineid"
	mp "github.com/ringflake/ringflake/machineid_postgres"
)

// TestNewRefusesBadConfig checks the store's own settings and its limits;
// the common options' bounds are the engine's, tested there.
func TestNewRefusesBadConfig(t *testing.T) {
	t.Parallel()
	pool := &pgxpool.Pool{} // never used: New does not contact the database
	for _, tt := range []struct {
		name string
		db   mp.DB
		opts []machineid.Option
		want string // in the message: the value and the valid range
	}{
		{"nil db", nil, nil, "ringflake: invalid configuration: db = nil"},
		{"uppercase table", pool, []machineid.Option{mp.WithTable("Leases")}, `table = "Leases"`},
		{"table with a quote", pool, []machineid.Option{mp.WithTable(`a"b`)}, `table = "a\"b"`},
		{"three-part table", pool, []machineid.Option{mp.WithTable("a.b.c")}, `table = "a.b.c"`},
		{"empty schema", pool, []machineid.Option{mp.WithTable(".b")}, `table = ".b"`},
		{"table too long", pool, []machineid.Option{mp.WithTable(strings.Repeat("t", 64))}, `table = "tttt`},
		{"range too large", pool, []machineid.Option{machineid.WithRange(0, 1<<16)}, "ringflake: invalid configuration: range = 0..65536 (65537 IDs); valid: at most 65536 IDs"},
		{"TTL too long", pool, []machineid.Option{machineid.WithTTL(25 * time.Hour)}, "ringflake: invalid configuration: TTL = 25h0m0s; valid: 100ms..1h0m0s"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l, err := mp.New(tt.db, tt.opts...)
			require.Error(t, err)
			assert.Nil(t, l)
			assert.ErrorIs(t, err, ringflake.ErrInvalidConfig)
			assert.ErrorContains(t, err, tt.want)
		})
	}
	err := mp.CreateTable(context.Background(), pool, "Leases")
	assert.ErrorIs(t, err, ringflake.ErrInvalidConfig, "CreateTable checks the name before it reaches the database")
	assert.ErrorContains(t, err, `table = "Leases"`)
}

func TestNewAcceptsGoodConfig(t *testing.T) {
	t.Parallel()
	pool := &pgxpool.Pool{}
	for _, tt := range []struct {
		name string
		opts []machineid.Option
	}{
		{"defaults", nil},
		{"nil option", []machineid.Option{nil}},
		{"zero means the default", []machineid.Option{mp.WithTable(""), machineid.WithTTL(0), machineid.WithSafetyMargin(0), machineid.WithCallTimeout(0)}},
		{"one ID", []machineid.Option{machineid.WithRange(7, 7)}},
		{"the largest range", []machineid.Option{machineid.WithRange(1<<40, 1<<40+1<<16-1)}},
		{"schema-qualified table", []machineid.Option{mp.WithTable("ids.machine_leases")}},
		{"63-byte table", []machineid.Option{mp.WithTable(strings.Repeat("t", 63))}},
		{"shortest TTL, its own defaults", []machineid.Option{machineid.WithTTL(100 * time.Millisecond)}},
		{"longest TTL", []machineid.Option{machineid.WithTTL(time.Hour)}},
		{"every option", []machineid.Option{mp.WithTable("t"), machineid.WithTTL(time.Minute), machineid.WithSafetyMargin(time.Second), machineid.WithCallTimeout(20 * time.Second)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := mp.New(pool, tt.opts...)
			assert.NoError(t, err)
		})
	}
}
