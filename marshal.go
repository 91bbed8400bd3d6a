package ringflake

import (
	"encoding"
	"encoding/json"
	"strconv"
	"strings"
)

var (
	_ encoding.TextMarshaler   = ID(0)
	_ encoding.TextAppender    = ID(0)
	_ encoding.TextUnmarshaler = (*ID)(nil)
	_ json.Marshaler           = ID(0)
	_ json.Unmarshaler         = (*ID)(nil)
)

// AppendText appends the decimal form of id to b, as [ID.String] writes it,
// and returns the extended buffer; it implements [encoding.TextAppender]. It
// returns an error wrapping [ErrIDNegative] for a negative id.
func (id ID) AppendText(b []byte) ([]byte, error) {
	if id < 0 {
		return b, parseErr(ErrIDNegative, "decimal", id.String(), "cannot be marshaled")
	}
	return strconv.AppendInt(b, int64(id), 10), nil
}

// MarshalText returns the decimal form of id; it implements
// [encoding.TextMarshaler], so an ID is written in decimal by encoding/xml,
// as a JSON object key, and by anything else that uses text. It returns an
// error wrapping [ErrIDNegative] for a negative id.
func (id ID) MarshalText() ([]byte, error) {
	var b [maxDecimalLen]byte
	return id.AppendText(b[:0])
}

// UnmarshalText parses the decimal form of an ID into id, with the rules
// and errors of [ParseID]. It leaves id unchanged on error.
func (id *ID) UnmarshalText(text []byte) error {
	v, err := ParseID(string(text))
	if err != nil {
		return err
	}
	*id = v
	return nil
}

// MarshalJSON writes id as a JSON string holding its decimal form, such as
// "383078035417174017". A string, not a number, because JavaScript reads
// JSON numbers as float64, which rounds integers above 2^53: most IDs would
// come back changed. It returns an error wrapping [ErrIDNegative] for a
// negative id.
func (id ID) MarshalJSON() ([]byte, error) {
	var b [maxDecimalLen + 2]byte
	out, err := id.AppendText(append(b[:0], '"'))
	if err != nil {
		return nil, err
	}
	return append(out, '"'), nil
}

// UnmarshalJSON reads an ID from a JSON string holding its decimal form
// (what MarshalJSON writes) or from a JSON integer number, which other
// producers write; white space around the value is allowed, as in any JSON
// text. A string is decoded as JSON defines, escapes included ("\u0035" is
// "5"), and its content must then be what [ParseID] takes. A number must
// be a plain JSON integer: no fraction or exponent. Following the
// convention of encoding/json, the JSON literal null leaves id unchanged;
// use a pointer or a [NullID] to tell null from an ID. It returns an error
// wrapping [ErrIDLength], [ErrIDCharacter], [ErrIDNegative] or
// [ErrIDOverflow], and then leaves id unchanged.
func (id *ID) UnmarshalJSON(data []byte) error {
	data = trimJSONSpace(data)
	s := string(data)
	if s == "null" {
		return nil
	}
	form := "JSON number"
	if len(s) > 0 && s[0] == '"' {
		if len(s) < 2 || s[len(s)-1] != '"' {
			return parseErr(ErrIDCharacter, "JSON", s, "is an unterminated string")
		}
		s, form = s[1:len(s)-1], "JSON string"
		if strings.IndexByte(s, '\\') >= 0 {
			// Only an escape needs the full JSON decoder; without one,
			// a string of digits is its own content, and anything else
			// fails as a bad character below.
			var u string
			if err := json.Unmarshal(data, &u); err != nil {
				return parseErr(ErrIDCharacter, "JSON", string(data), "is not a valid JSON string: "+err.Error())
			}
			s = u
		}
	}
	v, err := parseDecimal(form, s)
	if err != nil {
		return err
	}
	*id = v
	return nil
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
