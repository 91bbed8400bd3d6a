package ringflake

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// base32Alphabet is Crockford's Base32 alphabet: digits and uppercase letters
// without I, L, O and U. It is in ASCII order, which is what makes
// fixed-width Base32 sort like the numbers it encodes.
const base32Alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// base58Alphabet is the Bitcoin alphabet: digits and letters without 0, O,
// I and l, which people confuse.
const base58Alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

const (
	// base32Len is the width of every Base32 ID: 13 digits of 5 bits
	// carry 65 bits, so the first digit of a 64-bit pattern is 0..F and
	// that of an ID (63 bits) 0..7.
	base32Len = 13
	// maxBase58Len is the width of the largest 64-bit pattern in Base58.
	maxBase58Len = 11
	// invalidDigit marks bytes outside an alphabet in the index tables.
	invalidDigit = 0xFF
)

// base32Index and base58Index map a byte to its digit value, or to
// invalidDigit. They are computed once at start-up and only read after.
var (
	base32Index = indexOf(base32Alphabet)
	base58Index = indexOf(base58Alphabet)
)

func indexOf(alphabet string) [256]byte {
	var t [256]byte
	for i := range t {
		t[i] = invalidDigit
	}
	for i := range len(alphabet) {
		t[alphabet[i]] = byte(i)
	}
	return t
}

// ParseError reports input that does not hold an ID, in the manner of
// [strconv.NumError]. Every function of this package that reads an ID
// from text, JSON or a database value returns its failures as a
// *ParseError, as do [ID.MarshalText] and [ID.Value], which refuse a
// negative ID. Test the kind of failure with errors.Is(err, [ErrSyntax])
// or errors.Is(err, [ErrRange]). A ParseError is not modified after it is
// returned.
type ParseError struct {
	// Func is the function that failed: "ParseID", "ParseBase32",
	// "ParseBase58", "UnmarshalText", "UnmarshalJSON", "Scan",
	// "MarshalText" or "Value".
	Func string
	// Input is the text that was read: the string parsed, the content of
	// a JSON string, or the JSON value as given. For a database value
	// that is not text it is the value as %T(%v), or NULL, and for a
	// refused ID its decimal form.
	Input string
	// Err is ErrSyntax or ErrRange.
	Err error

	detail  string // what was wrong, for the message; may be empty
	notText bool   // Input is a formatted value, printed unquoted
}

// maxQuoted bounds how much of the input an error message repeats.
const maxQuoted = 32

// Error returns a one-line message: the function, the input (quoted, and
// cut after 32 bytes), the sentinel's message and what was wrong, such as
// `ringflake: ParseBase32 "01AB": invalid ID syntax: has 4 bytes; want
// 13 characters`.
func (e *ParseError) Error() string {
	in, cut := e.Input, ""
	if len(in) > maxQuoted {
		in, cut = in[:maxQuoted], "..."
	}
	if !e.notText {
		in = strconv.Quote(in)
	}
	in += cut
	reason := "<nil>"
	if e.Err != nil {
		reason = strings.TrimPrefix(e.Err.Error(), "ringflake: ")
	}
	msg := "ringflake: " + e.Func + " " + in + ": " + reason
	if e.detail != "" {
		msg += ": " + e.detail
	}
	return msg
}

// Unwrap returns Err, so that errors.Is(err, ErrSyntax) works on a
// *ParseError.
func (e *ParseError) Unwrap() error { return e.Err }

func syntaxErr(fn, in, detail string) *ParseError {
	return &ParseError{Func: fn, Input: strings.Clone(in), Err: ErrSyntax, detail: detail}
}

func rangeErr(fn, in, detail string) *ParseError {
	return &ParseError{Func: fn, Input: strings.Clone(in), Err: ErrRange, detail: detail}
}

// badChar is the ErrSyntax for the character at byte offset i of s, which
// is not in the alphabet named by want.
func badChar(fn, s string, i int, want string) *ParseError {
	c := s[i : i+1]
	if r, n := utf8.DecodeRuneInString(s[i:]); r != utf8.RuneError || n > 1 {
		c = s[i : i+n] // name the whole character, not its first byte
	}
	return syntaxErr(fn, s, "character "+strconv.Quote(c)+" at offset "+strconv.Itoa(i)+" is not "+want)
}

// ParseID parses the decimal form of an ID, as written by [ID.String]:
// one or more ASCII digits with no sign, space or underscore, whose value
// is at most 2^63-1. Leading zeros are allowed, so a zero-padded column
// parses; ParseID accepts exactly what strconv.ParseUint(s, 10, 63) does.
// It returns a [*ParseError] wrapping [ErrRange] for a value above 2^63-1
// or a negative number (a '-' followed by digits not all zero), and one
// wrapping [ErrSyntax] for any other input that is not an ID.
func ParseID(s string) (ID, error) {
	return parseDecimal("ParseID", s)
}

// parseDecimal is ParseID for the function fn, on a string or on bytes so
// that callers holding bytes do not copy them to parse.
func parseDecimal[T string | []byte](fn string, s T) (ID, error) {
	if len(s) == 0 {
		return 0, syntaxErr(fn, "", "empty; want decimal digits")
	}
	if s[0] == '-' && len(s) > 1 && allDigits(s[1:]) && !allZeros(s[1:]) {
		return 0, rangeErr(fn, string(s), "negative")
	}
	var v uint64
	over := false
	for i := range len(s) {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, badChar(fn, string(s), i, "a decimal digit")
		}
		// Keep scanning after an overflow: a bad character is reported
		// first, as the input is not a number at all.
		if v > (math.MaxInt64-uint64(c-'0'))/10 {
			over = true
		}
		v = v*10 + uint64(c-'0')
	}
	if over {
		return 0, rangeErr(fn, string(s), "above 2^63-1")
	}
	return ID(v), nil
}

func allDigits[T string | []byte](s T) bool {
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func allZeros[T string | []byte](s T) bool {
	for i := range len(s) {
		if s[i] != '0' {
			return false
		}
	}
	return true
}

// Base32 returns id as exactly 13 characters of Crockford's Base32
// alphabet (0-9 and A-Z without I, L, O, U), most significant digit first
// and zero-padded. Because the width is fixed and the alphabet is in ASCII
// order, comparing two Base32 IDs as strings (bytewise, as sort.Strings and
// SQL's binary collation do) gives the same order as comparing the IDs as
// numbers. A negative id, which is never issued, is written as its 64-bit
// two's-complement pattern: 13 characters starting with '8' to 'F', which
// sort after every ID and which [ParseBase32] refuses with [ErrRange].
func (id ID) Base32() string {
	var b [base32Len]byte
	v := uint64(id)
	for i := base32Len - 1; i >= 0; i-- {
		b[i] = base32Alphabet[v&31]
		v >>= 5
	}
	return string(b[:])
}

// ParseBase32 parses the form written by [ID.Base32]: exactly 13 characters
// of the uppercase Crockford alphabet, the first of them '0' to '7'. It is
// strict, so every ID has one Base32 form: lowercase letters, Crockford's
// aliases (I, L, O) and hyphens are refused. It returns a [*ParseError]
// wrapping [ErrSyntax] for an input that is not 13 such characters, and
// one wrapping [ErrRange] for a first character above '7' (a value above
// 2^63-1, such as the form of a negative ID). ParseBase32 is safe for
// concurrent use.
func ParseBase32(s string) (ID, error) {
	const fn = "ParseBase32"
	if len(s) != base32Len {
		return 0, syntaxErr(fn, s, "has "+strconv.Itoa(len(s))+" bytes; want 13 characters")
	}
	var v uint64
	for i := range len(s) {
		d := base32Index[s[i]]
		if d == invalidDigit {
			return 0, badChar(fn, s, i, "uppercase Crockford Base32")
		}
		v = v<<5 | uint64(d)
	}
	// 13 digits carry 65 bits: the first digit's top bits are shifted out
	// above, so test the digit itself.
	if base32Index[s[0]] > 7 {
		return 0, rangeErr(fn, s, "first character above '7' (2^63-1 is 7ZZZZZZZZZZZZ)")
	}
	return ID(v), nil
}

// Base58 returns id in Base58 with the Bitcoin alphabet, most significant
// digit first and without padding: 1 to 11 characters, "1" for 0 and
// "NQm6nKp8qFC" for 2^63-1. It is the short form for people to read and
// type; it does not sort. A negative id, which is never issued, is written
// as its 64-bit pattern read as unsigned: 11 characters that
// [ParseBase58] refuses with [ErrRange]. Base58 is safe for concurrent
// use.
func (id ID) Base58() string {
	var b [maxBase58Len]byte
	v := uint64(id)
	i := len(b)
	for {
		i--
		b[i] = base58Alphabet[v%58]
		v /= 58
		if v == 0 {
			break
		}
	}
	return string(b[i:])
}

// ParseBase58 parses the form written by [ID.Base58]: characters of the
// Bitcoin alphabet whose value is at most 2^63-1 (11 characters at most).
// It is strict, so every ID has one Base58 form: a leading '1' (a zero
// digit) is refused unless it is the whole input. It returns a
// [*ParseError] wrapping [ErrSyntax] for an empty input, a character
// outside the alphabet or a leading '1', and one wrapping [ErrRange] for
// a value above 2^63-1, such as the form of a negative ID.
func ParseBase58(s string) (ID, error) {
	const fn = "ParseBase58"
	if len(s) == 0 {
		return 0, syntaxErr(fn, s, "empty; want Base58 digits")
	}
	var v uint64
	over := false
	for i := range len(s) {
		d := base58Index[s[i]]
		if d == invalidDigit {
			return 0, badChar(fn, s, i, "in the Base58 alphabet")
		}
		if v > (math.MaxInt64-uint64(d))/58 {
			over = true
		}
		v = v*58 + uint64(d)
	}
	if len(s) > 1 && s[0] == base58Alphabet[0] {
		return 0, syntaxErr(fn, s, "leading '1' (a zero digit)")
	}
	if over {
		return 0, rangeErr(fn, s, "above 2^63-1 (NQm6nKp8qFC)")
	}
	return ID(v), nil
}
