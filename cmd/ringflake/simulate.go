package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// Limits of "ringflake simulate", so a typo cannot ask for hours or for
// more IDs than memory holds.
const (
	maxSimDuration = 10 * time.Minute
	maxSimRequests = 20_000_000
	simRows        = 24 // a multiple of 3, so the step falls on a row's start
	barWidth       = 20
)

// ringflake's defaults and limit for the options simulate exposes, which
// the library documents but does not export.
const (
	defaultRing    = 4096
	maxRing        = 1 << 22
	defaultMaxWait = 100 * time.Millisecond
)

// rateFlag is a request rate written "N/s" or "N".
type rateFlag float64

func (r *rateFlag) String() string { return strconv.FormatFloat(float64(*r), 'f', -1, 64) + "/s" }

func (r *rateFlag) Set(s string) error {
	v, err := strconv.ParseFloat(strings.TrimSuffix(s, "/s"), 64)
	if err != nil || !(v > 0) || v > 1e8 {
		return fmt.Errorf("want requests per second as N/s with 0 < N <= 1e8")
	}
	*r = rateFlag(v)
	return nil
}

func runSimulate(args []string, stdout, stderr io.Writer) error {
	c := simConfig{rows: simRows}
	rate := rateFlag(10000)
	fs := flag.NewFlagSet("simulate", flag.ContinueOnError)
	fs.DurationVar(&c.rollback, "rollback", 500*time.Millisecond, "how far the clock steps back, one third into the run")
	fs.Var(&rate, "rate", "requests per second to each generator, N/s")
	fs.DurationVar(&c.duration, "duration", 3*time.Second, "how long the load runs")
	fs.IntVar(&c.ring, "ring", defaultRing, "ringflake's ring size in slots (1 ms each); 0 means the default")
	fs.DurationVar(&c.maxWait, "max-wait", defaultMaxWait, "how long one call may wait, for both generators; 0 means the default, negative never to wait")
	svg := fs.String("svg", "", "also write the timeline as an SVG chart to `FILE`")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: ringflake simulate [--rollback D] [--rate N/s] [--duration D] [--ring N] [--max-wait D] [--svg FILE]")
		fmt.Fprintln(fs.Output(), "Steps an injected clock back and compares ringflake with a strict Snowflake under the same load.")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	c.rate = float64(rate)
	c.stepAt = c.duration / 3
	// Zero means the default, as for the library's options; from here on a
	// maxWait of 0 means never to wait.
	if c.ring == 0 {
		c.ring = defaultRing
	}
	switch {
	case c.maxWait == 0:
		c.maxWait = defaultMaxWait
	case c.maxWait < 0:
		c.maxWait = 0
	}
	if err := checkSim(fs, c); err != nil {
		return err
	}
	// The chart's file is created before the run, so that a path that
	// cannot be written fails at once rather than after the run.
	chart, err := createChart(*svg)
	if err != nil {
		return err
	}
	res, err := simulate(c)
	if err != nil {
		discardChart(chart)
		return usageError("simulate: %v", err)
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
func saveChart(f *os.File, c simConfig, res []laneResult) error {
	if f == nil {
		return nil
	}
	err := writeChart(f, c, res)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		removeChart(f.Name())
		return fmt.Errorf("simulate: writing the chart: %w", err)
	}
	return nil
}

// checkSim validates a simulation's flags, one line per failure.
func checkSim(fs *flag.FlagSet, c simConfig) error {
	switch {
	case fs.NArg() > 0:
		return usageError("simulate: unexpected argument %q", fs.Arg(0))
	case isSetEmpty(fs, "svg"):
		return usageError(`simulate: --svg = ""; want a file name`)
	case c.rollback < 0:
		return usageError("simulate: --rollback = %v; want 0 or more", c.rollback)
	case c.duration <= 0 || c.duration > maxSimDuration:
		return usageError("simulate: --duration = %v; want more than 0 and at most %v", c.duration, maxSimDuration)
	case c.ring < 1 || c.ring > maxRing:
		return usageError("simulate: --ring = %d; want 1..%d", c.ring, maxRing)
	case c.rate*c.duration.Seconds() > maxSimRequests:
		return usageError("simulate: --rate × --duration = %.0f requests; want at most %d", c.rate*c.duration.Seconds(), maxSimRequests)
	case c.requests() < 1:
		return usageError("simulate: --rate × --duration is less than one request")
	}
	return nil
}

// isSetEmpty reports whether the flag name was given, as an empty string.
func isSetEmpty(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name && f.Value.String() == "" })
	return set
}

// report prints the summary table and the timeline.
func report(stdout io.Writer, c simConfig, res []laneResult) error {
	w := bufio.NewWriter(stdout)
	slots := plural(c.ring, "slot")
	fmt.Fprintf(w, "clock steps back %v at %v into a %v run; %s requests to each generator (%d each); ring %d %s (%v)\n\n",
		c.rollback, c.stepAt, c.duration, strconv.FormatFloat(c.rate, 'f', -1, 64)+"/s", c.requests(), c.ring, slots,
		time.Duration(c.ring)*time.Millisecond)

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
		c.duration/time.Duration(c.rows))
	fmt.Fprintf(w, "%8s    %-*s   %s\n", "time", barWidth, res[0].name, res[1].name)
	for i := range c.rows {
		mark := ' '
		if res[0].rows[i].behind > 0 {
			mark = '<'
		}
		at := c.duration * time.Duration(i) / time.Duration(c.rows)
		fmt.Fprintf(w, "%7.3fs %c  %s   %s\n", at.Seconds(), mark, bar(res[0].rows[i]), bar(res[1].rows[i]))
	}
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
