// Package idtext reads IDs in the text forms that the decode command and
// the service's /v1/decode share, and quotes input for their errors.
package idtext

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ringflake/ringflake"
)

// forms are the text forms of an ID, in the order readings are listed.
var forms = []struct {
	name  string
	parse func(string) (ringflake.ID, error)
}{
	{"decimal", ringflake.ParseID},
	{"base32", parseBase32},
	{"base58", ringflake.ParseBase58},
}

// parseBase32 reads Crockford's Base32 as people type it: in either case,
// with I and L read as 1 and O as 0, the aliases Crockford's alphabet
// defines. ringflake.ParseBase32 stays strict, so that a stored or sent ID
// has one form; what a person types is put in that form first. No other
// form reads 13 characters with letters (Base58 has at most 11), so this
// makes no reading ambiguous that was not.
func parseBase32(s string) (ringflake.ID, error) {
	return ringflake.ParseBase32(strings.Map(func(r rune) rune {
		switch r {
		case 'i', 'I', 'l', 'L':
			return '1'
		case 'o', 'O':
			return '0'
		}
		if 'a' <= r && r <= 'z' {
			return r - 'a' + 'A'
		}
		return r
	}, s))
}

// Formats is what --format and ?format= take, for messages.
const Formats = "auto, decimal, base32 or base58"

// Known reports whether Parse takes format.
func Known(format string) bool {
	if format == "auto" {
		return true
	}
	for _, f := range forms {
		if f.name == format {
			return true
		}
	}
	return false
}

// Reader reads IDs of one layout.
type Reader struct {
	// Layout is the IDs' layout: readings are shown under it, and an ID
	// above its largest is refused.
	Layout ringflake.Layout
	// Ask is how the reader's user picks a form, before its name: "--format "
	// on the command line, "?format=" in a URL.
	Ask string
	// Now is the clock for Hint's "in the future"; nil means time.Now.
	Now func() time.Time
}

// Parse reads s in format: decimal, base32 or base58, or auto for the
// one form that reads an ID of the layout in s; format must be Known. It
// never guesses: in auto, input that more than one form reads as an ID of
// the layout, each a different one (a 13-digit string is decimal and
// Base32, a short one without a 0 decimal and Base58), is refused with an
// *AmbiguousError that gives every reading, and input that no form reads
// with the error of the form it looks most like. An ID above the layout's
// largest, one of a wider layout, is no reading of it. Every error is the
// caller's user's to fix: bad input.
//
// Surrounding spaces are dropped, and Base32 is read in either case, with
// Crockford's aliases. A word (letters only) that only Base58 reads, to an
// ID whose time no ringflake ID can have (see Hint), is refused with its
// reading, as "abc" or "garbage" typed by mistake; a named form reads it.
func (r Reader) Parse(s, format string) (ringflake.ID, error) {
	s = strings.TrimSpace(s)
	id, err := r.parse(s, format)
	if err == nil && format == "auto" && isWord(s) && !r.plausible(r.Layout.Decompose(id).Time) && r.onlyBase58(s) {
		return 0, &WordError{Input: s, Reading: Reading{Form: "base58", ID: id}, layout: r.Layout, ask: r.Ask}
	}
	return id, err
}

// onlyBase58 reports whether Base58 is the one form that reads s: Base32,
// read in either case, reads some words too ("iAAAAAAAAAAAA"), and such a
// reading is no word's to refuse as Base58's.
func (r Reader) onlyBase58(s string) bool {
	_, err58 := r.parse(s, "base58")
	_, err32 := r.parse(s, "base32")
	_, err10 := r.parse(s, "decimal")
	return err58 == nil && err32 != nil && err10 != nil
}

// parse is Parse on trimmed input, without the check of words.
func (r Reader) parse(s, format string) (ringflake.ID, error) {
	var found []Reading
	var errs [3]error
	var misfit error // of the first reading too wide for the layout
	for i, f := range forms {
		if format != "auto" && format != f.name {
			continue
		}
		id, err := f.parse(s)
		if err == nil {
			err = r.fits(id)
			misfit = cmp.Or(misfit, err)
		}
		if err != nil {
			errs[i] = err
			continue
		}
		if len(found) == 0 || found[0].ID != id { // forms that agree are one reading
			found = append(found, Reading{Form: f.name, ID: id})
		}
	}
	switch {
	case len(found) > 1:
		return 0, &AmbiguousError{Input: s, Readings: found, layout: r.Layout, ask: r.Ask}
	case len(found) == 1:
		return found[0].ID, nil
	case misfit != nil:
		return 0, misfit
	case format != "auto":
		for _, err := range errs {
			if err != nil {
				return 0, err // the one form's
			}
		}
	}
	return 0, noForm(s, errs)
}

// fits returns nil if id is within the layout's bits, else the error for
// an ID of another, wider layout.
func (r Reader) fits(id ringflake.ID) error {
	l := r.Layout
	width := l.TimeBits + l.MachineBits + l.SequenceBits
	if width >= 63 || uint64(id)>>width == 0 {
		return nil
	}
	return fmt.Errorf("%d is above %d (2^%d-1), the largest ID of the layout: an ID of another layout?", id, uint64(1)<<width-1, width)
}

// noForm returns the error for input that no form reads: that of the form
// it looks most like, decimal for digits, Base32 for 13 characters, else
// Base58, after a word that it is none of them.
func noForm(s string, errs [3]error) error {
	i := 2
	switch {
	case IsDecimal(s):
		i = 0
	case len(s) == 13:
		i = 1
	}
	return &formError{msg: Quote(s) + " is not an ID in decimal, base32 or base58; as " + forms[i].name, err: errs[i]}
}

// formError is an error of the library's with what the reader tried in
// front of it.
type formError struct {
	msg string
	err error
}

func (e *formError) Error() string {
	return e.msg + ": " + strings.TrimPrefix(e.err.Error(), "ringflake: ")
}

func (e *formError) Unwrap() error { return e.err }

// Reading is one way of reading an input: the form and the ID it gives.
type Reading struct {
	Form string
	ID   ringflake.ID
}

// AmbiguousError reports input that more than one form reads, with every
// reading, each shown under the layout so that the plausible one stands
// out, and how to pick one.
type AmbiguousError struct {
	Input    string
	Readings []Reading

	layout ringflake.Layout
	ask    string
}

// Error says, in one line: `"0123456789012" is ambiguous: decimal
// 123456789012 (time 2024-01-01T00:00:29.434Z, machine 401, sequence 2580)
// or base32 38390726480134178 (time ..., machine 72, sequence 34); give
// --format decimal or --format base32`.
func (e *AmbiguousError) Error() string {
	var b strings.Builder
	b.WriteString(Quote(e.Input) + " is ambiguous: ")
	for i, r := range e.Readings {
		if i > 0 {
			b.WriteString(sep(i, len(e.Readings)))
		}
		p := e.layout.Decompose(r.ID)
		fmt.Fprintf(&b, "%s %d (time %s, machine %d, sequence %d)", r.Form, r.ID, p.Time.Format(time.RFC3339Nano), p.Machine, p.Sequence)
	}
	b.WriteString("; give ")
	for i, r := range e.Readings {
		if i > 0 {
			b.WriteString(sep(i, len(e.Readings)))
		}
		b.WriteString(e.ask + r.Form)
	}
	return b.String()
}

// sep is what goes before item i of n in a list: ", ", or " or " before
// the last.
func sep(i, n int) string {
	if i == n-1 {
		return " or "
	}
	return ", "
}

// WordError reports a word that only Base58 reads, to an ID whose time no
// ringflake ID can have: a word typed by mistake more likely than an ID.
type WordError struct {
	Input   string
	Reading Reading

	layout ringflake.Layout
	ask    string
}

// Error says, in one line: `"abc" is a word, not an ID: as base58 it is
// 113019 (time 2024-01-01T00:00:00Z, machine 27, sequence 2427), before any
// ringflake ID (2026-11 on); give --format base58 to decode it so`.
func (e *WordError) Error() string {
	p := e.layout.Decompose(e.Reading.ID)
	return fmt.Sprintf("%s is a word, not an ID: as %s it is %d (time %s, machine %d, sequence %d), %s; give %s%s to decode it so",
		Quote(e.Input), e.Reading.Form, e.Reading.ID, p.Time.Format(time.RFC3339Nano), p.Machine, p.Sequence,
		outside(p.Time), e.ask, e.Reading.Form)
}

// isWord reports whether s is ASCII letters only.
func isWord(s string) bool {
	for i := range len(s) {
		if c := s[i] | 0x20; c < 'a' || c > 'z' {
			return false
		}
	}
	return s != ""
}

// firstTime is the first instant a ringflake ID can carry, from a clock
// that was right: ringflake was first written in November 2026. The CLI's
// layouts all count from 2024-01-01, so an ID of one layout read as
// another's, or a word read as Base58, mostly lands in between.
var firstTime = time.Date(2026, time.November, 1, 0, 0, 0, 0, time.UTC)

// futureSlack is how far past the reader's clock an ID's time may lie and
// still be plausible: clocks differ, and an ID may be read elsewhere.
const futureSlack = 24 * time.Hour

// plausible reports whether t lies where a ringflake ID's time can: from
// firstTime to futureSlack past the reader's clock.
func (r Reader) plausible(t time.Time) bool {
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	return !t.Before(firstTime) && !t.After(now().Add(futureSlack))
}

// outside says why t is not plausible: before any ringflake ID, or in the
// future.
func outside(t time.Time) string {
	if t.Before(firstTime) {
		return "before any ringflake ID (" + firstTime.Format("2006-01") + " on)"
	}
	return "in the future"
}

// presets are the named layouts Hint tries an ID under.
var presets = []struct {
	name   string
	layout ringflake.Layout
}{
	{"default", ringflake.DefaultLayout()},
	{"js", ringflake.JSLayout()},
}

// Hint returns a note for an ID whose time under the reader's layout is not
// plausible (before November 2026, when ringflake was first written, or
// more than a day in the future), or "" for one whose time is. An ID of the
// js layout read under the default one, say, gives a time in early 2024
// that looks right and is not; the note then gives the reading under each
// other named layout where the time is plausible, with the flag that picks
// it (flag: "--layout " or "?layout=").
func (r Reader) Hint(id ringflake.ID, flag string) string {
	t := r.Layout.Decompose(id).Time
	if r.plausible(t) {
		return ""
	}
	msg := fmt.Sprintf("%d: time %s is %s: an ID of another layout, or not an ID?", id, t.Format(time.RFC3339Nano), outside(t))
	for _, p := range presets {
		l := p.layout
		if l.TimeBits == r.Layout.TimeBits && l.MachineBits == r.Layout.MachineBits && l.SequenceBits == r.Layout.SequenceBits {
			continue
		}
		if (Reader{Layout: l}).fits(id) != nil {
			continue
		}
		q := l.Decompose(id)
		if !r.plausible(q.Time) {
			continue
		}
		msg += fmt.Sprintf(" With %s%s it reads time %s, machine %d, sequence %d.", flag, p.name, q.Time.Format(time.RFC3339Nano), q.Machine, q.Sequence)
	}
	return msg
}

// IsDecimal reports whether s is digits, after an optional minus sign.
func IsDecimal(s string) bool {
	if len(s) > 0 && s[0] == '-' {
		s = s[1:]
	}
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// maxEcho bounds how much of a request's input an error repeats, as the
// library's parse errors do.
const maxEcho = 32

// Quote quotes s, cut after maxEcho bytes.
func Quote(s string) string {
	if len(s) > maxEcho {
		return strconv.Quote(s[:maxEcho]) + "..."
	}
	return strconv.Quote(s)
}

// Cut returns s cut after maxEcho bytes, for a token such as a method.
func Cut(s string) string {
	if len(s) > maxEcho {
		return s[:maxEcho] + "..."
	}
	return s
}
