package ringflake

import "strconv"

// ID is a ringflake identifier: a non-negative integer of at most 63 bits,
// laid out as described by a [Layout]. IDs from one generator sort by the
// time they were issued, as long as its clock does not step back. ID is a
// plain value; decode it with the Layout it was made with
// ([Generator.Layout], [DefaultLayout] or [JSLayout]), and convert it to
// and from int64 with a conversion.
//
// An ID has three text forms, each with a strict parser:
//
//   - decimal ([ID.String], [ParseID]): what JSON, text, XML and SQL text
//     columns carry; zero padding is also read;
//   - Base32 ([ID.Base32], [ParseBase32]): 13 characters that sort as
//     strings in the order of the IDs, for keys in stores that compare
//     bytes; one spelling per ID, whatever the layout (those of a 53-bit
//     layout start with "00");
//   - Base58 ([ID.Base58], [ParseBase58]): 1 to 11 characters for people
//     to read and type (at most 10 for IDs below 2^53); one spelling per
//     ID.
//
// A parser returns a [*ParseError] wrapping [ErrSyntax] or [ErrRange]. No
// parser returns a negative ID, and the text an encoder writes for a
// negative ID (which is never issued) is refused by its parser with
// ErrRange.
//
// ID implements [encoding.TextMarshaler] and [encoding.TextUnmarshaler]
// (decimal, so encoding/json writes an ID as a JSON string, which
// JavaScript cannot round), [encoding/json.Unmarshaler] (a JSON string or
// integer), [database/sql.Scanner] and [database/sql/driver.Valuer]; to
// send IDs of a narrow layout as JSON numbers, use [NumberID]. For a
// nullable column use sql.Null[ID] (see [database/sql.Null]); for an
// optional JSON field, a *ID. Its methods are safe for concurrent use,
// except the ones that write to the ID (Scan and the Unmarshal methods),
// which are as safe as any other write to a variable.
type ID int64

// String returns id in decimal, as [ParseID] reads it; it implements
// [fmt.Stringer]. A negative id, which is never issued, is written with a
// minus sign, and ParseID refuses that with [ErrRange]. String is safe for
// concurrent use and returns no error.
func (id ID) String() string { return strconv.FormatInt(int64(id), 10) }
