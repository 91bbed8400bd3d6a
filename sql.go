package ringflake

import (
	"database/sql"
	"database/sql/driver"
	"fmt"
	"math"
	"strconv"
)

var (
	_ sql.Scanner   = (*ID)(nil)
	_ driver.Valuer = ID(0)
)

// Value returns id as an int64 for a database column; it implements
// [driver.Valuer]. Store IDs in a 64-bit integer column (BIGINT, INTEGER in
// SQLite): they are never negative, so they fit a signed column and sort
// there like the IDs. It returns a
// [*ParseError] wrapping [ErrRange] for a negative id, which is never
// issued.
func (id ID) Value() (driver.Value, error) {
	if id < 0 {
		return nil, negativeErr("Value", id)
	}
	return int64(id), nil
}

// Scan reads an ID from a database value; it implements [sql.Scanner]. It
// accepts an int64 (what integer columns give), a uint64 (unsigned columns
// in some drivers), and a string or []byte holding the decimal form as
// [ParseID] takes it (text columns, and drivers that return numbers as
// text).
//
// An ID has no value to stand for NULL (0 is a valid ID), so NULL is an
// error: scan a nullable column into a sql.Null[ID] (see [sql.Null]),
// whose Valid is false for NULL and which writes NULL or the ID's
// [ID.Value], or into a *ID, which database/sql sets to nil.
//
// Scan returns a [*ParseError] wrapping [ErrRange] for a negative number
// or one above 2^63-1, and one wrapping [ErrSyntax] for NULL, a value of
// another type, or text that is not an ID; id is unchanged on any error.
func (id *ID) Scan(src any) error {
	const fn = "Scan"
	var v ID
	switch x := src.(type) {
	case nil:
		return &ParseError{Func: fn, Input: "NULL", Err: ErrSyntax, notText: true,
			detail: "scan a nullable column into a sql.Null[ringflake.ID]"}
	case int64:
		if x < 0 {
			return &ParseError{Func: fn, Input: "int64(" + strconv.FormatInt(x, 10) + ")", Err: ErrRange, notText: true, detail: "negative"}
		}
		v = ID(x)
	case uint64:
		if x > math.MaxInt64 {
			return &ParseError{Func: fn, Input: "uint64(" + strconv.FormatUint(x, 10) + ")", Err: ErrRange, notText: true, detail: "above 2^63-1"}
		}
		v = ID(x)
	case string:
		p, err := parseDecimal(fn, x)
		if err != nil {
			return err
		}
		v = p
	case []byte:
		p, err := parseDecimal(fn, x)
		if err != nil {
			return err
		}
		v = p
	default:
		return &ParseError{Func: fn, Input: fmt.Sprintf("%T(%v)", src, src), Err: ErrSyntax, notText: true,
			detail: "want int64, uint64, string or []byte"}
	}
	*id = v
	return nil
}
