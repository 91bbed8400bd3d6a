package main

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/ringflake/ringflake/cmd/ringflake/internal/idtext"
)

// runBounds prints the smallest ID whose time is at or after FROM and the
// smallest whose time is at or after TO, one per line, for SQL's
// WHERE id >= lo AND id < hi, under --layout; without TO, those of FROM's
// tick.
func runBounds(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bounds", flag.ContinueOnError)
	var lf layoutFlags
	lf.register(fs, false)
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	l, err := lf.layout("bounds")
	if err != nil {
		return err
	}
	if fs.NArg() < 1 || fs.NArg() > 2 {
		return usageError("bounds: want FROM [TO], each RFC 3339 (2026-11-24T10:00:00Z) or Unix milliseconds; got %d arguments", fs.NArg())
	}
	from, err := parseInstant(fs.Arg(0))
	if err != nil {
		return usageError("bounds: FROM: %v", err)
	}
	var to time.Time
	if fs.NArg() == 2 {
		if to, err = parseInstant(fs.Arg(1)); err != nil {
			return usageError("bounds: TO: %v", err)
		}
	} else {
		// The tick holding FROM: its start, and the next tick's.
		from = l.Epoch.Add(from.Sub(l.Epoch) / l.Tick * l.Tick)
		to = from.Add(l.Tick)
	}
	lo, hi, err := l.Bounds(from, to)
	if err != nil {
		return fmt.Errorf("%w: %w", errUsage, inContext("bounds", err))
	}
	_, err = fmt.Fprintf(stdout, "%d\n%d\n", lo, hi)
	return err
}

// parseInstant reads an RFC 3339 time or a count of Unix milliseconds.
func parseInstant(s string) (time.Time, error) {
	if idtext.IsDecimal(s) {
		ms, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return time.Time{}, fmt.Errorf("%s: Unix milliseconds out of range", idtext.Quote(s))
		}
		return time.UnixMilli(ms).UTC(), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s is neither RFC 3339 (2026-11-24T10:00:00Z) nor Unix milliseconds", idtext.Quote(s))
	}
	return t, nil
}
