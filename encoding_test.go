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
	1<<40 - 1, 1 << 40, 383078035417174017, 1<<62 - 1, 1 << 62, math.MaxInt64 - 1, math.MaxInt64,
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
		{math.MaxInt64, "7ZZZZZZZZZZZZ", "NQm6nKp8qFC"},
	}
	for _, tt := range tests {
		t.Run(tt.id.String(), func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.base32, tt.id.Base32(), "Base32()")
			assert.Equal(t, tt.base58, tt.id.Base58(), "Base58()")
			assert.Len(t, tt.id.Base32(), ringflake.Base32Len, "Base32 width")
			assert.LessOrEqual(t, len(tt.id.Base58()), ringflake.MaxBase58Len, "Base58 width")
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

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		parse func(string) (ringflake.ID, error)
		in    string
		want  error
	}{
		{"decimal empty", ringflake.ParseID, "", ringflake.ErrIDLength},
		{"decimal 20 digits", ringflake.ParseID, "00000000000000000001", ringflake.ErrIDLength},
		{"decimal letter", ringflake.ParseID, "12a4", ringflake.ErrIDCharacter},
		{"decimal plus", ringflake.ParseID, "+12", ringflake.ErrIDCharacter},
		{"decimal space", ringflake.ParseID, " 12", ringflake.ErrIDCharacter},
		{"decimal lone minus", ringflake.ParseID, "-", ringflake.ErrIDCharacter},
		{"decimal minus letter", ringflake.ParseID, "-x", ringflake.ErrIDCharacter},
		{"decimal negative", ringflake.ParseID, "-12", ringflake.ErrIDNegative},
		{"decimal negative zero", ringflake.ParseID, "-0", ringflake.ErrIDNegative},
		{"decimal 2^63", ringflake.ParseID, "9223372036854775808", ringflake.ErrIDOverflow},
		{"decimal 19 nines", ringflake.ParseID, "9999999999999999999", ringflake.ErrIDOverflow},
		{"decimal non-ASCII digit", ringflake.ParseID, "١٢", ringflake.ErrIDCharacter},
		{"base32 empty", ringflake.ParseBase32, "", ringflake.ErrIDLength},
		{"base32 short", ringflake.ParseBase32, "000000000001", ringflake.ErrIDLength},
		{"base32 long", ringflake.ParseBase32, "00000000000001", ringflake.ErrIDLength},
		{"base32 lowercase", ringflake.ParseBase32, "0am7qe674q401", ringflake.ErrIDCharacter},
		{"base32 alias I", ringflake.ParseBase32, "000000000000I", ringflake.ErrIDCharacter},
		{"base32 alias O", ringflake.ParseBase32, "000000000000O", ringflake.ErrIDCharacter},
		{"base32 U", ringflake.ParseBase32, "000000000000U", ringflake.ErrIDCharacter},
		{"base32 hyphen", ringflake.ParseBase32, "0AM7Q-674Q401", ringflake.ErrIDCharacter},
		{"base32 first digit 8", ringflake.ParseBase32, "8000000000000", ringflake.ErrIDOverflow},
		{"base32 all Z", ringflake.ParseBase32, "ZZZZZZZZZZZZZ", ringflake.ErrIDOverflow},
		{"base58 empty", ringflake.ParseBase58, "", ringflake.ErrIDLength},
		{"base58 12 digits", ringflake.ParseBase58, "222222222222", ringflake.ErrIDLength},
		{"base58 leading one", ringflake.ParseBase58, "12", ringflake.ErrIDLength},
		{"base58 zero", ringflake.ParseBase58, "0", ringflake.ErrIDCharacter},
		{"base58 O", ringflake.ParseBase58, "2O", ringflake.ErrIDCharacter},
		{"base58 I", ringflake.ParseBase58, "I2", ringflake.ErrIDCharacter},
		{"base58 l", ringflake.ParseBase58, "2l", ringflake.ErrIDCharacter},
		{"base58 minus", ringflake.ParseBase58, "-2", ringflake.ErrIDCharacter},
		{"base58 2^63", ringflake.ParseBase58, "NQm6nKp8qFD", ringflake.ErrIDOverflow},
		{"base58 11 z", ringflake.ParseBase58, "zzzzzzzzzzz", ringflake.ErrIDOverflow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			id, err := tt.parse(tt.in)
			require.Error(t, err, "parse(%q) = %d; want an error", tt.in, id)
			assert.ErrorIs(t, err, tt.want, "parse(%q)", tt.in)
			assert.True(t, strings.HasPrefix(err.Error(), "ringflake: "), "error %q; want the package prefix", err)
			assert.Zero(t, id, "parse(%q) returned an ID with its error", tt.in)
			for _, other := range []error{ringflake.ErrIDLength, ringflake.ErrIDCharacter, ringflake.ErrIDNegative, ringflake.ErrIDOverflow} {
				if other != tt.want {
					assert.NotErrorIs(t, err, other, "parse(%q) wraps one sentinel only", tt.in)
				}
			}
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
			`ringflake: invalid character in ID: base32 "0AM7Q-674Q401" has "-" at offset 5`},
		{"non-ASCII byte", errOf(ringflake.ParseID("1\xff")),
			`ringflake: invalid character in ID: decimal "1\xff" has "\xff" at offset 1`},
		{"length", errOf(ringflake.ParseBase32("ABC")),
			`ringflake: invalid ID length: base32 "ABC" has 3 bytes; want 13`},
		{"overflow", errOf(ringflake.ParseID("9223372036854775808")),
			`ringflake: ID overflows 63 bits: decimal "9223372036854775808"`},
		{"negative", errOf(ringflake.ParseID("-5")),
			`ringflake: ID is negative: decimal "-5"`},
		{"long input is cut", errOf(ringflake.ParseBase58(strings.Repeat("2", 100))),
			`ringflake: invalid ID length: base58 "` + strings.Repeat("2", 32) + `..." has 100 bytes; want 1..11`},
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

func TestNegativeIDEncodingsDoNotParse(t *testing.T) {
	t.Parallel()
	for _, id := range []ringflake.ID{-1, math.MinInt64} {
		for _, enc := range encodings {
			_, err := enc.parse(enc.encode(id))
			assert.Error(t, err, "%s of negative ID %d parsed; want an error", enc.name, id)
		}
	}
}

func ExampleParseID() {
	id, err := ringflake.ParseID("383078035417174017")
	fmt.Println(id, err)
	_, err = ringflake.ParseID("38307803541717401x")
	fmt.Println(errors.Is(err, ringflake.ErrIDCharacter))
	fmt.Println(err)
	// Output:
	// 383078035417174017 <nil>
	// true
	// ringflake: invalid character in ID: decimal "38307803541717401x" has "x" at offset 17
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
	fmt.Println(errors.Is(err, ringflake.ErrIDCharacter))
	_, err = ringflake.ParseBase32("8000000000000")
	fmt.Println(errors.Is(err, ringflake.ErrIDOverflow))
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
	// ringflake: invalid character in ID: base58 "taKjQTiGE0" has "0" at offset 9
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
