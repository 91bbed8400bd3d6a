package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/cmd/ringflake/internal/sim"
)

// Limits of "ringflake simulate", so a typo cannot ask for hours or for
// more IDs than memory holds.
const (
	maxSimDuration = 10 * time.Minute
	maxSimRequests = 20_000_000
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

// modsFlag is a list of moduli written "16,1024".
type modsFlag []int

// maxMod bounds --mod: a chart cell per residue.
const maxMod = 1 << 16

func (m *modsFlag) String() string {
	var parts []string
	for _, n := range *m {
		parts = append(parts, strconv.Itoa(n))
	}
	return strings.Join(parts, ",")
}

func (m *modsFlag) Set(s string) error {
	var out modsFlag
	for _, p := range strings.Split(s, ",") {
		n, err := strconv.Atoi(p)
		if err != nil || n < 2 || n > maxMod {
			return fmt.Errorf("want N,... with each N in 2..%d", maxMod)
		}
		out = append(out, n)
	}
	if len(out) > 3 {
		return fmt.Errorf("want at most 3 values of N")
	}
	*m = out
	return nil
}

func runSimulate(args []string, stdout, stderr io.Writer) error {
	var c sim.Config
	var mods modsFlag
	rate := rateFlag(10000)
	fs := flag.NewFlagSet("simulate", flag.ContinueOnError)
	fs.DurationVar(&c.Rollback, "rollback", 500*time.Millisecond, "how far the clock steps back, one third into the run")
	fs.Var(&rate, "rate", "requests per second to each generator, N/s")
	fs.DurationVar(&c.Duration, "duration", 3*time.Second, "how long the load runs")
	fs.IntVar(&c.Ring, "ring", defaultRing, "ringflake's ring size in slots (1 ms each); 0 means the default")
	fs.DurationVar(&c.MaxWait, "max-wait", defaultMaxWait, "how long one call may wait, for both generators; 0 means the default, negative never to wait")
	fs.StringVar(&c.SVG, "svg", "", "also write the timeline as an SVG chart to `FILE`, or with --mod the counts of id % N")
	fs.Var(&mods, "mod", "also count the IDs each generator served by id % `N`, for each N of a list such as 16,1024, "+
		"and draw those counts with --svg: ringflake's ticks start their sequence at a spread value, the strict Snowflake's at 0 "+
		"(at low traffic, as --rollback 0 --rate 500/s, that decides which shards get IDs)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: ringflake simulate [--rollback D] [--rate N/s] [--duration D] [--ring N] [--max-wait D] [--mod N,...] [--svg FILE]")
		fmt.Fprintln(fs.Output(), "Steps an injected clock back and compares ringflake with a strict Snowflake under the same load.")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	c.Rate = float64(rate)
	c.Mods = mods
	c.StepAt = c.Duration / 3
	// Zero means the default, as for the library's options; from here on a
	// MaxWait of 0 means never to wait.
	if c.Ring == 0 {
		c.Ring = defaultRing
	}
	switch {
	case c.MaxWait == 0:
		c.MaxWait = defaultMaxWait
	case c.MaxWait < 0:
		c.MaxWait = 0
	}
	if err := checkSim(fs, c); err != nil {
		return err
	}
	err := sim.Run(c, stdout)
	if errors.Is(err, ringflake.ErrInvalidConfig) {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	return err
}

// checkSim validates a simulation's flags, one line per failure.
func checkSim(fs *flag.FlagSet, c sim.Config) error {
	switch {
	case fs.NArg() > 0:
		return usageError("simulate: unexpected argument %q", fs.Arg(0))
	case isSetEmpty(fs, "svg"):
		return usageError(`simulate: --svg = ""; want a file name`)
	case c.Rollback < 0:
		return usageError("simulate: --rollback = %v; want 0 or more", c.Rollback)
	case c.Duration <= 0 || c.Duration > maxSimDuration:
		return usageError("simulate: --duration = %v; want more than 0 and at most %v", c.Duration, maxSimDuration)
	case c.Ring < 1 || c.Ring > maxRing:
		return usageError("simulate: --ring = %d; want 1..%d", c.Ring, maxRing)
	case c.Rate*c.Duration.Seconds() > maxSimRequests:
		return usageError("simulate: --rate × --duration = %.0f requests; want at most %d", c.Rate*c.Duration.Seconds(), maxSimRequests)
	case c.Requests() < 1:
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
