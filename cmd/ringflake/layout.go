package main

import (
	"errors"
	"flag"
	"fmt"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/cmd/ringflake/internal/instant"
	"github.com/ringflake/ringflake/cmd/ringflake/internal/layoutname"
)

// layoutFlags are the flags that say how IDs are laid out: --layout, and
// --datacenter-bits where the command reads or makes machine IDs.
type layoutFlags struct {
	name   string // --layout: default, js, a peer's name or T/M/S, each with an optional @EPOCH
	dcBits int    // --datacenter-bits
	fs     *flag.FlagSet
}

// layoutUsage is --layout's help, which every command shares.
var layoutUsage = "the layout of the IDs, `L`: default (41 bits of milliseconds, 10 of machine ID, 12 of sequence), " +
	"js (41, 6 and 6: 53 bits, every ID exact as a JavaScript Number), or bit widths T/M/S summing to at most 63, " +
	"such as 39/16/8 (1ms ticks since 2024-01-01 either way); or the defaults of a generator ringflake replaces: " +
	layoutname.Peers + " (docs/moving-in.md); any of them with @EPOCH for another epoch, " + instant.Forms + ", such as bwmarrin@2020-01-01; " +
	"decode IDs with the layout they were made with"

// register defines --layout on fs and, if split, --datacenter-bits.
func (lf *layoutFlags) register(fs *flag.FlagSet, split bool) {
	lf.fs = fs
	fs.StringVar(&lf.name, "layout", "default", layoutUsage)
	if split {
		fs.IntVar(&lf.dcBits, "datacenter-bits", 0, "split the machine ID into `B` bits of datacenter and the rest of worker, "+
			"0..its bits (10 in the default layout; 5 is Twitter's split; 0 none; not given, the layout's own: 5 for --layout twitter, else none)")
	}
}

// layout returns the layout the flags name, or a usage error naming the
// flag.
func (lf layoutFlags) layout(cmd string) (ringflake.Layout, error) {
	l, err := layoutname.Parse(lf.name)
	switch {
	case errors.Is(err, ringflake.ErrInvalidConfig):
		return l, fmt.Errorf("%w: %w", errUsage, inContext(cmd+": --layout "+lf.name, err))
	case err != nil:
		return l, usageError("%s: --layout = %q; want default, js, %s, or bit widths T/M/S such as 39/16/8, each with an optional @EPOCH", cmd, lf.name, layoutname.Peers)
	case !lf.dcBitsSet():
		return l, nil // the layout's own split: Twitter's is 5
	case lf.dcBits < 0 || lf.dcBits > l.MachineBits:
		return l, usageError("%s: --datacenter-bits = %d; want 0..%d", cmd, lf.dcBits, l.MachineBits)
	}
	l.DatacenterBits = lf.dcBits
	return l, nil
}

// peer reports whether --layout names a peer's layout, whose IDs may
// carry any time since the peer's epoch, not only ringflake's.
func (lf layoutFlags) peer() bool { return layoutname.Peer(lf.name) }

// dcBitsSet reports whether --datacenter-bits was given.
func (lf layoutFlags) dcBitsSet() bool {
	set := false
	if lf.fs != nil {
		lf.fs.Visit(func(f *flag.Flag) { set = set || f.Name == "datacenter-bits" })
	}
	return set
}
