package machineid_mysql_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/machineid"
	mm "github.com/ringflake/ringflake/machineid_mysql"
)

// unused is a pool that New never contacts.
func unused(t *testing.T) *sql.DB {
	db, err := sql.Open("mysql", "app@tcp(db.invalid:3306)/app")
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// TestNewRefusesBadConfig checks the store's own settings and its limits;
// the common options' bounds are the engine's, tested there.
func TestNewRefusesBadConfig(t *testing.T) {
	t.Parallel()
	db := unused(t)
	for _, tt := range []struct {
		name string
		db   mm.DB
		opts []machineid.Option
		want string // in the message: the value and the valid range
	}{
		{"nil db", nil, nil, "ringflake: invalid configuration: db = nil"},
		{"uppercase table", db, []machineid.Option{mm.WithTable("Leases")}, `table = "Leases"`},
		{"table with a backquote", db, []machineid.Option{mm.WithTable("a`b")}, "table = \"a`b\""},
		{"three-part table", db, []machineid.Option{mm.WithTable("a.b.c")}, `table = "a.b.c"`},
		{"empty database", db, []machineid.Option{mm.WithTable(".b")}, `table = ".b"`},
		{"table too long", db, []machineid.Option{mm.WithTable(strings.Repeat("t", 65))}, `table = "tttt`},
		{"range too large", db, []machineid.Option{machineid.WithRange(0, 1<<16)}, "ringflake: invalid configuration: range = 0..65536 (65537 IDs); valid: at most 65536 IDs"},
		{"TTL too long", db, []machineid.Option{machineid.WithTTL(25 * time.Hour)}, "ringflake: invalid configuration: TTL = 25h0m0s; valid: 100ms..1h0m0s"},
		{"another store's option", db, []machineid.Option{machineid.StoreOption("other.WithX", func(*struct{}) {})}, "other.WithX"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l, err := mm.New(tt.db, tt.opts...)
			require.Error(t, err)
			assert.Nil(t, l)
			assert.ErrorIs(t, err, ringflake.ErrInvalidConfig)
			assert.ErrorContains(t, err, tt.want)
		})
	}
	err := mm.CreateTable(context.Background(), db, "Leases")
	assert.ErrorIs(t, err, ringflake.ErrInvalidConfig, "CreateTable checks the name before it reaches the database")
	assert.ErrorContains(t, err, `table = "Leases"`)
}

func TestNewAcceptsGoodConfig(t *testing.T) {
	t.Parallel()
	db := unused(t)
	for _, tt := range []struct {
		name string
		opts []machineid.Option
	}{
		{"defaults", nil},
		{"nil option", []machineid.Option{nil}},
		{"zero means the default", []machineid.Option{mm.WithTable(""), machineid.WithTTL(0), machineid.WithSafetyMargin(0), machineid.WithCallTimeout(0)}},
		{"one ID", []machineid.Option{machineid.WithRange(7, 7)}},
		{"the largest range", []machineid.Option{machineid.WithRange(1<<40, 1<<40+1<<16-1)}},
		{"database-qualified table", []machineid.Option{mm.WithTable("ids.machine_leases")}},
		{"64-byte table", []machineid.Option{mm.WithTable(strings.Repeat("t", 64))}},
		{"shortest TTL, its own defaults", []machineid.Option{machineid.WithTTL(100 * time.Millisecond)}},
		{"longest TTL", []machineid.Option{machineid.WithTTL(time.Hour)}},
		{"every option", []machineid.Option{mm.WithTable("t"), machineid.WithTTL(time.Minute), machineid.WithSafetyMargin(time.Second), machineid.WithCallTimeout(20 * time.Second)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := mm.New(db, tt.opts...)
			assert.NoError(t, err)
		})
	}
}
