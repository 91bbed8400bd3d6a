package ringflake

import (
	"bytes"
	"encoding"
	"encoding/json"
	"strconv"
)

var (
	_ encoding.TextMarshaler   = ID(0)
	_ encoding.TextUnmarshaler = (*ID)(nil)
	_ json.Unmarshaler         = (*ID)(nil)
	_ json.Marshaler           = NumberID(0)
	_ json.Unmarshaler         = (*NumberID)(nil)
)

// maxDecimalLen is the length of 2^63-1 in decimal.
const maxDecimalLen = 19

// negativeErr is the ErrRange with which fn refuses the negative id.
func negativeErr(fn string, id ID) *ParseError {
	return &ParseError{Func: fn, Input: id.String(), Err: ErrRange, detail: "IDs are never negative", notText: true}
}

// MarshalText returns the decimal form of id, as [ID.String] writes it; it
// implements [encoding.TextMarshaler]. encoding/json therefore writes an ID
// as a JSON string, such as "383078035417174017", and as an object key:
// a string, not a number, because JavaScript reads JSON numbers as
// float64, which rounds integers above 2^53, so most IDs would come back
// changed ([NumberID] writes a number, for the IDs of a layout of at most
// 53 bits). encoding/xml and anything else that uses text write it in
// decimal too. It returns a
// [*ParseError] wrapping [ErrRange] for a negative id, which is never
// issued.
func (id ID) MarshalText() ([]byte, error) {
	if id < 0 {
		return nil, negativeErr("MarshalText", id)
	}
	var b [maxDecimalLen]byte
	return strconv.AppendInt(b[:0], int64(id), 10), nil
}

// UnmarshalText parses the decimal form of an ID into id, with the rules
// of [ParseID]; it implements [encoding.TextUnmarshaler]. It returns a
// [*ParseError] wrapping [ErrSyntax] or [ErrRange], as ParseID does, and
// then leaves id unchanged. It writes to id, so it is as safe for
// concurrent use as any other write to a variable.
func (id *ID) UnmarshalText(text []byte) error {
	v, err := parseDecimal("UnmarshalText", text)
	if err != nil {
		return err
	}
	*id = v
	return nil
}

// UnmarshalJSON reads an ID from a JSON string holding its decimal form
// (what encoding/json writes with [ID.MarshalText]) or from a JSON integer
// number, which other producers write; it implements [json.Unmarshaler].
// White space around the value is allowed, as in any JSON text. A string
// is decoded as JSON defines, escapes included ("\u0035" is "5"), and its
// content must then be what [ParseID] takes. A number must be a JSON
// integer: no fraction, exponent or leading zero. Following the convention
// of encoding/json, the JSON literal null leaves id unchanged; use a *ID
// to tell null from an ID. It returns a [*ParseError] wrapping [ErrRange]
// for a negative number or a value above 2^63-1, and one wrapping
// [ErrSyntax] for anything else that is not an ID, and then leaves id
// unchanged.
func (id *ID) UnmarshalJSON(data []byte) error {
	const fn = "UnmarshalJSON"
	data = trimJSONSpace(data)
	var v ID
	var err error
	switch {
	case string(data) == "null":
		return nil
	case len(data) >= 2 && data[0] == '"' && data[len(data)-1] == '"' && bytes.IndexByte(data, '\\') < 0:
		// Without an escape, a string of digits is its own content, and
		// anything else fails as a bad character, invalid JSON included.
		v, err = parseDecimal(fn, data[1:len(data)-1])
	case len(data) > 0 && data[0] == '"':
		var s string
		if jerr := json.Unmarshal(data, &s); jerr != nil {
			return syntaxErr(fn, string(data), "not a valid JSON string: "+jerr.Error())
		}
		v, err = parseDecimal(fn, s)
	case !isJSONInteger(data):
		return syntaxErr(fn, string(data), "want a JSON string or integer")
	default:
		v, err = parseDecimal(fn, data)
	}
	if err != nil {
		return err
	}
	*id = v
	return nil
}

// maxSafe is 2^53-1, JavaScript's Number.MAX_SAFE_INTEGER: the largest n
// such that n and every integer below it are exact as a float64.
const maxSafe = 1<<53 - 1

// NumberID is an ID that JSON carries as a number, such as
// {"id":9007199254740991}, for front ends, spreadsheets and JSON columns
// that want one. JavaScript reads a JSON number as a float64, exact only up
// to 2^53-1, so NumberID is for the IDs of a layout of at most 53 bits,
// such as [JSLayout], whose IDs always fit; [ID], a JSON string, is the
// safe default for every other. Convert with NumberID(id) and ID(n); a
// NumberID has no other methods, and outside JSON it is the integer it
// holds (database/sql stores it as one). Its methods are as safe for
// concurrent use as ID's.
type NumberID ID

// MarshalJSON writes n as a JSON integer; it implements [json.Marshaler].
// It returns a [*ParseError] wrapping [ErrRange] for an n above 2^53-1,
// which JavaScript would round (the ID of a wider layout than [JSLayout]:
// use ID), or a negative n, which is never issued; encoding/json then fails
// the whole value, rather than write a number that reads back as another
// ID.
func (n NumberID) MarshalJSON() ([]byte, error) {
	switch {
	case n < 0:
		return nil, negativeErr("MarshalJSON", ID(n))
	case n > maxSafe:
		return nil, &ParseError{Func: "MarshalJSON", Input: ID(n).String(), Err: ErrRange, notText: true,
			detail: "above 2^53-1, which JavaScript rounds: a NumberID is for layouts of at most 53 bits (JSLayout); ID is a JSON string"}
	}
	var b [maxDecimalLen]byte
	return strconv.AppendInt(b[:0], int64(n), 10), nil
}

// UnmarshalJSON reads n from a JSON integer, or from a JSON string holding
// one, with the rules of [ID.UnmarshalJSON], and then requires a value of
// at most 2^53-1: a larger number may already have been rounded by the
// JavaScript that wrote it. It returns a [*ParseError] wrapping [ErrRange]
// for such a value, and as ID.UnmarshalJSON does otherwise; on an error n
// is left unchanged, and the literal null leaves it unchanged too.
func (n *NumberID) UnmarshalJSON(data []byte) error {
	var v ID
	if string(trimJSONSpace(data)) == "null" {
		return nil
	}
	if err := v.UnmarshalJSON(data); err != nil {
		return err
	}
	if v > maxSafe {
		return &ParseError{Func: "UnmarshalJSON", Input: string(trimJSONSpace(data)), Err: ErrRange,
			detail: "above 2^53-1, which JavaScript rounds: a NumberID is for layouts of at most 53 bits"}
	}
	*n = NumberID(v)
	return nil
}

// isJSONInteger reports whether b is a JSON number with no fraction or
// exponent: an optional '-', then 0 or digits not starting with 0.
func isJSONInteger(b []byte) bool {
	if len(b) > 0 && b[0] == '-' {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 1 && b[0] == '0' {
		return false
	}
	return allDigits(b)
}

// trimJSONSpace removes the white space JSON allows around a value.
func trimJSONSpace(b []byte) []byte {
	isSpace := func(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}
