package ringflake_test

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake"
)

func TestJSONRoundTrip(t *testing.T) {
	t.Parallel()
	type doc struct {
		ID   ringflake.ID             `json:"id"`
		Ptr  *ringflake.ID            `json:"ptr"`
		Nil  *ringflake.ID            `json:"nil"`
		Keys map[ringflake.ID]string  `json:"keys"`
		List []ringflake.ID           `json:"list"`
		Nest map[string]*ringflake.ID `json:"nest"`
	}
	for _, id := range edgeIDs {
		t.Run(id.String(), func(t *testing.T) {
			t.Parallel()
			in := doc{
				ID: id, Ptr: &id, Keys: map[ringflake.ID]string{id: "x"}, List: []ringflake.ID{id, 0},
				Nest: map[string]*ringflake.ID{"a": &id, "b": nil},
			}
			b, err := json.Marshal(in)
			require.NoError(t, err)
			s := id.String()
			want := `{"id":"` + s + `","ptr":"` + s + `","nil":null,"keys":{"` + s + `":"x"},"list":["` + s + `","0"],"nest":{"a":"` + s + `","b":null}}`
			assert.Equal(t, want, string(b), "an ID marshals as a JSON string of its decimal form; a nil *ID as null")
			var out doc
			require.NoError(t, json.Unmarshal(b, &out), "unmarshal %s", b)
			assert.Equal(t, in, out, "round trip through %s", b)
		})
	}
}

// TestMarshalJSON checks what encoding/json writes for an ID through
// MarshalText: the decimal form as a JSON string, with or without the
// ",string" option.
func TestMarshalJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		id   ringflake.ID
		want string
	}{
		{0, `"0"`},
		{123, `"123"`},
		{383078035417174017, `"383078035417174017"`},
		{math.MaxInt64, `"9223372036854775807"`},
	}
	for _, tt := range tests {
		b, err := json.Marshal(tt.id)
		require.NoError(t, err, "json.Marshal(%d)", tt.id)
		assert.Equal(t, tt.want, string(b), "json.Marshal(%d)", tt.id)
		b, err = json.Marshal(struct {
			ID ringflake.ID `json:"id,string"`
		}{tt.id})
		require.NoError(t, err, "json.Marshal(%d) with ,string", tt.id)
		assert.Equal(t, `{"id":`+tt.want+`}`, string(b), "json.Marshal(%d) with ,string", tt.id)
	}
}

func TestUnmarshalJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    ringflake.ID
		wantErr error
	}{
		{`"383078035417174017"`, 383078035417174017, nil},
		{`383078035417174017`, 383078035417174017, nil},
		{`0`, 0, nil},
		{`"0"`, 0, nil},
		{`9223372036854775807`, math.MaxInt64, nil},
		{`null`, 77, nil}, // unchanged
		{`9223372036854775808`, 77, ringflake.ErrRange},
		{`-1`, 77, ringflake.ErrRange},
		{`"-1"`, 77, ringflake.ErrRange},
		{`1.0`, 77, ringflake.ErrSyntax},
		{`1e3`, 77, ringflake.ErrSyntax},
		{`""`, 77, ringflake.ErrSyntax},
		{`"\u0035"`, 5, nil},
		{`"\u0033\u0038\u0033078035417174017"`, 383078035417174017, nil},
		{`"1\u0032"`, 12, nil},
		{`"\u0031\u0061"`, 77, ringflake.ErrSyntax}, // "1a"
		{`"\/1"`, 77, ringflake.ErrSyntax},          // "/1"
		{`"\u002D1"`, 77, ringflake.ErrRange},       // "-1"
		{" \t\r\n\"42\" \n", 42, nil},
		{" 42 ", 42, nil},
		{" null ", 77, nil},
		{`"00042"`, 42, nil},
		{`"9223372036854775808"`, 77, ringflake.ErrRange},
		{`18446744073709551616`, 77, ringflake.ErrRange},
		{`-0`, 77, ringflake.ErrSyntax},
		{`"\u0661"`, 77, ringflake.ErrSyntax}, // "١", an Arabic-Indic digit
		{`"0AM7QE674Q401"`, 77, ringflake.ErrSyntax},
		{`true`, 77, ringflake.ErrSyntax},
		{`"null"`, 77, ringflake.ErrSyntax},
		{`{}`, 77, ringflake.ErrSyntax},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			id := ringflake.ID(77)
			err := json.Unmarshal([]byte(tt.in), &id)
			if tt.wantErr != nil {
				assert.ErrorIs(t, err, tt.wantErr, "json.Unmarshal(%s)", tt.in)
			} else {
				assert.NoError(t, err, "json.Unmarshal(%s)", tt.in)
			}
			assert.Equal(t, tt.want, id, "ID after json.Unmarshal(%s)", tt.in)
		})
	}
}

// TestJSONStringOption covers code moved from int64 fields tagged
// `json:",string"`: the tag changes nothing for an ID.
func TestJSONStringOption(t *testing.T) {
	t.Parallel()
	type doc struct {
		ID ringflake.ID `json:"id,string"`
	}
	b, err := json.Marshal(doc{ID: 383078035417174017})
	require.NoError(t, err)
	assert.Equal(t, `{"id":"383078035417174017"}`, string(b))
	var out doc
	require.NoError(t, json.Unmarshal(b, &out))
	assert.Equal(t, ringflake.ID(383078035417174017), out.ID)
}

func TestUnmarshalJSONDirect(t *testing.T) {
	t.Parallel()
	// encoding/json validates its input first; a direct call need not be
	// valid JSON, and what is not is refused as ErrSyntax.
	for _, in := range []string{``, ` `, `"`, `"1`, `1"`, `[1]`, `"\u003"`, `"\x31"`, `"\u0031`, `"\"`,
		`"1" "2"`, "\f1", `0123`, `00`, `-`, `+1`, `1.`, `--1`, `-01`, `nul`, `null1`, "\"1\x002\""} {
		id := ringflake.ID(77)
		err := id.UnmarshalJSON([]byte(in))
		assert.ErrorIs(t, err, ringflake.ErrSyntax, "UnmarshalJSON(%q)", in)
		var pe *ringflake.ParseError
		if assert.ErrorAs(t, err, &pe, "UnmarshalJSON(%q)", in) {
			assert.Equal(t, "UnmarshalJSON", pe.Func, "ParseError.Func")
		}
		assert.Equal(t, ringflake.ID(77), id, "UnmarshalJSON(%q) changed the ID on error", in)
	}
}

func TestUnmarshalJSONDirectSpace(t *testing.T) {
	t.Parallel()
	// A JSON text may have white space around its value; encoding/json
	// strips it, and a direct call takes it too.
	for _, in := range []string{" 42", "42\n", "\t\"42\"\r\n", " \"4\u0032\" "} {
		var id ringflake.ID
		assert.NoError(t, id.UnmarshalJSON([]byte(in)), "UnmarshalJSON(%q)", in)
		assert.Equal(t, ringflake.ID(42), id, "UnmarshalJSON(%q)", in)
	}
	id := ringflake.ID(77)
	assert.NoError(t, id.UnmarshalJSON([]byte(" null\n")), "UnmarshalJSON of null with white space")
	assert.Equal(t, ringflake.ID(77), id, "null with white space leaves the ID unchanged")
}

func TestMarshalNegative(t *testing.T) {
	t.Parallel()
	id := ringflake.ID(-5)
	_, err := id.MarshalText()
	assert.ErrorIs(t, err, ringflake.ErrRange, "MarshalText")
	assert.EqualError(t, err, "ringflake: MarshalText -5: ID out of range: IDs are never negative")
	_, err = json.Marshal(struct{ ID ringflake.ID }{id})
	assert.ErrorIs(t, err, ringflake.ErrRange, "json.Marshal")
	var pe *ringflake.ParseError
	if assert.ErrorAs(t, err, &pe, "json.Marshal") {
		assert.Equal(t, "MarshalText", pe.Func, "ParseError.Func")
		assert.Equal(t, "-5", pe.Input, "ParseError.Input")
	}
}

func TestText(t *testing.T) {
	t.Parallel()
	for _, id := range edgeIDs {
		b, err := id.MarshalText()
		require.NoError(t, err)
		assert.Equal(t, id.String(), string(b), "MarshalText")
		var got ringflake.ID
		require.NoError(t, got.UnmarshalText(b))
		assert.Equal(t, id, got, "UnmarshalText(%q)", b)
	}
	got := ringflake.ID(77)
	err := got.UnmarshalText([]byte("x"))
	assert.ErrorIs(t, err, ringflake.ErrSyntax)
	assert.EqualError(t, err, `ringflake: UnmarshalText "x": invalid ID syntax: character "x" at offset 0 is not a decimal digit`)
	assert.Equal(t, ringflake.ID(77), got, "UnmarshalText changed the ID on error")
}

func TestXML(t *testing.T) {
	t.Parallel()
	type doc struct {
		ID   ringflake.ID `xml:"id,attr"`
		Body ringflake.ID `xml:"body"`
	}
	in := doc{ID: 383078035417174017, Body: math.MaxInt64}
	b, err := xml.Marshal(in)
	require.NoError(t, err)
	assert.Equal(t, `<doc id="383078035417174017"><body>9223372036854775807</body></doc>`, string(b))
	var out doc
	require.NoError(t, xml.Unmarshal(b, &out))
	assert.Equal(t, in, out)
}

// TestUnmarshalAllocs checks that reading an ID from bytes does not copy
// them: a JSON string without escapes, a JSON number and text.
func TestUnmarshalAllocs(t *testing.T) {
	for _, in := range []string{`"383078035417174017"`, `383078035417174017`} {
		b := []byte(in)
		var id ringflake.ID
		allocs := testing.AllocsPerRun(100, func() {
			if err := id.UnmarshalJSON(b); err != nil {
				panic(err)
			}
		})
		assert.Zero(t, allocs, "UnmarshalJSON(%s) allocates", in)
	}
	b := []byte("383078035417174017")
	var id ringflake.ID
	allocs := testing.AllocsPerRun(100, func() {
		if err := id.UnmarshalText(b); err != nil {
			panic(err)
		}
	})
	assert.Zero(t, allocs, "UnmarshalText allocates")
}

func ExampleID_UnmarshalJSON() {
	var v struct {
		A, B, C ringflake.ID
		D       *ringflake.ID // nil for null
	}
	v.C = 7
	// A string (escapes included), a bare number, and null, which leaves C
	// unchanged; a *ID tells null apart.
	err := json.Unmarshal([]byte(`{"A":"383078035417174017","B":383078035417174018,"C":null,"D":null}`), &v)
	fmt.Println(v.A, v.B, v.C, v.D, err)
	err = json.Unmarshal([]byte(`{"A":"\u0034\u0032","D":"43"}`), &v)
	fmt.Println(v.A, *v.D, err)
	// encoding/json wraps the ID's error in its own words; errors.As
	// finds the ID's.
	_, err = json.Marshal(ringflake.ID(-1))
	var pe *ringflake.ParseError
	fmt.Println(errors.As(err, &pe), errors.Is(err, ringflake.ErrRange))
	fmt.Println(pe)
	// Output:
	// 383078035417174017 383078035417174018 7 <nil> <nil>
	// 42 43 <nil>
	// true true
	// ringflake: MarshalText -1: ID out of range: IDs are never negative
}

func ExampleID_MarshalText() {
	b, _ := ringflake.ID(383078035417174017).MarshalText()
	fmt.Println(string(b))
	// encoding/json uses MarshalText: an ID is a JSON string, which
	// JavaScript reads without rounding.
	b, _ = json.Marshal(map[ringflake.ID][]ringflake.ID{1: {383078035417174017}})
	fmt.Println(string(b))
	// Output:
	// 383078035417174017
	// {"1":["383078035417174017"]}
}

func ExampleID_UnmarshalText() {
	var id ringflake.ID
	err := id.UnmarshalText([]byte("383078035417174017"))
	fmt.Println(id, err)
	// Output: 383078035417174017 <nil>
}

// A NumberID is a JSON number up to 2^53-1, JavaScript's largest exact
// integer, and refuses anything above, both ways, rather than carry a value
// JavaScript may have rounded; in a struct, a map or a slice alike.
func TestNumberIDJSON(t *testing.T) {
	t.Parallel()
	type doc struct {
		ID   ringflake.NumberID            `json:"id"`
		Ptr  *ringflake.NumberID           `json:"ptr"`
		Keys map[ringflake.NumberID]string `json:"keys"`
		List []ringflake.NumberID          `json:"list"`
	}
	for _, n := range []ringflake.NumberID{0, 1, 1<<53 - 2, 1<<53 - 1} {
		in := doc{ID: n, Ptr: &n, Keys: map[ringflake.NumberID]string{n: "x"}, List: []ringflake.NumberID{n, 0}}
		b, err := json.Marshal(in)
		require.NoError(t, err)
		s := ringflake.ID(n).String()
		assert.Equal(t, `{"id":`+s+`,"ptr":`+s+`,"keys":{"`+s+`":"x"},"list":[`+s+`,0]}`, string(b), "numbers, and a key as a string as JSON requires")
		var out doc
		require.NoError(t, json.Unmarshal(b, &out))
		assert.Equal(t, in, out, "round trip through %s", b)
		var js struct{ ID float64 }
		require.NoError(t, json.Unmarshal(b, &js))
		assert.Equal(t, int64(n), int64(js.ID), "exact as a float64, as JavaScript reads it")
	}

	for _, n := range []ringflake.NumberID{1 << 53, math.MaxInt64, -1} {
		_, err := json.Marshal(doc{ID: n})
		assert.ErrorIs(t, err, ringflake.ErrRange, "json.Marshal of %d", n)
		var pe *ringflake.ParseError
		if assert.ErrorAs(t, err, &pe) {
			assert.Equal(t, "MarshalJSON", pe.Func)
		}
	}
	// encoding/json's words around the error are its own (Go 1.27 changed
	// them); the error it wraps is ours.
	_, err := json.Marshal(ringflake.NumberID(1 << 53))
	var pe *ringflake.ParseError
	require.ErrorAs(t, err, &pe)
	assert.EqualError(t, pe, "ringflake: MarshalJSON 9007199254740992: ID out of range: "+
		"above 2^53-1, which JavaScript rounds: a NumberID is for layouts of at most 53 bits (JSLayout); ID is a JSON string")

	tests := []struct {
		in      string
		want    ringflake.NumberID
		wantErr error
	}{
		{`9007199254740991`, 1<<53 - 1, nil},
		{`"9007199254740991"`, 1<<53 - 1, nil},
		{`0`, 0, nil},
		{` null `, 77, nil},
		{`9007199254740992`, 77, ringflake.ErrRange}, // what JavaScript writes for 2^53+1 too
		{`"9007199254740993"`, 77, ringflake.ErrRange},
		{`383078035417174017`, 77, ringflake.ErrRange},
		{`9223372036854775808`, 77, ringflake.ErrRange},
		{`-1`, 77, ringflake.ErrRange},
		{`9.007199254740991e15`, 77, ringflake.ErrSyntax},
		{`"x"`, 77, ringflake.ErrSyntax},
	}
	for _, tt := range tests {
		n := ringflake.NumberID(77)
		err := json.Unmarshal([]byte(tt.in), &n)
		if tt.wantErr != nil {
			assert.ErrorIs(t, err, tt.wantErr, "json.Unmarshal(%s)", tt.in)
		} else {
			assert.NoError(t, err, "json.Unmarshal(%s)", tt.in)
		}
		assert.Equal(t, tt.want, n, "NumberID after json.Unmarshal(%s)", tt.in)
	}
	n := ringflake.NumberID(77)
	assert.EqualError(t, n.UnmarshalJSON([]byte(` 9007199254740992 `)),
		`ringflake: UnmarshalJSON "9007199254740992": ID out of range: above 2^53-1, which JavaScript rounds: a NumberID is for layouts of at most 53 bits`)
}
