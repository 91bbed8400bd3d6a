package sim

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Limits of "ringflake simulate", so a typo cannot ask for hours or for
// more IDs than memory holds.
const (
	maxDuration = 10 * time.Minute
	maxRequests = 20_000_000
)

// ringflake's defaults and limit for the options simulate exposes, which
// the library documents but does not export.
const (
	defaultRing = 4096
	maxRing     = 1 << 22
	// DefaultMaxWait is ringflake's default WithMaxWait.
	DefaultMaxWait = 100 * time.Millisecond
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

// Flags defines simulate's flags on fs. The function it returns, called
// once fs has parsed its arguments, gives the Config they describe, or an
// error naming the flag that is out of range.
func Flags(fs *flag.FlagSet) func() (Config, error) {
	var c Config
	var mods modsFlag
	rate := rateFlag(10000)
	fs.DurationVar(&c.Rollback, "rollback", 500*time.Millisecond, "how far the clock steps back, one third into the run")
	fs.Var(&rate, "rate", "requests per second to each generator, N/s")
	fs.DurationVar(&c.Duration, "duration", 3*time.Second, "how long the load runs")
	fs.IntVar(&c.Ring, "ring", defaultRing, "ringflake's ring size in slots (1 ms each); 0 means the default")
	fs.DurationVar(&c.MaxWait, "max-wait", DefaultMaxWait, "how long one call may wait, for both generators; 0 means the default, negative never to wait")
	fs.StringVar(&c.SVG, "svg", "", "also write the timeline as an SVG chart to `FILE`, or with --mod the counts of id % N")
	fs.Var(&mods, "mod", "also count the IDs each generator served by id % `N`, for each N of a list such as 16,1024, "+
		"and draw those counts with --svg: ringflake's ticks start their sequence at a spread value, the strict Snowflake's at 0 "+
		"(at low traffic, as --rollback 0 --rate 500/s, that decides which shards get IDs)")
	return func() (Config, error) {
		c.Rate = float64(rate)
		c.Mods = mods
		c.StepAt = c.Duration / 3
		// Zero means the default, as for the library's options; from here
		// on a MaxWait of 0 means never to wait.
		if c.Ring == 0 {
			c.Ring = defaultRing
		}
		switch {
		case c.MaxWait == 0:
			c.MaxWait = DefaultMaxWait
		case c.MaxWait < 0:
			c.MaxWait = 0
		}
		return c, c.check(fs)
	}
}

// check validates a simulation's flags, one line per failure.
func (c Config) check(fs *flag.FlagSet) error {
	svgEmpty := false
	fs.Visit(func(f *flag.Flag) { svgEmpty = svgEmpty || f.Name == "svg" && f.Value.String() == "" })
	switch {
	case svgEmpty:
		return fmt.Errorf(`--svg = ""; want a file name`)
	case c.Rollback < 0:
		return fmt.Errorf("--rollback = %v; want 0 or more", c.Rollback)
	case c.Duration <= 0 || c.Duration > maxDuration:
		return fmt.Errorf("--duration = %v; want more than 0 and at most %v", c.Duration, maxDuration)
	case c.Ring < 1 || c.Ring > maxRing:
		return fmt.Errorf("--ring = %d; want 1..%d", c.Ring, maxRing)
	case c.Rate*c.Duration.Seconds() > maxRequests:
		return fmt.Errorf("--rate × --duration = %.0f requests; want at most %d", c.Rate*c.Duration.Seconds(), maxRequests)
	case c.Requests() < 1:
		return fmt.Errorf("--rate × --duration is less than one request")
	}
	return nil
}
