package ringflake_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake"
)

// edgeIDs are IDs at the edges of every encoding, in ascending order: zero,
// one digit, powers of the bases and their neighbours, and the largest ID.
var edgeIDs = []ringflake.ID{
	0, 1, 9, 10, 31, 32, 57, 58, 1023, 1024, 3363, 3364,
	1<<40 - 1, 1 << 40, 1<<53 - 1, 1 << 53, 383078035417174017, 1<<62 - 1, 1 << 62, math.MaxInt64 - 1, math.MaxInt64,
}

// encodings are the three text forms, for tests that hold for each.
var encodings = []struct {
	name   string
	encode func(ringflake.ID) string
	parse  func(string) (ringflake.ID, error)
}{
	{"decimal", ringflake.ID.String, ringflake.ParseID},
	{"base32", ringflake.ID.Base32, ringflake.ParseBase32},
	{"base58", ringflake.ID.Base58, ringflake.ParseBase58},
}

func TestEncodingsRoundTrip(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	ids := slices.Clone(edgeIDs)
	for range 1000 {
		ids = append(ids, ringflake.ID(rng.Int64()))
	}
	for _, enc := range encodings {
		t.Run(enc.name, func(t *testing.T) {
			t.Parallel()
			for _, id := range ids {
				s := enc.encode(id)
				got, err := enc.parse(s)
				require.NoError(t, err, "parse(%q) of ID %d", s, id)
				assert.Equal(t, id, got, "parse(%q); want the ID it was encoded from", s)
			}
		})
	}
}

func TestEncodingsKnownValues(t *testing.T) {
	t.Parallel()
	tests := []struct {
		id             ringflake.ID
		base32, base58 string
	}{
		{0, "0000000000000", "1"},
		{1, "0000000000001", "2"},
		{31, "000000000000Z", "Y"},
		{32, "0000000000010", "Z"},
		{57, "000000000001S", "z"},
		{58, "000000000001T", "21"},
		{383078035417174017, "0AM7QE674Q401", "taKjQTiGEC"},
		{1<<53 - 1, "007ZZZZZZZZZZ", "2DLNrMSKug"}, // JSLayout's largest: 13 characters still, and 10
		{1 << 53, "0080000000000", "2DLNrMSKuh"},
		{math.MaxInt64, "7ZZZZZZZZZZZZ", "NQm6nKp8qFC"},
	}
	for _, tt := range tests {
		t.Run(tt.id.String(), func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.base32, tt.id.Base32(), "Base32()")
			assert.Equal(t, tt.base58, tt.id.Base58(), "Base58()")
			assert.Len(t, tt.id.Base32(), 13, "Base32 width")
			assert.LessOrEqual(t, len(tt.id.Base58()), 11, "Base58 width")
		})
	}
}

// TestBase32SortsLikeIDs checks the property the encoding is for: sorting
// the strings sorts the IDs.
func TestBase32SortsLikeIDs(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	ids := slices.Clone(edgeIDs)
	for range 2000 {
		// Mix widths so that short and long IDs meet.
		ids = append(ids, ringflake.ID(rng.Int64()>>rng.IntN(63)))
	}
	strs := make([]string, len(ids))
	for i, id := range ids {
		strs[i] = id.Base32()
	}
	sort.Strings(strs)
	slices.Sort(ids)
	for i, s := range strs {
		assert.Equal(t, ids[i].Base32(), s, "position %d after sorting; want the order of the IDs", i)
	}
}

func TestParseAccepts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		parse func(string) (ringflake.ID, error)
		in    string
		want  ringflake.ID
	}{
		{"decimal zero", ringflake.ParseID, "0", 0},
		{"decimal max", ringflake.ParseID, "9223372036854775807", math.MaxInt64},
		{"decimal zero-padded to 19", ringflake.ParseID, "0000000000000000001", 1},
		{"decimal zero-padded to 20", ringflake.ParseID, "00000000000000000001", 1},
		{"decimal max zero-padded", ringflake.ParseID, "0009223372036854775807", math.MaxInt64},
		{"decimal zeros", ringflake.ParseID, "000", 0},
		{"base32 zero", ringflake.ParseBase32, "0000000000000", 0},
		{"base32 max", ringflake.ParseBase32, "7ZZZZZZZZZZZZ", math.MaxInt64},
		{"base58 zero", ringflake.ParseBase58, "1", 0},
		{"base58 max", ringflake.ParseBase58, "NQm6nKp8qFC", math.MaxInt64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := tt.parse(tt.in)
			require.NoError(t, err, "parse(%q)", tt.in)
			assert.Equal(t, tt.want, got, "parse(%q)", tt.in)
		})
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	syntax, rng := ringflake.ErrSyntax, ringflake.ErrRange
	tests := []struct {
		name  string
		parse func(string) (ringflake.ID, error)
		fn    string
		in    string
		want  error
	}{
		{"decimal empty", ringflake.ParseID, "ParseID", "", syntax},
		{"decimal letter", ringflake.ParseID, "ParseID", "12a4", syntax},
		{"decimal plus", ringflake.ParseID, "ParseID", "+12", syntax},
		{"decimal plus zero", ringflake.ParseID, "ParseID", "+0", syntax},
		{"decimal space", ringflake.ParseID, "ParseID", " 12", syntax},
		{"decimal trailing space", ringflake.ParseID, "ParseID", "12 ", syntax},
		{"decimal underscore", ringflake.ParseID, "ParseID", "1_000", syntax},
		{"decimal lone minus", ringflake.ParseID, "ParseID", "-", syntax},
		{"decimal minus letter", ringflake.ParseID, "ParseID", "-x", syntax},
		{"decimal minus zero", ringflake.ParseID, "ParseID", "-0", syntax},
		{"decimal minus zeros", ringflake.ParseID, "ParseID", "-000", syntax},
		{"decimal double minus", ringflake.ParseID, "ParseID", "--1", syntax},
		{"decimal non-ASCII digits", ringflake.ParseID, "ParseID", "١٢", syntax},
		{"decimal fullwidth digit", ringflake.ParseID, "ParseID", "１", syntax},
		{"decimal invalid UTF-8", ringflake.ParseID, "ParseID", "1\xff", syntax},
		{"decimal overflow then letter", ringflake.ParseID, "ParseID", "99999999999999999999x", syntax},
		{"decimal negative", ringflake.ParseID, "ParseID", "-12", rng},
		{"decimal negative padded", ringflake.ParseID, "ParseID", "-0001", rng},
		{"decimal min int64", ringflake.ParseID, "ParseID", "-9223372036854775808", rng},
		{"decimal huge negative", ringflake.ParseID, "ParseID", "-99999999999999999999", rng},
		{"decimal 2^63", ringflake.ParseID, "ParseID", "9223372036854775808", rng},
		{"decimal 19 nines", ringflake.ParseID, "ParseID", "9999999999999999999", rng},
		{"decimal 2^64-1", ringflake.ParseID, "ParseID", "18446744073709551615", rng},
		{"decimal 2^64", ringflake.ParseID, "ParseID", "18446744073709551616", rng},
		{"base32 empty", ringflake.ParseBase32, "ParseBase32", "", syntax},
		{"base32 short", ringflake.ParseBase32, "ParseBase32", "000000000001", syntax},
		{"base32 long", ringflake.ParseBase32, "ParseBase32", "00000000000001", syntax},
		{"base32 lowercase", ringflake.ParseBase32, "ParseBase32", "0am7qe674q401", syntax},
		{"base32 alias I", ringflake.ParseBase32, "ParseBase32", "000000000000I", syntax},
		{"base32 alias O", ringflake.ParseBase32, "ParseBase32", "000000000000O", syntax},
		{"base32 U", ringflake.ParseBase32, "ParseBase32", "000000000000U", syntax},
		{"base32 hyphen", ringflake.ParseBase32, "ParseBase32", "0AM7Q-674Q401", syntax},
		{"base32 bad and out of range", ringflake.ParseBase32, "ParseBase32", "Z00000000000a", syntax},
		{"base32 first digit 8", ringflake.ParseBase32, "ParseBase32", "8000000000000", rng},
		{"base32 of -1", ringflake.ParseBase32, "ParseBase32", "FZZZZZZZZZZZZ", rng},
		{"base32 all Z", ringflake.ParseBase32, "ParseBase32", "ZZZZZZZZZZZZZ", rng},
		{"base58 empty", ringflake.ParseBase58, "ParseBase58", "", syntax},
		{"base58 leading one", ringflake.ParseBase58, "ParseBase58", "12", syntax},
		{"base58 leading one, long", ringflake.ParseBase58, "ParseBase58", "1zzzzzzzzzzzz", syntax},
		{"base58 zero", ringflake.ParseBase58, "ParseBase58", "0", syntax},
		{"base58 O", ringflake.ParseBase58, "ParseBase58", "2O", syntax},
		{"base58 I", ringflake.ParseBase58, "ParseBase58", "I2", syntax},
		{"base58 l", ringflake.ParseBase58, "ParseBase58", "2l", syntax},
		{"base58 minus", ringflake.ParseBase58, "ParseBase58", "-2", syntax},
		{"base58 2^63", ringflake.ParseBase58, "ParseBase58", "NQm6nKp8qFD", rng},
		{"base58 11 z", ringflake.ParseBase58, "ParseBase58", "zzzzzzzzzzz", rng},
		{"base58 12 digits", ringflake.ParseBase58, "ParseBase58", "222222222222", rng},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			id, err := tt.parse(tt.in)
			require.Error(t, err, "parse(%q) = %d; want an error", tt.in, id)
			assert.Zero(t, id, "parse(%q) returned an ID with its error", tt.in)
			var pe *ringflake.ParseError
			require.ErrorAs(t, err, &pe, "parse(%q) returns a *ParseError", tt.in)
			assert.Equal(t, tt.fn, pe.Func, "ParseError.Func")
			assert.Equal(t, tt.in, pe.Input, "ParseError.Input")
			assert.Equal(t, tt.want, pe.Err, "ParseError.Err of parse(%q)", tt.in)
			assert.ErrorIs(t, err, tt.want, "parse(%q)", tt.in)
			for _, other := range []error{syntax, rng} {
				if other != tt.want {
					assert.NotErrorIs(t, err, other, "parse(%q) wraps one sentinel only", tt.in)
				}
			}
			msg := err.Error()
			assert.True(t, strings.HasPrefix(msg, "ringflake: "+tt.fn+" "), "error %q; want the package prefix and the function", msg)
			assert.NotContains(t, msg, "\n", "error %q; want one line", msg)
		})
	}
}

func TestParseErrorMessages(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"character", errOf(ringflake.ParseBase32("0AM7Q-674Q401")),
			`ringflake: ParseBase32 "0AM7Q-674Q401": invalid ID syntax: character "-" at offset 5 is not uppercase Crockford Base32`},
		{"invalid UTF-8", errOf(ringflake.ParseID("1\xff")),
			`ringflake: ParseID "1\xff": invalid ID syntax: character "\xff" at offset 1 is not a decimal digit`},
		{"non-ASCII character", errOf(ringflake.ParseID("4١")),
			`ringflake: ParseID "4١": invalid ID syntax: character "١" at offset 1 is not a decimal digit`},
		{"empty", errOf(ringflake.ParseID("")),
			`ringflake: ParseID "": invalid ID syntax: empty; want decimal digits`},
		{"length", errOf(ringflake.ParseBase32("01AB")),
			`ringflake: ParseBase32 "01AB": invalid ID syntax: has 4 bytes; want 13 characters`},
		{"base32 range", errOf(ringflake.ParseBase32("8000000000000")),
			`ringflake: ParseBase32 "8000000000000": ID out of range: first character above '7' (2^63-1 is 7ZZZZZZZZZZZZ)`},
		{"leading one", errOf(ringflake.ParseBase58("12")),
			`ringflake: ParseBase58 "12": invalid ID syntax: leading '1' (a zero digit)`},
		{"overflow", errOf(ringflake.ParseID("9223372036854775808")),
			`ringflake: ParseID "9223372036854775808": ID out of range: above 2^63-1`},
		{"negative", errOf(ringflake.ParseID("-5")),
			`ringflake: ParseID "-5": ID out of range: negative`},
		{"long input is cut", errOf(ringflake.ParseBase58(strings.Repeat("2", 100))),
			`ringflake: ParseBase58 "` + strings.Repeat("2", 32) + `"...: ID out of range: above 2^63-1 (NQm6nKp8qFC)`},
		{"no detail", &ringflake.ParseError{Func: "Parse", Input: "x", Err: ringflake.ErrSyntax},
			`ringflake: Parse "x": invalid ID syntax`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Error(t, tt.err)
			assert.Equal(t, tt.want, tt.err.Error())
		})
	}
}

func errOf(_ ringflake.ID, err error) error { return err }

// TestNegativeIDEncodings checks what each encoder writes for a negative
// ID, which is never issued, and that its parser refuses exactly that text
// with ErrRange rather than reading another ID from it.
func TestNegativeIDEncodings(t *testing.T) {
	t.Parallel()
	ids := []ringflake.ID{-1, -2, -58, math.MinInt64, math.MinInt64 + 1, -383078035417174017}
	for _, id := range ids {
		t.Run(id.String(), func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, "-", id.String()[:1], "String of a negative ID has a minus sign")
			b32 := id.Base32()
			if assert.Len(t, b32, 13, "Base32 of a negative ID") {
				assert.Contains(t, "89ABCDEF", b32[:1], "Base32 of %d starts with 8..F (its top bit)", id)
			}
			assert.Len(t, id.Base58(), 11, "Base58 of a negative ID (2^63 and up)")
			for _, enc := range encodings {
				s := enc.encode(id)
				got, err := enc.parse(s)
				assert.ErrorIs(t, err, ringflake.ErrRange, "%s parser on %q, the form of %d", enc.name, s, id)
				assert.Zero(t, got, "%s parser on %q returned an ID", enc.name, s)
			}
		})
	}
	assert.Equal(t, "FZZZZZZZZZZZZ", ringflake.ID(-1).Base32(), "Base32 of -1 is the 64-bit pattern")
	assert.Equal(t, "8000000000000", ringflake.ID(math.MinInt64).Base32(), "Base32 of -2^63 is the 64-bit pattern")
	assert.Equal(t, "NQm6nKp8qFD", ringflake.ID(math.MinInt64).Base58(), "Base58 of -2^63 is 2^63")
}

func ExampleParseID() {
	id, err := ringflake.ParseID("383078035417174017")
	fmt.Println(id, err)
	_, err = ringflake.ParseID("38307803541717401x")
	fmt.Println(errors.Is(err, ringflake.ErrSyntax))
	fmt.Println(err)
	_, err = ringflake.ParseID("9223372036854775808")
	fmt.Println(errors.Is(err, ringflake.ErrRange))
	// Output:
	// 383078035417174017 <nil>
	// true
	// ringflake: ParseID "38307803541717401x": invalid ID syntax: character "x" at offset 17 is not a decimal digit
	// true
}

func ExampleID_String() {
	fmt.Println(ringflake.ID(383078035417174017).String())
	// A negative ID is never issued: String writes it, ParseID refuses it.
	_, err := ringflake.ParseID(ringflake.ID(-5).String())
	fmt.Println(err)
	// Output:
	// 383078035417174017
	// ringflake: ParseID "-5": ID out of range: negative
}

func ExampleID_Base32() {
	// Fixed width and a sorted alphabet: the strings sort like the IDs.
	for _, id := range []ringflake.ID{9, 10, 383078035417174017} {
		fmt.Println(id.Base32())
	}
	// Output:
	// 0000000000009
	// 000000000000A
	// 0AM7QE674Q401
}

func ExampleParseBase32() {
	id, err := ringflake.ParseBase32("0AM7QE674Q401")
	fmt.Println(id, err)
	_, err = ringflake.ParseBase32("0am7qe674q401")
	fmt.Println(errors.Is(err, ringflake.ErrSyntax))
	_, err = ringflake.ParseBase32("8000000000000")
	fmt.Println(errors.Is(err, ringflake.ErrRange))
	// Output:
	// 383078035417174017 <nil>
	// true
	// true
}

func ExampleID_Base58() {
	fmt.Println(ringflake.ID(383078035417174017).Base58())
	// Output: taKjQTiGEC
}

func ExampleParseBase58() {
	id, err := ringflake.ParseBase58("taKjQTiGEC")
	fmt.Println(id, err)
	_, err = ringflake.ParseBase58("taKjQTiGE0") // '0' is not in the alphabet
	fmt.Println(err)
	// Output:
	// 383078035417174017 <nil>
	// ringflake: ParseBase58 "taKjQTiGE0": invalid ID syntax: character "0" at offset 9 is not in the Base58 alphabet
}

func ExampleParseError() {
	_, err := ringflake.ParseBase32("0AM7QE674Q40")
	fmt.Println(errors.Is(err, ringflake.ErrSyntax), errors.Is(err, ringflake.ErrRange))
	var pe *ringflake.ParseError
	if errors.As(err, &pe) {
		fmt.Printf("%s %q\n", pe.Func, pe.Input)
	}
	fmt.Println(err)
	// Output:
	// true false
	// ParseBase32 "0AM7QE674Q40"
	// ringflake: ParseBase32 "0AM7QE674Q40": invalid ID syntax: has 12 bytes; want 13 characters
}

func BenchmarkEncodings(b *testing.B) {
	id := ringflake.ID(383078035417174017)
	for _, enc := range encodings {
		s := enc.encode(id)
		b.Run(enc.name+"/encode", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = enc.encode(id)
			}
		})
		b.Run(enc.name+"/parse", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := enc.parse(s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
