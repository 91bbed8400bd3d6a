// Package instant reads the times that the bounds command takes, FROM and
// TO, and checks them against a layout, each error naming its argument.
package instant

import (
	"fmt"
	"strconv"
	"time"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/cmd/ringflake/internal/idtext"
)

// Forms says what Parse reads, for messages.
const Forms = "a date (2026-11-24, midnight UTC), RFC 3339 (2026-11-24T10:00:00Z) or Unix milliseconds"

// dateLayout is a date alone, as time.Parse reads it.
const dateLayout = "2006-01-02"

// Parse reads the argument name (FROM or TO), s: a date, which is its
// midnight UTC and, as a span, its day; RFC 3339; or Unix milliseconds,
// each of which spans nothing. The error names the argument.
func Parse(name, s string) (t time.Time, day bool, err error) {
	if idtext.IsDecimal(s) {
		ms, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return time.Time{}, false, fmt.Errorf("%s: %s: Unix milliseconds out of range", name, idtext.Quote(s))
		}
		return time.UnixMilli(ms).UTC(), false, nil
	}
	if t, err := time.Parse(dateLayout, s); err == nil {
		return t, true, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, false, nil
	}
	return time.Time{}, false, fmt.Errorf("%s: %s is not %s", name, idtext.Quote(s), Forms)
}

// Check returns nil if t, read from the argument name, s, lies within the
// times l's IDs can have (Epoch up to the start of its last tick), else an
// error naming the argument, with the reading of s as Unix seconds where
// that is within them: a number of seconds typed for milliseconds lands in
// 1970.
func Check(l ringflake.Layout, name, s string, t time.Time) error {
	first, last := l.Epoch, l.End().Add(-l.Tick)
	if first.IsZero() {
		first = ringflake.DefaultLayout().Epoch
	}
	var err error
	switch {
	case t.Before(first):
		err = fmt.Errorf("%s: %s is before %s, the layout's first tick", name, format(t), format(first))
	case t.After(last):
		err = fmt.Errorf("%s: %s is after %s, the start of the layout's last tick", name, format(t), format(last))
	default:
		return nil
	}
	if idtext.IsDecimal(s) {
		if sec, perr := strconv.ParseInt(s, 10, 64); perr == nil && sec < 1<<40 {
			if at := time.Unix(sec, 0).UTC(); !at.Before(first) && !at.After(last) {
				err = fmt.Errorf("%w; read as Unix seconds it is %s: for that, give %d (milliseconds)", err, format(at), sec*1000)
			}
		}
	}
	return err
}

// Order returns nil if from is not after to, else an error naming both
// arguments.
func Order(from, to time.Time) error {
	if to.Before(from) {
		return fmt.Errorf("TO %s is %v before FROM %s; want FROM <= TO", format(to), from.Sub(to), format(from))
	}
	return nil
}

func format(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
