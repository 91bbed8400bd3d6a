package sim

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// The report's shape.
const (
	defaultRows = 24 // timeline rows; a multiple of 3, so the step falls on a row's start
	barWidth    = 20
)

// Run simulates c, draws the chart in c.SVG if it names a file, and writes
// the report to stdout. The error for settings ringflake refuses wraps
// ringflake.ErrInvalidConfig.
func Run(c Config, stdout io.Writer) error {
	if c.rows == 0 {
		c.rows = defaultRows
	}
	// The chart's file is created before the run, so that a path that
	// cannot be written fails at once rather than after the run.
	chart, err := createChart(c.SVG)
	if err != nil {
		return err
	}
	res, err := simulate(c)
	if err != nil {
		discardChart(chart)
		return fmt.Errorf("simulate: %w", err)
	}
	// The chart goes first: a report cut short by a closed pipe does not
	// lose it.
	if err := saveChart(chart, c, res); err != nil {
		return err
	}
	return report(stdout, c, res)
}

// createChart creates the file --svg names, or returns nil for no --svg.
func createChart(path string) (*os.File, error) {
	if path == "" {
		return nil, nil
	}
	// Write-only: opened read-write, a pipe such as /dev/stdout would be
	// its own reader, and a write to it would block once nobody else reads.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o666)
	if err != nil {
		return nil, fmt.Errorf("simulate: --svg: %w", err)
	}
	return f, nil
}

// discardChart closes f, if there is one, and removes it.
func discardChart(f *os.File) {
	if f != nil {
		f.Close()
		removeChart(f.Name())
	}
}

// removeChart removes the chart at path if it is a regular file; --svg
// may name a device, such as /dev/stdout, which is not to be removed.
func removeChart(path string) {
	if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() {
		os.Remove(path)
	}
}

// saveChart writes the chart of res to f, if there is one, and closes f.
// If either fails it removes f, so no partial chart is left behind.
func saveChart(f *os.File, c Config, res []laneResult) error {
	if f == nil {
		return nil
	}
	draw := writeChart
	if len(c.Mods) > 0 {
		draw = writeSpread
	}
	err := draw(f, c, res)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		removeChart(f.Name())
		return fmt.Errorf("simulate: writing the chart: %w", err)
	}
	return nil
}

// report prints the summary table and the timeline.
func report(stdout io.Writer, c Config, res []laneResult) error {
	w := bufio.NewWriter(stdout)
	slots := plural(c.Ring, "slot")
	fmt.Fprintf(w, "clock steps back %v at %v into a %v run; %s requests to each generator (%d each); ring %d %s (%v)\n\n",
		c.Rollback, c.StepAt, c.Duration, strconv.FormatFloat(c.Rate, 'f', -1, 64)+"/s", c.Requests(), c.Ring, slots,
		time.Duration(c.Ring)*time.Millisecond)

	line := func(label string, f func(laneResult) string) {
		fmt.Fprintf(w, "%-22s", label)
		for _, r := range res {
			fmt.Fprintf(w, "%12s", f(r))
		}
		fmt.Fprintln(w)
	}
	line("", func(r laneResult) string { return r.name })
	line("IDs served", func(r laneResult) string { return strconv.Itoa(r.served) })
	line("errors", func(r laneResult) string { return strconv.Itoa(r.failed) })
	line("longest wait", func(r laneResult) string { return r.longest.Round(time.Microsecond).String() })
	line("IDs from spare space", func(r laneResult) string { return strconv.Itoa(r.spare) })
	line("duplicates", func(r laneResult) string { return strconv.Itoa(r.dups) })

	for _, r := range res {
		if r.firstErr != nil {
			fmt.Fprintf(w, "\n%s's first error: %v", r.name, r.firstErr)
		}
	}
	fmt.Fprintf(w, "\n\ntimeline, %v per row: # served, x failed; < marks rows where the clock is behind\n",
		c.Duration/time.Duration(c.rows))
	fmt.Fprintf(w, "%8s    %-*s   %s\n", "time", barWidth, res[0].name, res[1].name)
	for i := range c.rows {
		mark := ' '
		if res[0].rows[i].behind > 0 {
			mark = '<'
		}
		at := c.Duration * time.Duration(i) / time.Duration(c.rows)
		fmt.Fprintf(w, "%7.3fs %c  %s   %s\n", at.Seconds(), mark, bar(res[0].rows[i]), bar(res[1].rows[i]))
	}
	spreadReport(w, c, res)
	return w.Flush()
}

// bar draws a row's served and failed requests as barWidth characters,
// showing at least one of each kind that happened.
func bar(r rowCount) string {
	total := r.served + r.failed
	if total == 0 {
		return strings.Repeat(".", barWidth)
	}
	x := (r.failed*barWidth + total/2) / total
	if r.failed > 0 {
		x = max(x, 1)
	}
	if r.served > 0 {
		x = min(x, barWidth-1)
	}
	return strings.Repeat("#", barWidth-x) + strings.Repeat("x", x)
}

// plural returns noun, with an s unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return noun
	}
	return noun + "s"
}
