package ringflake

import (
	"database/sql"
	"database/sql/driver"
	"fmt"
	"math"
)

var (
	_ sql.Scanner   = (*ID)(nil)
	_ driver.Valuer = ID(0)
)

// Value returns id as an int64 for a database column; it implements
// [driver.Valuer]. Store IDs in a 64-bit integer column (BIGINT, INTEGER in
// SQLite): they are never negative, so they fit a signed column and sort
// there like the IDs. It returns an error wrapping [ErrIDNegative] for a
// negative id.
func (id ID) Value() (driver.Value, error) {
	if id < 0 {
		return nil, parseErr(ErrIDNegative, "SQL value", id.String(), "cannot be stored")
	}
	return int64(id), nil
}

// Scan reads an ID from a database value; it implements [sql.Scanner]. It
// accepts an int64 (what integer columns give), a uint64 up to 2^63-1
// (unsigned columns in some drivers), and a string or []byte holding the
// decimal form as [ParseID] takes it (text columns, and drivers that return
// numbers as text).
//
// NULL is an error wrapping [ErrIDNull], and id keeps its value: an ID has
// no value to stand for NULL (0 is a valid ID). Scan nullable columns into
// a [NullID], or into a *ID, which database/sql sets to nil for NULL. Other
// errors wrap [ErrIDNegative], [ErrIDOverflow], [ErrIDType], or the
// errors of ParseID; id is unchanged on any error.
func (id *ID) Scan(src any) error {
	var v ID
	switch x := src.(type) {
	case nil:
		return ErrIDNull
	case int64:
		if x < 0 {
			return parseErr(ErrIDNegative, "SQL integer", fmt.Sprint(x), "")
		}
		v = ID(x)
	case uint64:
		if x > math.MaxInt64 {
			return parseErr(ErrIDOverflow, "SQL integer", fmt.Sprint(x), "")
		}
		v = ID(x)
	case string:
		p, err := parseDecimal("SQL text", x)
		if err != nil {
			return err
		}
		v = p
	case []byte:
		p, err := parseDecimal("SQL text", string(x))
		if err != nil {
			return err
		}
		v = p
	default:
		return fmt.Errorf("%w: got %T; want int64, string or []byte", ErrIDType, src)
	}
	*id = v
	return nil
}
