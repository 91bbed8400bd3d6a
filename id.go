package ringflake

import "strconv"

// ID is a ringflake identifier: a non-negative 63-bit integer laid out as
// described by a [Layout]. IDs from one generator sort by the time they were
// issued, as long as its clock does not step back. ID is a plain value;
// decode it with the Layout it was made with ([Generator.Layout] or
// [DefaultLayout]).
//
// An ID has three text forms, each with a strict parser:
//
//   - decimal ([ID.String], [ParseID]): what JSON, text, XML and SQL text
//     columns carry; zero padding to 19 digits is also read;
//   - Base32 ([ID.Base32], [ParseBase32]): 13 characters that sort as
//     strings in the order of the IDs, for keys in stores that compare
//     bytes; one spelling per ID;
//   - Base58 ([ID.Base58], [ParseBase58]): up to 11 characters for people
//     to read and type; one spelling per ID.
//
// ID implements [encoding.TextMarshaler], [encoding.TextAppender],
// [encoding/json.Marshaler] (as a JSON string, which JavaScript cannot
// round), [database/sql.Scanner] and [database/sql/driver.Valuer]; [NullID]
// is the nullable form. Its methods are safe for concurrent use, except
// the ones that write to the ID (Scan and the Unmarshal methods), which
// are as safe as any other write to a variable.
type ID int64

// Int64 returns id as an int64.
func (id ID) Int64() int64 { return int64(id) }

// String returns id in decimal.
func (id ID) String() string { return strconv.FormatInt(int64(id), 10) }
