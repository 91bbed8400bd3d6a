package ringflake

import (
	"fmt"
	"math"
	"strconv"
)

// Widths of the text encodings.
const (
	// Base32Len is the length of every Base32 ID: 13 characters of 5 bits
	// hold the 63 bits of an ID, the first holding only 3 (0..7).
	Base32Len = 13
	// MaxBase58Len is the length of the longest Base58 ID (2^63-1 is
	// "NQm6nKp8qFC"); shorter IDs are shorter.
	MaxBase58Len = 11
	// maxDecimalLen is the length of 2^63-1 in decimal.
	maxDecimalLen = 19
)

// base32Alphabet is Crockford's Base32 alphabet: digits and uppercase letters
// without I, L, O and U. It is in ASCII order, which is what makes
// fixed-width Base32 sort like the numbers it encodes.
const base32Alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// base58Alphabet is the Bitcoin alphabet: digits and letters without 0, O,
// I and l, which people confuse.
const base58Alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

// invalidDigit marks bytes outside an alphabet in the index tables.
const invalidDigit = 0xFF

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

// ParseID parses the decimal form of an ID, as written by [ID.String]: 1 to
// 19 ASCII digits with no sign or spaces. Leading zeros are allowed, so a
// zero-padded 19-digit column parses. It returns an error wrapping
// [ErrIDLength], [ErrIDCharacter], [ErrIDNegative] (for a '-' followed by
// digits) or [ErrIDOverflow]. ParseID is safe for concurrent use.
func ParseID(s string) (ID, error) {
	return parseDecimal("decimal", s)
}

// parseDecimal is ParseID with the name of the form being parsed, for the
// error message.
func parseDecimal(form, s string) (ID, error) {
	if len(s) > 1 && s[0] == '-' && allDigits(s[1:]) {
		return 0, parseErr(ErrIDNegative, form, s, "")
	}
	if len(s) == 0 || len(s) > maxDecimalLen {
		return 0, parseErr(ErrIDLength, form, s, fmt.Sprintf("has %d bytes; want 1..%d digits", len(s), maxDecimalLen))
	}
	var v uint64
	for i := range len(s) {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, badChar(form, s, i)
		}
		v = v*10 + uint64(c-'0') // 19 digits fit in a uint64
	}
	if v > math.MaxInt64 {
		return 0, parseErr(ErrIDOverflow, form, s, "")
	}
	return ID(v), nil
}

func allDigits(s string) bool {
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return len(s) > 0
}

// Base32 returns id as exactly 13 characters of Crockford's Base32
// alphabet (0-9 and A-Z without I, L, O, U), most significant digit first
// and zero-padded. Because the width is fixed and the alphabet is in ASCII
// order, comparing two Base32 IDs as strings (bytewise, as sort.Strings and
// SQL's binary collation do) gives the same order as comparing the IDs as
// numbers. id must not be negative: a negative id encodes as its 64-bit
// pattern, which sorts after every ID and which [ParseBase32] rejects.
func (id ID) Base32() string {
	var b [Base32Len]byte
	return string(appendBase32(b[:0], uint64(id)))
}

func appendBase32(dst []byte, v uint64) []byte {
	var b [Base32Len]byte
	for i := Base32Len - 1; i >= 0; i-- {
		b[i] = base32Alphabet[v&31]
		v >>= 5
	}
	return append(dst, b[:]...)
}

// ParseBase32 parses the form written by [ID.Base32]: exactly 13 characters
// of the uppercase Crockford alphabet. It is strict, so every ID has one
// Base32 form: lowercase letters and Crockford's aliases (I, L, O) are
// refused, as are hyphens. It returns an error wrapping [ErrIDLength],
// [ErrIDCharacter] or [ErrIDOverflow] (a first character above '7').
// ParseBase32 is safe for concurrent use.
func ParseBase32(s string) (ID, error) {
	if len(s) != Base32Len {
		return 0, parseErr(ErrIDLength, "base32", s, fmt.Sprintf("has %d bytes; want %d", len(s), Base32Len))
	}
	var v uint64
	for i := range len(s) {
		d := base32Index[s[i]]
		if d == invalidDigit {
			return 0, badChar("base32", s, i)
		}
		v = v<<5 | uint64(d)
	}
	// 13 digits carry 65 bits: the first digit's top two bits are shifted
	// out above, so test the digit itself.
	if base32Index[s[0]] > 7 {
		return 0, parseErr(ErrIDOverflow, "base32", s, "first character above '7'")
	}
	return ID(v), nil
}

// Base58 returns id in Base58 with the Bitcoin alphabet, most significant
// digit first and without padding: 1 to 11 characters, "1" for 0. It is
// the short form for people to read and type; it does not sort. id must not
// be negative: a negative id encodes as its 64-bit pattern, which
// [ParseBase58] rejects.
func (id ID) Base58() string {
	var b [MaxBase58Len + 1]byte
	return string(appendBase58(b[:0], uint64(id)))
}

func appendBase58(dst []byte, v uint64) []byte {
	var b [MaxBase58Len + 1]byte // 2^64-1 needs 11 digits; one spare
	i := len(b)
	for {
		i--
		b[i] = base58Alphabet[v%58]
		v /= 58
		if v == 0 {
			break
		}
	}
	return append(dst, b[i:]...)
}

// ParseBase58 parses the form written by [ID.Base58]: 1 to 11 characters of
// the Bitcoin alphabet. It is strict, so every ID has one Base58 form: a
// leading '1' (a zero digit) is refused unless it is the whole input. It
// returns an error wrapping [ErrIDLength], [ErrIDCharacter] or
// [ErrIDOverflow]. ParseBase58 is safe for concurrent use.
func ParseBase58(s string) (ID, error) {
	if len(s) == 0 || len(s) > MaxBase58Len {
		return 0, parseErr(ErrIDLength, "base58", s, fmt.Sprintf("has %d bytes; want 1..%d", len(s), MaxBase58Len))
	}
	var v uint64
	for i := range len(s) {
		d := base58Index[s[i]]
		if d == invalidDigit {
			return 0, badChar("base58", s, i)
		}
		if v > (math.MaxInt64-uint64(d))/58 {
			return 0, parseErr(ErrIDOverflow, "base58", s, "")
		}
		v = v*58 + uint64(d)
	}
	if len(s) > 1 && s[0] == base58Alphabet[0] {
		return 0, parseErr(ErrIDLength, "base58", s, "has a leading '1' (a zero digit)")
	}
	return ID(v), nil
}

// maxQuoted bounds how much of a bad input an error message repeats.
const maxQuoted = 32

// parseErr wraps sentinel with the form and the input, quoted and cut to
// maxQuoted bytes, and an optional detail.
func parseErr(sentinel error, form, s, detail string) error {
	q := s
	if len(q) > maxQuoted {
		q = q[:maxQuoted] + "..."
	}
	if detail != "" {
		return fmt.Errorf("%w: %s %s %s", sentinel, form, strconv.Quote(q), detail)
	}
	return fmt.Errorf("%w: %s %s", sentinel, form, strconv.Quote(q))
}

func badChar(form, s string, i int) error {
	return parseErr(ErrIDCharacter, form, s, fmt.Sprintf("has %s at offset %d", strconv.QuoteToASCII(s[i:i+1]), i))
}
