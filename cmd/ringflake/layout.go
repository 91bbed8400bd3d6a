package main

import (
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/ringflake/ringflake"
)

// layoutFlags are the flags that say how IDs are laid out: --layout, and
// --datacenter-bits where the command reads or makes machine IDs.
type layoutFlags struct {
	name   string // --layout: default, js, or T/M/S
	dcBits int    // --datacenter-bits
}

// layoutUsage is --layout's help, which every command shares.
const layoutUsage = "the layout of the IDs, `L`: default (41 bits of milliseconds, 10 of machine ID, 12 of sequence), " +
	"js (41, 6 and 6: 53 bits, every ID exact as a JavaScript Number), or bit widths T/M/S summing to at most 63, " +
	"such as 39/16/8 (1ms ticks since 2024-01-01 either way); decode IDs with the layout they were made with"

// register defines --layout on fs and, if split, --datacenter-bits.
func (lf *layoutFlags) register(fs *flag.FlagSet, split bool) {
	fs.StringVar(&lf.name, "layout", "default", layoutUsage)
	if split {
		fs.IntVar(&lf.dcBits, "datacenter-bits", 0, "split the machine ID into `B` bits of datacenter and the rest of worker, "+
			"0..its bits (10 in the default layout; 5 is Twitter's split; 0, the default, none)")
	}
}

// layout returns the layout the flags name, or a usage error naming the
// flag.
func (lf layoutFlags) layout(cmd string) (ringflake.Layout, error) {
	l, err := parseLayout(lf.name)
	switch {
	case errors.Is(err, ringflake.ErrInvalidConfig):
		return l, fmt.Errorf("%w: %w", errUsage, inContext(cmd+": --layout "+lf.name, err))
	case err != nil:
		return l, usageError("%s: --layout = %q; want default, js, or bit widths T/M/S such as 39/16/8", cmd, lf.name)
	case lf.dcBits < 0 || lf.dcBits > l.MachineBits:
		return l, usageError("%s: --datacenter-bits = %d; want 0..%d", cmd, lf.dcBits, l.MachineBits)
	}
	l.DatacenterBits = lf.dcBits
	return l, nil
}

// errLayoutName reports a --layout value that is neither a preset's name
// nor bit widths.
var errLayoutName = errors.New("unknown layout")

// parseLayout reads a --layout value: a preset's name, or bit widths T/M/S
// with the default tick and epoch. Bit widths the library refuses give its
// error, wrapping ringflake.ErrInvalidConfig.
func parseLayout(name string) (ringflake.Layout, error) {
	switch name {
	case "default":
		return ringflake.DefaultLayout(), nil
	case "js":
		return ringflake.JSLayout(), nil
	}
	parts := strings.Split(name, "/")
	if len(parts) != 3 {
		return ringflake.Layout{}, errLayoutName
	}
	var bits [3]int
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || p != strconv.Itoa(n) {
			return ringflake.Layout{}, errLayoutName
		}
		bits[i] = n
	}
	l := ringflake.DefaultLayout() // its tick and epoch
	l.TimeBits, l.MachineBits, l.SequenceBits = bits[0], bits[1], bits[2]
	_, err := l.Compose(ringflake.Parts{}) // Compose checks the layout first
	return l, err
}
