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
	{"base32", ringflake.ParseBase32},
	{"base58", ringflake.ParseBase58},
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
func (r Reader) Parse(s, format string) (ringflake.ID, error) {
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
