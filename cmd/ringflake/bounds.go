package main

import (
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/ringflake/ringflake/cmd/ringflake/internal/instant"
)

// boundsUsage is bounds' -h, before its flags.
const boundsUsage = `usage: ringflake bounds [--layout L] FROM [TO]

Print lo and hi, one per line, such that the IDs whose time is in [FROM, TO)
are WHERE id >= lo AND id < hi. FROM and TO are each ` + instant.Forms + `.
Without TO: the IDs of FROM's day for a date, else of FROM's millisecond (tick).

flags:`

// runBounds prints the smallest ID whose time is at or after FROM and the
// smallest whose time is at or after TO, one per line, for SQL's
// WHERE id >= lo AND id < hi, under --layout; without TO, those of FROM's
// day for a date, else of FROM's tick. Every error about an argument names
// it.
func runBounds(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bounds", flag.ContinueOnError)
	var lf layoutFlags
	lf.register(fs, false)
	fs.Usage = func() { fmt.Fprintln(fs.Output(), boundsUsage); fs.PrintDefaults() }
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	l, err := lf.layout("bounds")
	if err != nil {
		return err
	}
	if fs.NArg() < 1 || fs.NArg() > 2 {
		return usageError("bounds: want FROM [TO], each %s; got %d arguments", instant.Forms, fs.NArg())
	}
	from, day, err := instant.Parse("FROM", fs.Arg(0))
	if err == nil {
		err = instant.Check(l, "FROM", fs.Arg(0), from)
	}
	if err != nil {
		return usageError("bounds: %v", err)
	}
	var to time.Time
	switch {
	case fs.NArg() == 2:
		if to, _, err = instant.Parse("TO", fs.Arg(1)); err == nil {
			err = instant.Check(l, "TO", fs.Arg(1), to)
		}
		if err == nil {
			err = instant.Order(from, to)
		}
		if err != nil {
			return usageError("bounds: %v", err)
		}
	case day:
		to = from.AddDate(0, 0, 1)
	default: // the tick holding FROM: its start, and the next tick's
		from = l.Epoch.Add(from.Sub(l.Epoch) / l.Tick * l.Tick)
		to = from.Add(l.Tick)
	}
	if fs.NArg() == 1 && instant.Check(l, "TO", "", to) != nil { // no ID is past the last tick's, to be hi
		return usageError("bounds: FROM %s is in the layout's last day or tick, whose end no ID marks; give TO, or use WHERE id >= lo alone", fs.Arg(0))
	}
	lo, hi, err := l.Bounds(from, to)
	if err != nil {
		return fmt.Errorf("%w: %w", errUsage, inContext("bounds", err))
	}
	_, err = fmt.Fprintf(stdout, "%d\n%d\n", lo, hi)
	return err
}
