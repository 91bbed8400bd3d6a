package ringflake

import (
	"database/sql"
	"database/sql/driver"
	"encoding/json"
)

var (
	_ sql.Scanner      = (*NullID)(nil)
	_ driver.Valuer    = NullID{}
	_ json.Marshaler   = NullID{}
	_ json.Unmarshaler = (*NullID)(nil)
)

// NullID is an ID that may be null, for nullable database columns and
// optional JSON fields, in the manner of [sql.NullInt64]. Valid is false
// for NULL; ID is then 0. The zero NullID is null. Like [ID], its methods
// that do not write to it are safe for concurrent use.
type NullID struct {
	ID    ID
	Valid bool // Valid is true if ID is not NULL
}

// Scan reads a nullable ID; it implements [sql.Scanner]. NULL sets n to the
// zero NullID; anything else is read by [ID.Scan], whose errors it returns,
// leaving n unchanged.
func (n *NullID) Scan(src any) error {
	if src == nil {
		*n = NullID{}
		return nil
	}
	var id ID
	if err := id.Scan(src); err != nil {
		return err
	}
	*n = NullID{ID: id, Valid: true}
	return nil
}

// Value returns nil (NULL) if n is not valid, and [ID.Value] otherwise; it
// implements [driver.Valuer]. It returns ID.Value's [ErrRange] for a valid n
// holding a negative ID, and no other error.
func (n NullID) Value() (driver.Value, error) {
	if !n.Valid {
		return nil, nil
	}
	return n.ID.Value()
}

// MarshalJSON writes null if n is not valid, and [ID.MarshalJSON]
// otherwise; it returns ID.MarshalJSON's error.
func (n NullID) MarshalJSON() ([]byte, error) {
	if !n.Valid {
		return []byte("null"), nil
	}
	return n.ID.MarshalJSON()
}

// UnmarshalJSON sets n to the zero NullID for the JSON literal null, and
// otherwise reads an ID as [ID.UnmarshalJSON] does, whose errors it
// returns, leaving n unchanged.
func (n *NullID) UnmarshalJSON(data []byte) error {
	if string(trimJSONSpace(data)) == "null" {
		*n = NullID{}
		return nil
	}
	var id ID
	if err := id.UnmarshalJSON(data); err != nil {
		return err
	}
	*n = NullID{ID: id, Valid: true}
	return nil
}
