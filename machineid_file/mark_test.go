package machineid_file

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// file returns the content of a file of machine ID 7 with slot 0 and slot
// 1 as given (nil: blank), allocated as the first write allocates it.
func file(s0, s1 []byte) []byte {
	b := make([]byte, fileSize)
	copy(b, s0)
	copy(b[slotOff1:], s1)
	return b
}

func rec(seq uint64, until time.Time) []byte {
	return record{id: 7, seq: seq, until: until, pid: 42, host: "web 0\n"}.encode()
}

func TestRecordRoundTrip(t *testing.T) {
	t.Parallel()
	until := time.Date(2026, 5, 1, 12, 0, 0, 123456789, time.UTC)
	b := rec(3, until)
	require.Len(t, b, slotSize)
	assert.Equal(t, byte('\n'), b[slotSize-1], "a slot is one line")
	r, k := decode(b, 7)
	require.Equal(t, valid, k, "an encoded record decodes: %q", b)
	assert.True(t, r.until.Equal(until), "until = %v; want %v", r.until, until)
	assert.Equal(t, record{id: 7, seq: 3, until: r.until, pid: 42, host: "web_0_"}, r, "the host's spaces and control characters become _")
	_, k = decode(b, 8)
	assert.Equal(t, torn, k, "a record of another machine ID is not this file's")
	long := record{id: 7, seq: 1, until: until, host: string(bytes.Repeat([]byte("h"), 300))}.encode()
	_, k = decode(long, 7)
	assert.Equal(t, valid, k, "a long host name is cut to fit the slot")
}

func TestParseFile(t *testing.T) {
	t.Parallel()
	t1 := time.Unix(1_800_000_000, 0)
	t2 := t1.Add(time.Second)
	flipped := rec(2, t2)
	flipped[40] ^= 1 // a bit flipped: the CRC no longer matches
	for _, tt := range []struct {
		name    string
		content []byte
		want    time.Time // the mark; zero for none
		slot    int
		corrupt string // in the error; "" for none
	}{
		{"empty: a new file", nil, time.Time{}, -1, ""},
		{"zeros: a first write allocated, not written", file(nil, nil), time.Time{}, -1, ""},
		{"a first write torn short", rec(1, t1)[:50], time.Time{}, -1, ""},
		{"a first write torn within the magic", rec(1, t1)[:5], time.Time{}, -1, ""},
		{"a first write shorn within the magic", file(rec(1, t1)[:13], nil), time.Time{}, -1, ""},
		{"a first write torn: slot 0 torn, slot 1 blank", file(flipped, nil), time.Time{}, -1, ""},
		{"one record", file(rec(1, t1), nil), t1, 0, ""},
		{"the newer of two, in slot 1", file(rec(1, t1), rec(2, t2)), t2, 1, ""},
		{"the newer of two, in slot 0", file(rec(3, t2), rec(2, t1)), t2, 0, ""},
		{"slot 1's write torn: slot 0 holds the mark", file(rec(1, t1), flipped), t1, 0, ""},
		{"slot 0's write torn: slot 1 holds the mark", file(flipped, rec(2, t2)), t2, 1, ""},
		{"both torn", file(flipped, flipped), time.Time{}, 0, "both copies of machine ID 7's mark are damaged"},
		{"slot 1 torn, slot 0 blank", file(nil, flipped), time.Time{}, 0, "damaged"},
		{"slot 1 torn within the magic, slot 0 blank", file(nil, rec(2, t2)[:3]), time.Time{}, 0, "damaged"},
		{"the magic's start, then something else", []byte("ringXYZ\n"), time.Time{}, 0, "not a ringflake mark file"},
		{"a file of someone else", []byte("hello\n"), time.Time{}, 0, "not a ringflake mark file of machine ID 7"},
		{"garbage in slot 1", file(rec(1, t1), []byte("x")), time.Time{}, 0, "not a ringflake mark file"},
		{"garbage between the slots", append(rec(1, t1), 'x'), time.Time{}, 0, "not a ringflake mark file"},
		{"too long", append(file(rec(1, t1), nil), 'x'), time.Time{}, 0, "not a ringflake mark file"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st, err := parseFile(tt.content, 7)
			if tt.corrupt != "" {
				require.ErrorIs(t, err, ErrCorrupt)
				assert.Contains(t, err.Error(), tt.corrupt)
				return
			}
			require.NoError(t, err)
			assert.True(t, st.last.until.Equal(tt.want) || (tt.want.IsZero() && st.last.until.IsZero()), "mark = %v; want %v", st.last.until, tt.want)
			assert.Equal(t, tt.slot, st.slot, "the slot holding the mark")
		})
	}
}

// FuzzParseFile checks that whatever a file holds, parseFile returns a
// mark only from an intact record of the file's ID, and never panics.
func FuzzParseFile(f *testing.F) {
	f.Add(file(rec(1, time.Unix(1, 0)), rec(2, time.Unix(2, 0))))
	f.Add([]byte("ringflake-mark v1 id=7"))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := parseFile(b, 7)
		if err != nil || st.slot < 0 {
			return
		}
		off := st.slot * slotOff1
		if r, k := decode(b[off:min(off+slotSize, len(b))], 7); k != valid || r != st.last {
			t.Errorf("parseFile took slot %d = %+v; decode says %v, %+v", st.slot, st.last, k, r)
		}
	})
}
