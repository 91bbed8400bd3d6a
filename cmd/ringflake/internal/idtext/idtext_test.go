package idtext

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake"
)

// Auto reads an input in the one form that gives an ID of the layout, and
// refuses one that two forms read differently, at every form's edges: 13
// digits (decimal and Base32), short digits without a 0 (decimal and
// Base58), leading zeros, the largest ID, and IDs too wide for a 53-bit
// layout.
func TestParseAuto(t *testing.T) {
	t.Parallel()
	def, js := ringflake.DefaultLayout(), ringflake.JSLayout()
	tests := []struct {
		name   string
		layout ringflake.Layout
		in     string
		want   ringflake.ID // when no error
		forms  []string     // the readings of an ambiguous input
		err    string       // in the error of another refusal
	}{
		{"decimal", def, "383078035417174017", 383078035417174017, nil, ""},
		{"base32", def, "0AM7QE674Q401", 383078035417174017, nil, ""},
		{"base58", def, "taKjQTiGEC", 383078035417174017, nil, ""},
		{"13 digits: decimal and base32", def, "0123456789012", 0, []string{"decimal", "base32"}, ""},
		{"13 sevens: decimal and base32", def, "7777777777777", 0, []string{"decimal", "base32"}, ""},
		{"13 digits above base32's range: decimal", def, "8000000000000", 8000000000000, nil, ""},
		{"13 nines: decimal", def, "9999999999999", 9999999999999, nil, ""},
		{"13 zeros: both forms say 0", def, "0000000000000", 0, nil, ""},
		{"12 digits with a 0: decimal", def, "123456789012", 123456789012, nil, ""},
		{"14 digits: decimal", def, "01234567890123", 1234567890123, nil, ""},
		{"zero-padded decimal", def, "0383078035417174017", 383078035417174017, nil, ""},
		{"leading zeros, long", def, "00000000000000000000000000000042", 42, nil, ""},
		{"zero", def, "0", 0, nil, ""},
		{"digits without a 0: decimal and base58", def, "23456789", 0, []string{"decimal", "base58"}, ""},
		{"one: decimal 1 and base58 0", def, "1", 0, []string{"decimal", "base58"}, ""},
		{"11 nines: decimal and base58", def, "99999999999", 0, []string{"decimal", "base58"}, ""},
		{"12 nines: base58 past 2^63", def, "999999999999", 999999999999, nil, ""},
		{"a leading 1 is no base58", def, "11", 11, nil, ""},
		{"the largest ID, decimal", def, "9223372036854775807", 1<<63 - 1, nil, ""},
		{"the largest ID, base32", def, "7ZZZZZZZZZZZZ", 1<<63 - 1, nil, ""},
		{"the largest ID, base58", def, "NQm6nKp8qFC", 1<<63 - 1, nil, ""},
		{"past the largest, decimal", def, "9223372036854775808", 0, nil, `"9223372036854775808" is not an ID in decimal, base32 or base58; as decimal: ParseID "9223372036854775808": ID out of range: above 2^63-1`},
		{"past the largest, base32", def, "8000000000000X", 0, nil, `as base58: ParseBase58 "8000000000000X"`},
		{"negative", def, "-5", 0, nil, `as decimal: ParseID "-5": ID out of range: negative`},
		{"13 characters, none a form", def, "0AM7QE674Q40!", 0, nil, `as base32: ParseBase32 "0AM7QE674Q40!": invalid ID syntax: character "!" at offset 12`},
		{"a short word is no ID", def, "garbage", 0, nil, `"garbage" is a word, not an ID: as base58 it is 1506900037983 (time 2024-01-01T00:05:59.272Z, machine 989, sequence 351), before any ringflake ID (2026-11 on); give --format base58 to decode it so`},
		{"abc is no ID", def, "abc", 0, nil, `"abc" is a word, not an ID: as base58 it is`},
		{"an ID of letters only is read", def, "taKjQTiGEC", 383078035417174017, nil, ""},
		{"base32 in lowercase", def, "0am7qe674q401", 383078035417174017, nil, ""},
		{"base32 in mixed case", def, "0Am7qE674Q401", 383078035417174017, nil, ""},
		{"base32 with O for 0", def, "OAM7QE674Q4o1", 383078035417174017, nil, ""},
		{"base32 with L for 1", def, "0AM7QE674Q40L", 383078035417174017, nil, ""},
		{"base32 with i for 1", def, "0AM7QE674Q40i", 383078035417174017, nil, ""},
		{"base32's U is still no digit", def, "0AM7QE674Q40u", 0, nil, `character "U" at offset 12 is not uppercase Crockford Base32`},
		{"spaces around decimal", def, " 383078035417174017", 383078035417174017, nil, ""},
		{"tabs and newlines around base32", def, "\t0AM7QE674Q401\n", 383078035417174017, nil, ""},
		{"spaces around base58", def, "  taKjQTiGEC  ", 383078035417174017, nil, ""},
		{"a space inside is no ID", def, "3830780 35417174017", 0, nil, `is not an ID in decimal, base32 or base58`},
		{"a word", def, "hello", 0, nil, `as base58: ParseBase58 "hello": invalid ID syntax: character "l" at offset 2 is not in the Base58 alphabet`},
		{"empty", def, "", 0, nil, `"" is not an ID in decimal, base32 or base58; as base58: ParseBase58 "": invalid ID syntax: empty`},
		{"js: 13 digits read as base32 are too wide", js, "0123456789012", 123456789012, nil, ""},
		{"js: 2^53-1", js, "9007199254740991", 1<<53 - 1, nil, ""},
		{"js: 2^53-1 in base32", js, "007ZZZZZZZZZZ", 1<<53 - 1, nil, ""},
		{"js: 2^53-1 in base58", js, "2DLNrMSKug", 1<<53 - 1, nil, ""},
		{"js: 2^53", js, "9007199254740992", 0, nil, "9007199254740992 is above 9007199254740991 (2^53-1), the largest ID of the layout: an ID of another layout?"},
		{"js: a default ID", js, "0AM7QE674Q401", 0, nil, "383078035417174017 is above 9007199254740991 (2^53-1)"},
		{"js: digits without a 0", js, "23456789", 0, []string{"decimal", "base58"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			id, err := Reader{Layout: tt.layout, Ask: "--format "}.Parse(tt.in, "auto")
			var amb *AmbiguousError
			switch {
			case tt.forms != nil:
				require.ErrorAs(t, err, &amb)
				var forms []string
				for _, r := range amb.Readings {
					forms = append(forms, r.Form)
					want, err := Reader{Layout: tt.layout}.Parse(tt.in, r.Form)
					require.NoError(t, err, "the reading %s is the form's own", r.Form)
					assert.Equal(t, want, r.ID, "the reading %s", r.Form)
				}
				assert.Equal(t, tt.forms, forms)
			case tt.err != "":
				require.Error(t, err)
				assert.False(t, errors.As(err, &amb), "not ambiguous: %v", err)
				assert.Contains(t, err.Error(), tt.err)
			default:
				require.NoError(t, err)
				assert.Equal(t, tt.want, id)
			}
		})
	}
}

// The refusal names every reading, under the layout, and how to pick one,
// as the command line and a URL each ask.
func TestAmbiguousMessage(t *testing.T) {
	t.Parallel()
	_, err := Reader{Layout: ringflake.DefaultLayout(), Ask: "--format "}.Parse("0123456789012", "auto")
	assert.EqualError(t, err, `"0123456789012" is ambiguous: `+
		`decimal 123456789012 (time 2024-01-01T00:00:29.434Z, machine 401, sequence 2580) or `+
		`base32 38390726480134178 (time 2024-04-15T22:31:02.458Z, machine 72, sequence 34); `+
		`give --format decimal or --format base32`)
	_, err = Reader{Layout: ringflake.JSLayout(), Ask: "?format="}.Parse("23456789", "auto")
	assert.EqualError(t, err, `"23456789" is ambiguous: `+
		`decimal 23456789 (time 2024-01-01T00:00:05.726Z, machine 48, sequence 21) or `+
		`base58 2286136885086 (time 2024-01-07T11:02:18.887Z, machine 61, sequence 30); `+
		`give ?format=decimal or ?format=base58`)
}

// A named form reads the input as that form alone, ambiguous or not, and
// still refuses an ID too wide for the layout.
func TestParseNamedForm(t *testing.T) {
	t.Parallel()
	r := Reader{Layout: ringflake.DefaultLayout()}
	for _, tt := range []struct {
		in, format string
		want       ringflake.ID
		err        error
	}{
		{"0123456789012", "decimal", 123456789012, nil},
		{"0123456789012", "base32", 38390726480134178, nil},
		{"23456789", "base58", 2286136885086, nil},
		{"23456789", "decimal", 23456789, nil},
		{"taKjQTiGEC", "decimal", 0, ringflake.ErrSyntax},
		{"8ZZZZZZZZZZZZ", "base32", 0, ringflake.ErrRange},
		{"0am7qe674q401", "base32", 383078035417174017, nil},
		{"abc", "base58", 113019, nil}, // a word, read as the form named
		{" 21 ", "decimal", 21, nil},
	} {
		id, err := r.Parse(tt.in, tt.format)
		if tt.err != nil {
			assert.ErrorIs(t, err, tt.err, "%s as %s", tt.in, tt.format)
			continue
		}
		require.NoError(t, err, "%s as %s", tt.in, tt.format)
		assert.Equal(t, tt.want, id, "%s as %s", tt.in, tt.format)
	}
	_, err := Reader{Layout: ringflake.JSLayout()}.Parse("0123456789012", "base32")
	assert.EqualError(t, err, "38390726480134178 is above 9007199254740991 (2^53-1), the largest ID of the layout: an ID of another layout?")
	for _, f := range []string{"auto", "decimal", "base32", "base58"} {
		assert.True(t, Known(f), f)
	}
	assert.False(t, Known("hex"))
}

// FuzzParse checks the promise for any input: auto answers an ID only when
// one form reads the input as that ID and no form reads it as another,
// and otherwise refuses; an ambiguous refusal lists exactly the forms that
// read different IDs; a word refusal comes only for letters that Base58
// alone reads, and gives that reading.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"0123456789012", "383078035417174017", "0AM7QE674Q401", "taKjQTiGEC", "1", "0", "23456789", "", "-5", "0000000000000", "A", "iAAAAAAAAAAAA"} {
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, s string, narrow bool) {
		l := ringflake.DefaultLayout()
		if narrow {
			l = ringflake.JSLayout()
		}
		r := Reader{Layout: l}
		readings := map[ringflake.ID][]string{}
		for _, form := range []string{"decimal", "base32", "base58"} {
			if id, err := r.Parse(s, form); err == nil {
				readings[id] = append(readings[id], form)
			}
		}
		id, err := r.Parse(s, "auto")
		var amb *AmbiguousError
		var word *WordError
		switch {
		case len(readings) == 1 && errors.As(err, &word):
			if forms := readings[word.Reading.ID]; len(forms) != 1 || forms[0] != "base58" || word.Reading.Form != "base58" || !isWord(strings.TrimSpace(s)) {
				t.Fatalf("Parse(%q) refused a word %v; the forms read %v", s, word.Reading, readings)
			}
		case len(readings) == 1 && err == nil:
			if _, ok := readings[id]; !ok {
				t.Fatalf("Parse(%q) = %d, which no form reads; readings %v", s, id, readings)
			}
		case len(readings) > 1 && errors.As(err, &amb):
			if len(amb.Readings) != len(readings) {
				t.Fatalf("Parse(%q) lists %v; want the %d readings %v", s, amb.Readings, len(readings), readings)
			}
		case len(readings) == 0 && err != nil && !errors.As(err, &amb):
		default:
			t.Fatalf("Parse(%q) = %d, %v; the forms read %v", s, id, err, readings)
		}
	})
}

// Hint flags an ID whose time under the layout no ringflake ID can have,
// and gives its reading under each other named layout where the time is
// plausible: an ID of the js layout read under the default one gives a time
// in early 2024.
func TestHint(t *testing.T) {
	t.Parallel()
	def, js := ringflake.DefaultLayout(), ringflake.JSLayout()
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	compose := func(l ringflake.Layout, at time.Time, machine, seq int64) ringflake.ID {
		id, err := l.Compose(ringflake.Parts{Time: at, Machine: machine, Sequence: seq})
		require.NoError(t, err)
		return id
	}
	jsID := compose(js, now, 5, 7)
	for _, tt := range []struct {
		name   string
		layout ringflake.Layout
		id     ringflake.ID
		want   string // "" for no hint
	}{
		{"a default ID of now", def, compose(def, now, 185, 1), ""},
		{"a js ID of now, under js", js, jsID, ""},
		{"a js ID of now, under default", def, jsID,
			fmt.Sprintf("%d: time 2024-01-02T00:54:08.437Z is before any ringflake ID (2026-11 on): an ID of another layout, or not an ID? With --layout js it reads time 2026-11-28T12:00:00Z, machine 5, sequence 7.", jsID)},
		{"a small number", def, 21, "21: time 2024-01-01T00:00:00Z is before any ringflake ID (2026-11 on): an ID of another layout, or not an ID?"},
		{"the first day", def, compose(def, time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), 0, 0), ""},
		{"a day ahead", def, compose(def, now.Add(24*time.Hour), 0, 0), ""},
		{"two days ahead", def, compose(def, now.Add(48*time.Hour), 0, 0),
			fmt.Sprintf("%d: time 2026-11-30T12:00:00Z is in the future: an ID of another layout, or not an ID?", compose(def, now.Add(48*time.Hour), 0, 0))},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := Reader{Layout: tt.layout, Now: func() time.Time { return now }}
			assert.Equal(t, tt.want, r.Hint(tt.id, "--layout "))
		})
	}
}
