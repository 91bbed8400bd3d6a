package instant

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake"
)

func TestParse(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in   string
		want time.Time
		day  bool
		err  string
	}{
		{"2026-11-28", time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC), true, ""},
		{"2026-11-28T10:00:00Z", time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC), false, ""},
		{"2026-11-28T10:00:00.5+01:00", time.Date(2026, 11, 28, 9, 0, 0, 5e8, time.UTC), false, ""},
		{"1764331200000", time.Date(2025, 11, 28, 12, 0, 0, 0, time.UTC), false, ""},
		{"2026-11-28 10:00", time.Time{}, false, `FROM: "2026-11-28 10:00" is not a date (2026-11-24, midnight UTC), RFC 3339`},
		{"28/11/2026", time.Time{}, false, `FROM: "28/11/2026" is not a date`},
		{"99999999999999999999", time.Time{}, false, `FROM: "99999999999999999999": Unix milliseconds out of range`},
	} {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, day, err := Parse("FROM", tt.in)
			if tt.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.err)
				return
			}
			require.NoError(t, err)
			assert.True(t, tt.want.Equal(got), "Parse(%q) = %v; want %v", tt.in, got, tt.want)
			assert.Equal(t, tt.day, day)
		})
	}
}

func TestCheckAndOrder(t *testing.T) {
	t.Parallel()
	l := ringflake.DefaultLayout()
	for _, tt := range []struct {
		name, arg string
		at        time.Time
		err       string // "" for none
	}{
		{"in range", "2026-11-28", time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC), ""},
		{"the epoch", "2024-01-01", l.Epoch, ""},
		{"before the epoch", "2023-12-31", time.Date(2023, 12, 31, 0, 0, 0, 0, time.UTC), "TO: 2023-12-31T00:00:00Z is before 2024-01-01T00:00:00Z, the layout's first tick"},
		{"seconds for milliseconds", "1764331200", time.UnixMilli(1764331200).UTC(),
			"TO: 1970-01-21T10:05:31.2Z is before 2024-01-01T00:00:00Z, the layout's first tick; read as Unix seconds it is 2025-11-28T12:00:00Z: for that, give 1764331200000 (milliseconds)"},
		{"milliseconds too small for seconds", "1000", time.UnixMilli(1000).UTC(), "TO: 1970-01-01T00:00:01Z is before 2024-01-01T00:00:00Z, the layout's first tick"},
		{"past the last tick", "2100-01-01", time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC), "TO: 2100-01-01T00:00:00Z is after 2093-09-06T15:47:35.551Z, the start of the layout's last tick"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := Check(l, "TO", tt.arg, tt.at)
			if tt.err == "" {
				assert.NoError(t, err)
				return
			}
			assert.EqualError(t, err, tt.err)
		})
	}
	a, b := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	assert.NoError(t, Order(a, b))
	assert.NoError(t, Order(a, a), "an empty range")
	assert.EqualError(t, Order(b, a), "TO 2026-11-28T00:00:00Z is 24h0m0s before FROM 2026-11-29T00:00:00Z; want FROM <= TO")
}
