package ringflake_test

import (
	"database/sql"
	"database/sql/driver"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake"
)

func TestScan(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		src     any
		want    ringflake.ID
		wantErr error
		msg     string // the whole error message, if not empty
	}{
		{"int64", int64(383078035417174017), 383078035417174017, nil, ""},
		{"int64 zero", int64(0), 0, nil, ""},
		{"int64 max", int64(math.MaxInt64), math.MaxInt64, nil, ""},
		{"uint64", uint64(42), 42, nil, ""},
		{"uint64 max", uint64(math.MaxInt64), math.MaxInt64, nil, ""},
		{"string", "383078035417174017", 383078035417174017, nil, ""},
		{"zero-padded string", "0000000000000000000042", 42, nil, ""},
		{"bytes", []byte("9223372036854775807"), math.MaxInt64, nil, ""},
		{"NULL", nil, 77, ringflake.ErrSyntax,
			"ringflake: Scan NULL: invalid ID syntax: scan a nullable column into a sql.Null[ringflake.ID]"},
		{"negative int64", int64(-1), 77, ringflake.ErrRange, "ringflake: Scan int64(-1): ID out of range: negative"},
		{"uint64 2^63", uint64(1 << 63), 77, ringflake.ErrRange,
			"ringflake: Scan uint64(9223372036854775808): ID out of range: above 2^63-1"},
		{"bad string", "12x", 77, ringflake.ErrSyntax,
			`ringflake: Scan "12x": invalid ID syntax: character "x" at offset 2 is not a decimal digit`},
		{"empty bytes", []byte{}, 77, ringflake.ErrSyntax, ""},
		{"negative string", "-3", 77, ringflake.ErrRange, ""},
		{"string 2^63", "9223372036854775808", 77, ringflake.ErrRange, ""},
		{"float64", 1.5, 77, ringflake.ErrSyntax,
			"ringflake: Scan float64(1.5): invalid ID syntax: want int64, uint64, string or []byte"},
		{"time", time.Unix(0, 0).UTC(), 77, ringflake.ErrSyntax, ""},
		{"bool", true, 77, ringflake.ErrSyntax, ""},
		{"int", 5, 77, ringflake.ErrSyntax, ""},
		{"long value is cut", make([]int, 20), 77, ringflake.ErrSyntax,
			"ringflake: Scan []int([0 0 0 0 0 0 0 0 0 0 0 0 0...: invalid ID syntax: want int64, uint64, string or []byte"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			id := ringflake.ID(77)
			err := id.Scan(tt.src)
			assert.Equal(t, tt.want, id, "ID after Scan(%#v)", tt.src)
			if tt.wantErr == nil {
				assert.NoError(t, err, "Scan(%#v)", tt.src)
				return
			}
			assert.ErrorIs(t, err, tt.wantErr, "Scan(%#v)", tt.src)
			var pe *ringflake.ParseError
			if assert.ErrorAs(t, err, &pe, "Scan(%#v) returns a *ParseError", tt.src) {
				assert.Equal(t, "Scan", pe.Func, "ParseError.Func")
			}
			if tt.msg != "" {
				assert.EqualError(t, err, tt.msg, "Scan(%#v)", tt.src)
			}
		})
	}
}

func TestValue(t *testing.T) {
	t.Parallel()
	v, err := ringflake.ID(383078035417174017).Value()
	require.NoError(t, err)
	assert.Equal(t, int64(383078035417174017), v, "Value is an int64")
	assert.True(t, driver.IsValue(v), "Value returns a driver.Value")
	_, err = ringflake.ID(-1).Value()
	assert.ErrorIs(t, err, ringflake.ErrRange)
	assert.EqualError(t, err, "ringflake: Value -1: ID out of range: IDs are never negative")
}

// TestSQLNull checks the nullable form that database/sql provides,
// sql.Null[ringflake.ID]: Scan reads NULL as not valid and an ID through
// ID.Scan, and its Value goes through driver's conversion as database/sql
// does before handing arguments to a driver.
func TestSQLNull(t *testing.T) {
	t.Parallel()
	scans := []struct {
		name    string
		src     any
		want    sql.Null[ringflake.ID]
		wantErr error
	}{
		{"NULL", nil, sql.Null[ringflake.ID]{}, nil},
		{"int64", int64(42), sql.Null[ringflake.ID]{V: 42, Valid: true}, nil},
		{"bytes", []byte("383078035417174017"), sql.Null[ringflake.ID]{V: 383078035417174017, Valid: true}, nil},
		{"negative", int64(-1), sql.Null[ringflake.ID]{}, ringflake.ErrRange},
		{"float64", 1.5, sql.Null[ringflake.ID]{}, ringflake.ErrSyntax},
	}
	for _, tt := range scans {
		t.Run("Scan/"+tt.name, func(t *testing.T) {
			t.Parallel()
			n := sql.Null[ringflake.ID]{V: 77, Valid: true}
			err := n.Scan(tt.src)
			if tt.wantErr != nil {
				assert.ErrorIs(t, err, tt.wantErr, "Scan(%#v)", tt.src)
				assert.Equal(t, ringflake.ID(77), n.V, "the ID is unchanged on error")
				return
			}
			require.NoError(t, err, "Scan(%#v)", tt.src)
			assert.Equal(t, tt.want, n, "sql.Null after Scan(%#v)", tt.src)
		})
	}
	values := []struct {
		name    string
		in      sql.Null[ringflake.ID]
		want    driver.Value
		wantErr error
	}{
		{"NULL", sql.Null[ringflake.ID]{}, nil, nil},
		{"NULL holding an ID", sql.Null[ringflake.ID]{V: 5}, nil, nil},
		{"ID", sql.Null[ringflake.ID]{V: 383078035417174017, Valid: true}, int64(383078035417174017), nil},
		{"negative", sql.Null[ringflake.ID]{V: -1, Valid: true}, nil, ringflake.ErrRange},
	}
	for _, tt := range values {
		t.Run("Value/"+tt.name, func(t *testing.T) {
			t.Parallel()
			v, err := driver.DefaultParameterConverter.ConvertValue(tt.in)
			if tt.wantErr != nil {
				assert.ErrorIs(t, err, tt.wantErr, "ConvertValue(%+v)", tt.in)
				return
			}
			require.NoError(t, err, "ConvertValue(%+v)", tt.in)
			assert.Equal(t, tt.want, v, "ConvertValue(%+v)", tt.in)
			assert.True(t, driver.IsValue(v), "ConvertValue(%+v) = %#v; want a driver.Value", tt.in, v)
		})
	}
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
	// 383078035417174018 ringflake: Scan NULL: invalid ID syntax: scan a nullable column into a sql.Null[ringflake.ID]
}

func ExampleID_Value() {
	v, err := ringflake.ID(383078035417174017).Value()
	fmt.Printf("%T %v %v\n", v, v, err)
	// Output: int64 383078035417174017 <nil>
}
