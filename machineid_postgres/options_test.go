package machineid_postgres_test

import (
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake"
	mp "github.com/ringflake/ringflake/machineid_postgres"
)

func TestNewRefusesBadConfig(t *testing.T) {
	t.Parallel()
	pool := &pgxpool.Pool{} // never used: New does not contact the database
	for _, tt := range []struct {
		name string
		db   mp.DB
		opts []mp.Option
		want string // in the message: the value and the valid range
	}{
		{"nil db", nil, nil, "db = nil"},
		{"empty table", pool, []mp.Option{mp.WithTable("")}, `table = ""; valid: a lowercase SQL identifier`},
		{"uppercase table", pool, []mp.Option{mp.WithTable("Leases")}, `table = "Leases"`},
		{"table with a quote", pool, []mp.Option{mp.WithTable(`a"b`)}, `table = "a\"b"`},
		{"three-part table", pool, []mp.Option{mp.WithTable("a.b.c")}, `table = "a.b.c"`},
		{"table too long", pool, []mp.Option{mp.WithTable(strings.Repeat("t", 64))}, `table = "tttt`},
		{"negative lo", pool, []mp.Option{mp.WithRange(-1, 5)}, "range = -1..5; valid: lo..hi with 0 <= lo <= hi and at most 65536 IDs"},
		{"lo above hi", pool, []mp.Option{mp.WithRange(6, 5)}, "range = 6..5"},
		{"range too large", pool, []mp.Option{mp.WithRange(0, 1<<16)}, "range = 0..65536"},
		{"TTL too short", pool, []mp.Option{mp.WithTTL(99 * time.Millisecond)}, "TTL = 99ms; valid: 100ms..24h0m0s"},
		{"negative TTL", pool, []mp.Option{mp.WithTTL(-time.Second)}, "TTL = -1s"},
		{"TTL too long", pool, []mp.Option{mp.WithTTL(25 * time.Hour)}, "TTL = 25h0m0s"},
		{"margin of half the TTL", pool, []mp.Option{mp.WithTTL(time.Second), mp.WithSafetyMargin(500 * time.Millisecond)}, "safety margin = 500ms; valid: above 0 and below TTL/2 (500ms)"},
		{"negative margin", pool, []mp.Option{mp.WithSafetyMargin(-time.Millisecond)}, "safety margin = -1ms"},
		{"call timeout over the TTL", pool, []mp.Option{mp.WithTTL(time.Second), mp.WithCallTimeout(2 * time.Second)}, "call timeout = 2s; valid: above 0 and at most the TTL (1s)"},
		{"negative call timeout", pool, []mp.Option{mp.WithCallTimeout(-1)}, "call timeout = -1ns"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l, err := mp.New(tt.db, tt.opts...)
			require.Error(t, err)
			assert.Nil(t, l)
			assert.ErrorIs(t, err, ringflake.ErrInvalidConfig)
			assert.ErrorContains(t, err, tt.want)
		})
	}
}

func TestNewAcceptsGoodConfig(t *testing.T) {
	t.Parallel()
	pool := &pgxpool.Pool{}
	for _, tt := range []struct {
		name string
		opts []mp.Option
	}{
		{"defaults", nil},
		{"nil option", []mp.Option{nil}},
		{"one ID", []mp.Option{mp.WithRange(7, 7)}},
		{"the largest range", []mp.Option{mp.WithRange(1<<40, 1<<40+1<<16-1)}},
		{"schema-qualified table", []mp.Option{mp.WithTable("ids.machine_leases")}},
		{"63-byte table", []mp.Option{mp.WithTable(strings.Repeat("t", 63))}},
		{"shortest TTL, its own defaults", []mp.Option{mp.WithTTL(100 * time.Millisecond)}},
		{"every option", []mp.Option{mp.WithTTL(time.Minute), mp.WithSafetyMargin(time.Second), mp.WithCallTimeout(time.Minute), mp.WithClock(time.Now)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := mp.New(pool, tt.opts...)
			assert.NoError(t, err)
		})
	}
}
