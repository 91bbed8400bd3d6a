package ringflake_test

import (
	"encoding/json"
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
	}{
		{"int64", int64(383078035417174017), 383078035417174017, nil},
		{"int64 zero", int64(0), 0, nil},
		{"int64 max", int64(math.MaxInt64), math.MaxInt64, nil},
		{"uint64", uint64(42), 42, nil},
		{"string", "383078035417174017", 383078035417174017, nil},
		{"bytes", []byte("9223372036854775807"), math.MaxInt64, nil},
		{"NULL", nil, 77, ringflake.ErrIDNull},
		{"negative int64", int64(-1), 77, ringflake.ErrIDNegative},
		{"uint64 2^63", uint64(1 << 63), 77, ringflake.ErrIDOverflow},
		{"bad string", "12x", 77, ringflake.ErrIDCharacter},
		{"empty bytes", []byte{}, 77, ringflake.ErrIDLength},
		{"negative string", "-3", 77, ringflake.ErrIDNegative},
		{"float64", 1.5, 77, ringflake.ErrIDType},
		{"time", time.Unix(0, 0), 77, ringflake.ErrIDType},
		{"bool", true, 77, ringflake.ErrIDType},
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
	assert.ErrorIs(t, err, ringflake.ErrIDNegative)

	v, err = ringflake.NullID{}.Value()
	assert.NoError(t, err)
	assert.Nil(t, v, "invalid NullID is NULL")
	v, err = ringflake.NullID{ID: 5, Valid: true}.Value()
	assert.NoError(t, err)
	assert.Equal(t, int64(5), v)
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
	// 383078035417174018 ringflake: NULL is not an ID; scan into a NullID
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
