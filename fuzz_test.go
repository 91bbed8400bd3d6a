package ringflake_test

import (
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/ringflake/ringflake"
)

// FuzzGeneratorUnique turns fuzz bytes into a clock (a walk of tick
// positions, each reading taken by the next caller) and a number of
// concurrent callers, and checks that no ID repeats, that every ID carries
// the machine ID, that failures are only the clock's, and that a single
// caller under a clock that has never gone back gets increasing IDs.
func FuzzGeneratorUnique(f *testing.F) {
	f.Add([]byte{0, 3, 7, 1, 1, 1, 1, 0, 0, 0})
	f.Add([]byte{3, 1, 5, 2, 0xF0, 0x01, 0x90, 0x10, 0x00, 0x00})
	f.Add([]byte{7, 15, 31, 0x80, 0x7F, 0x80, 0x7F, 0x01, 0x01})
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 4 {
			return
		}
		goroutines := 1 + int(data[0]%8)
		ring := 1 + int(data[1]%16)
		machine := int64(data[2] % 32)
		steps := data[3:]
		// Readings: cumulative signed steps in quarter ticks, so the walk
		// lands inside ticks as well as on their edges.
		readings := make([]time.Time, len(steps))
		pos := int64(4 * 1000)
		for i, s := range steps {
			pos = max(pos+int64(int8(s)), 0)
			readings[i] = at(0, time.Duration(pos)*tiny.Tick/4)
		}
		clock := &readClock{f: func(k int64) time.Time { return readings[k%int64(len(readings))] }}
		g, err := ringflake.New(t.Context(), ringflake.WithLayout(tiny), ringflake.WithMachineID(machine),
			ringflake.WithClock(clock.Now), ringflake.WithRingSize(ring), ringflake.WithMaxWait(-1))
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		clock.reads.Store(0) // New read the clock once, to check the layout can issue
		perG := 2 * len(readings) / goroutines
		type issued struct {
			call int
			id   ringflake.ID
		}
		got := make([][]issued, goroutines)
		var eg errgroup.Group
		for i := range goroutines {
			// With several callers, every other one asks for batches
			// (NextN), whose partial results on failure count too. One
			// caller alone uses NextID, so that call k saw reading k.
			batches := goroutines > 1 && i%2 == 1
			eg.Go(func() error {
				var dst [4]ringflake.ID
				for k := range perG {
					var err error
					if batches {
						var n int
						n, err = g.NextN(dst[:1+k%len(dst)])
						for _, id := range dst[:n] {
							got[i] = append(got[i], issued{k, id})
						}
					} else {
						var id ringflake.ID
						if id, err = g.NextID(); err == nil {
							got[i] = append(got[i], issued{k, id})
						}
					}
					if err != nil && !errors.Is(err, ringflake.ErrClockBehind) && !errors.Is(err, ringflake.ErrSequenceExhausted) {
						return err
					}
				}
				return nil
			})
		}
		if err := eg.Wait(); err != nil {
			t.Fatalf("unexpected failure: %v", err)
		}
		seen := make(map[ringflake.ID]bool)
		for _, list := range got {
			for _, is := range list {
				if seen[is.id] {
					t.Fatalf("ID %d issued twice: %+v", is.id, tiny.Decompose(is.id))
				}
				seen[is.id] = true
				if p := tiny.Decompose(is.id); p.Machine != machine || is.id < 0 {
					t.Fatalf("ID %d = %+v; want machine %d and a non-negative ID", is.id, p, machine)
				}
			}
		}
		if goroutines > 1 {
			return
		}
		// One caller and a MaxWait that never waits: call k read the clock once, and saw
		// readings[k]. While the readings have not gone back, IDs increase.
		var last ringflake.ID
		for _, is := range got[0] {
			if is.call >= len(readings) {
				break
			}
			if is.call > 0 && slicesGoBack(readings[:is.call+1]) {
				break
			}
			if is.id <= last {
				t.Fatalf("call %d: ID %d not above the previous %d under a clock that has not gone back", is.call, is.id, last)
			}
			last = is.id
		}
	})
}

// slicesGoBack reports whether any reading is earlier than the one before.
func slicesGoBack(ts []time.Time) bool {
	for i := 1; i < len(ts); i++ {
		if ts[i].Before(ts[i-1]) {
			return true
		}
	}
	return false
}

// FuzzLayoutRoundTrip checks that Compose and Decompose are inverses for
// every valid layout, of 63 bits or fewer (unused bits at the top), and
// in-range parts, that every ID fits the layout's bits, that Compose
// refuses out-of-range parts, and that nothing panics on invalid layouts.
func FuzzLayoutRoundTrip(f *testing.F) {
	f.Add(uint8(41), uint8(10), int64(91332060678), int64(7), int64(2202), int64(1704067200), int64(time.Millisecond), uint8(0))
	f.Add(uint8(41), uint8(6), int64(1<<41-1), int64(63), int64(63), int64(1704067200), int64(time.Millisecond), uint8(10))
	f.Add(uint8(1), uint8(0), int64(1), int64(0), int64(1<<61), int64(0), int64(1), uint8(0))
	f.Add(uint8(1), uint8(0), int64(1), int64(0), int64(1), int64(0), int64(1), uint8(61))
	f.Add(uint8(61), uint8(1), int64(1<<61-1), int64(1), int64(1), int64(-1<<33), int64(time.Hour), uint8(0))
	f.Add(uint8(0), uint8(0), int64(-1), int64(-1), int64(-1), int64(0), int64(0), uint8(0))
	f.Fuzz(func(t *testing.T, timeBits, machineBits uint8, ticks, machine, seq, epochSec, tickNs int64, unused uint8) {
		l := ringflake.Layout{
			TimeBits: int(timeBits % 64), MachineBits: int(machineBits % 64),
			Epoch: time.Unix(epochSec%(1<<34), 0).UTC(), Tick: time.Duration(tickNs),
		}
		l.SequenceBits = 63 - l.TimeBits - l.MachineBits - int(unused%64)
		valid := ringflake.LayoutValidate(l) == nil
		id, err := l.Compose(ringflake.Parts{Ticks: ticks, Machine: machine, Sequence: seq})
		if !valid {
			if err == nil {
				t.Fatalf("Compose on invalid layout %+v succeeded", l)
			}
			_ = l.Decompose(ringflake.ID(ticks)) // must not panic
			return
		}
		fits := ticks >= 0 && ticks < int64(1)<<l.TimeBits &&
			machine >= 0 && machine <= l.MaxMachine() && seq >= 0 && seq <= ringflake.LayoutMaxSequence(l)
		if !fits {
			if !errors.Is(err, ringflake.ErrInvalidConfig) {
				t.Fatalf("Compose(%d,%d,%d) under %+v = %v; want ErrInvalidConfig", ticks, machine, seq, l, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("Compose(%d,%d,%d) under %+v: %v", ticks, machine, seq, l, err)
		}
		width := l.TimeBits + l.MachineBits + l.SequenceBits
		if id < 0 || uint64(id)>>width != 0 {
			t.Fatalf("Compose gave ID %d, outside the layout's %d bits", id, width)
		}
		if width < 63 {
			// An ID too wide for the layout decodes past its last tick.
			if p := l.Decompose(id | 1<<width); p.Ticks < int64(1)<<l.TimeBits {
				t.Fatalf("Decompose(%d, a bit above the layout's %d) = %+v; want Ticks past 2^%d-1", id|1<<width, width, p, l.TimeBits)
			}
		}
		p := l.Decompose(id)
		if p.Ticks != ticks || p.Machine != machine || p.Sequence != seq {
			t.Fatalf("Decompose(Compose(%d,%d,%d)) = %+v", ticks, machine, seq, p)
		}
		tick := l.Tick
		if tick == 0 {
			tick = time.Millisecond // a zero Tick means the default
		}
		if ticks <= ringflake.LayoutMaxTicks(l) && !p.Time.Equal(l.Epoch.Add(time.Duration(ticks)*tick)) {
			t.Fatalf("Decompose time = %v; want epoch + %d×%v", p.Time, ticks, tick)
		}
	})
}

// checkParseFailure fails t unless err is a *ParseError from fn, wrapping
// exactly one of ErrSyntax and ErrRange, and the parser returned no ID
// with it. It returns the sentinel.
func checkParseFailure(t *testing.T, fn, in string, id ringflake.ID, err error) error {
	t.Helper()
	var pe *ringflake.ParseError
	if !errors.As(err, &pe) || pe.Func != fn || id != 0 ||
		errors.Is(err, ringflake.ErrSyntax) == errors.Is(err, ringflake.ErrRange) {
		t.Fatalf("%s(%q) = %d, %v; want 0 and a *ParseError from %s wrapping ErrSyntax or ErrRange", fn, in, id, err, fn)
	}
	return pe.Err
}

// FuzzParseID checks ParseID against strconv: it accepts exactly what
// strconv.ParseUint(s, 10, 63) accepts, with the same value, and what it
// accepts round-trips through String. A failure is ErrRange exactly for
// digits above 2^63-1 and for a negative number. UnmarshalText, Scan of
// text and UnmarshalJSON of a JSON string must agree with it.
func FuzzParseID(f *testing.F) {
	for _, s := range []string{"0", "383078035417174017", "9223372036854775807", "9223372036854775808",
		"0000000000000000001", "00000000000000000001", "18446744073709551616", "99999999999999999999x",
		"-1", "-0", "+1", "", "1e3", " 1", "١", "1_0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ringflake.ParseID(s)
		u, uerr := strconv.ParseUint(s, 10, 63)
		if err != nil {
			if uerr == nil {
				t.Fatalf("ParseID(%q) = %v; strconv reads %d", s, err, u)
			}
			digits := s != "" && strings.Trim(s, "0123456789") == ""
			negative := len(s) > 1 && s[0] == '-' && strings.Trim(s[1:], "0123456789") == "" && strings.Trim(s[1:], "0") != ""
			wantRange := negative || digits && errors.Is(uerr, strconv.ErrRange)
			if got := checkParseFailure(t, "ParseID", s, id, err); (got == ringflake.ErrRange) != wantRange {
				t.Fatalf("ParseID(%q) = %v; want ErrRange: %v", s, err, wantRange)
			}
		} else {
			if uerr != nil || uint64(id) != u {
				t.Fatalf("ParseID(%q) = %d; strconv gives %d, %v", s, id, u, uerr)
			}
			if back, err := ringflake.ParseID(id.String()); err != nil || back != id {
				t.Fatalf("ParseID(String(%d)) = %d, %v", id, back, err)
			}
		}
		same := func(what string, got ringflake.ID, gerr error) {
			if (gerr == nil) != (err == nil) || gerr == nil && got != id ||
				gerr != nil && (errors.Is(gerr, ringflake.ErrRange) != errors.Is(err, ringflake.ErrRange)) {
				t.Fatalf("%s(%q) = %d, %v; ParseID gives %d, %v", what, s, got, gerr, id, err)
			}
		}
		var v ringflake.ID
		same("UnmarshalText", v, v.UnmarshalText([]byte(s)))
		v = 0
		same("Scan(string)", v, v.Scan(s))
		v = 0
		same("Scan([]byte)", v, v.Scan([]byte(s)))
		if js, jerr := json.Marshal(s); jerr == nil {
			v = 0
			same("UnmarshalJSON(string)", v, v.UnmarshalJSON(js))
		}
	})
}

// FuzzParseBase32 checks that ParseBase32 accepts only canonical input,
// the exact text ID.Base32 writes, and fails cleanly on anything else.
func FuzzParseBase32(f *testing.F) {
	for _, s := range []string{"0000000000000", "0AM7QE674Q401", "7ZZZZZZZZZZZZ", "8000000000000",
		"0am7qe674q401", "000000000000I", "", "0AM7QE674Q40"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ringflake.ParseBase32(s)
		if err != nil {
			checkParseFailure(t, "ParseBase32", s, id, err)
			return
		}
		if id < 0 || id.Base32() != s {
			t.Fatalf("ParseBase32(%q) = %d, whose Base32 is %q; want the input back", s, id, id.Base32())
		}
	})
}

// FuzzParseBase58 checks that ParseBase58 accepts only canonical input,
// the exact text ID.Base58 writes, and fails cleanly on anything else.
func FuzzParseBase58(f *testing.F) {
	for _, s := range []string{"1", "2", "taKjQTiGEC", "NQm6nKp8qFC", "NQm6nKp8qFD", "zzzzzzzzzzz", "12", "0", "l", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ringflake.ParseBase58(s)
		if err != nil {
			checkParseFailure(t, "ParseBase58", s, id, err)
			return
		}
		if id < 0 || id.Base58() != s {
			t.Fatalf("ParseBase58(%q) = %d, whose Base58 is %q; want the input back", s, id, id.Base58())
		}
	})
}

// FuzzUnmarshalJSON checks UnmarshalJSON against encoding/json: on valid
// JSON it reads a string as ParseID reads the string's decoded content, a
// number as encoding/json reads it into a uint64 (refusing what exceeds
// 2^63-1), and null as nothing; it refuses invalid JSON with ErrSyntax.
// It leaves the value unchanged on error and on null, and what it reads
// marshals back to the same ID.
func FuzzUnmarshalJSON(f *testing.F) {
	for _, s := range []string{`"383078035417174017"`, `383078035417174017`, `null`, `"null"`, `-1`, `-0`, `1.5`, `""`,
		`"`, `"1`, `{}`, `"\u0035"`, ` "4\u0032" `, `0123`, `18446744073709551615`, `"\ud800"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		const sentinel = ringflake.ID(4242)
		id := sentinel
		err := id.UnmarshalJSON(data)
		if err != nil {
			checkParseFailure(t, "UnmarshalJSON", string(data), 0, err)
			if id != sentinel {
				t.Fatalf("UnmarshalJSON(%q) failed with %v but changed the ID to %d", data, err, id)
			}
		}
		var str string
		var u uint64
		switch {
		case !json.Valid(data):
			if !errors.Is(err, ringflake.ErrSyntax) {
				t.Fatalf("UnmarshalJSON(%q) of invalid JSON = %d, %v; want ErrSyntax", data, id, err)
			}
		case strings.Trim(string(data), " \t\r\n") == "null":
			if err != nil || id != sentinel {
				t.Fatalf("UnmarshalJSON(%q) = %d, %v; want the ID unchanged", data, id, err)
			}
		case json.Unmarshal(data, &str) == nil:
			want, werr := ringflake.ParseID(str)
			if (err == nil) != (werr == nil) || err == nil && id != want ||
				err != nil && errors.Is(err, ringflake.ErrRange) != errors.Is(werr, ringflake.ErrRange) {
				t.Fatalf("UnmarshalJSON(%q) = %d, %v; ParseID(%q) = %d, %v", data, id, err, str, want, werr)
			}
		case json.Unmarshal(data, &u) == nil && u <= math.MaxInt64:
			if err != nil || uint64(id) != u {
				t.Fatalf("UnmarshalJSON(%q) = %d, %v; encoding/json reads %d", data, id, err, u)
			}
		default:
			if err == nil {
				t.Fatalf("UnmarshalJSON(%q) = %d; encoding/json does not read it as an ID", data, id)
			}
		}
		if err == nil && id != sentinel {
			out, merr := json.Marshal(id)
			var back ringflake.ID
			if merr != nil || json.Unmarshal(out, &back) != nil || back != id {
				t.Fatalf("json.Marshal(%d) = %s, %v, read back as %d", id, out, merr, back)
			}
		}
	})
}

// FuzzIDEncodings checks every encoding of every int64 as a property: an
// ID (0 to 2^63-1) round-trips through each text form, through
// MarshalText, JSON and a database value, and its Base32 strings compare
// like the numbers; a negative ID is written in the documented form, which
// its parser refuses with ErrRange, and MarshalText and Value refuse it.
func FuzzIDEncodings(f *testing.F) {
	f.Add(int64(0), int64(1))
	f.Add(int64(383078035417174017), int64(383078035417174018))
	f.Add(int64(-1), int64(math.MaxInt64))
	f.Add(int64(math.MinInt64), int64(-58))
	f.Add(int64(31), int64(32))
	f.Fuzz(func(t *testing.T, x, y int64) {
		for _, id := range []ringflake.ID{ringflake.ID(x), ringflake.ID(y)} {
			checkEncodings(t, id)
		}
		a, b := ringflake.ID(x), ringflake.ID(y)
		if a < 0 || b < 0 {
			return
		}
		sa, sb := a.Base32(), b.Base32()
		if (sa < sb) != (a < b) || (sa == sb) != (a == b) {
			t.Fatalf("Base32 order: %q vs %q for %d vs %d; want the numeric order", sa, sb, a, b)
		}
	})
}

// checkEncodings checks the round trips of FuzzIDEncodings for one ID.
func checkEncodings(t *testing.T, id ringflake.ID) {
	t.Helper()
	forms := []struct {
		fn    string
		text  string
		parse func(string) (ringflake.ID, error)
	}{
		{"ParseID", id.String(), ringflake.ParseID},
		{"ParseBase32", id.Base32(), ringflake.ParseBase32},
		{"ParseBase58", id.Base58(), ringflake.ParseBase58},
	}
	for _, f := range forms {
		got, err := f.parse(f.text)
		switch {
		case id >= 0 && (err != nil || got != id):
			t.Fatalf("%s(%q) = %d, %v; want %d", f.fn, f.text, got, err, id)
		case id < 0 && checkParseFailure(t, f.fn, f.text, got, err) != ringflake.ErrRange:
			t.Fatalf("%s(%q), the form of negative %d: %v; want ErrRange", f.fn, f.text, id, err)
		}
	}
	if len(forms[1].text) != 13 || id < 0 && !strings.Contains("89ABCDEF", forms[1].text[:1]) {
		t.Fatalf("Base32(%d) = %q; want 13 characters, the first 8..F for a negative ID", id, forms[1].text)
	}
	if len(forms[2].text) > 11 || id < 0 && len(forms[2].text) != 11 {
		t.Fatalf("Base58(%d) = %q; want at most 11 characters, 11 for a negative ID", id, forms[2].text)
	}
	text, terr := id.MarshalText()
	js, jerr := json.Marshal(id)
	v, verr := id.Value()
	if id < 0 {
		for _, err := range []error{terr, jerr, verr} {
			if !errors.Is(err, ringflake.ErrRange) {
				t.Fatalf("marshaling negative %d: %v; want ErrRange", id, err)
			}
		}
		return
	}
	var back, jback, sback ringflake.ID
	if terr != nil || back.UnmarshalText(text) != nil || back != id {
		t.Fatalf("UnmarshalText(MarshalText(%d)) = %d; MarshalText error %v", id, back, terr)
	}
	if jerr != nil || string(js) != `"`+id.String()+`"` || json.Unmarshal(js, &jback) != nil || jback != id {
		t.Fatalf("json.Marshal(%d) = %s, %v, read back as %d; want the decimal string", id, js, jerr, jback)
	}
	if verr != nil || sback.Scan(v) != nil || sback != id {
		t.Fatalf("Scan(Value(%d)) = %d; Value error %v", id, sback, verr)
	}
}
