package main

import (
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/cmd/ringflake/internal/instant"
	"github.com/ringflake/ringflake/internal/peerlayout"
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
	peerNames + " (docs/moving-in.md); any of them with @EPOCH for another epoch, " + instant.Forms + ", such as bwmarrin@2020-01-01; " +
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
	l, err := parseLayout(lf.name)
	switch {
	case errors.Is(err, ringflake.ErrInvalidConfig):
		return l, fmt.Errorf("%w: %w", errUsage, inContext(cmd+": --layout "+lf.name, err))
	case err != nil:
		return l, usageError("%s: --layout = %q; want default, js, %s, or bit widths T/M/S such as 39/16/8, each with an optional @EPOCH", cmd, lf.name, peerNames)
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
func (lf layoutFlags) peer() bool {
	name, _, _ := strings.Cut(lf.name, "@")
	_, ok := peerlayout.Named(name)
	return ok
}

// dcBitsSet reports whether --datacenter-bits was given.
func (lf layoutFlags) dcBitsSet() bool {
	set := false
	if lf.fs != nil {
		lf.fs.Visit(func(f *flag.Flag) { set = set || f.Name == "datacenter-bits" })
	}
	return set
}

// peerNames lists the peers' layouts by name, for messages.
var peerNames = func() string {
	var names []string
	for _, p := range peerlayout.Peers() {
		names = append(names, p.Name)
	}
	return strings.Join(names, ", ")
}()

// errLayoutName reports a --layout value that is neither a preset's name
// nor bit widths.
var errLayoutName = errors.New("unknown layout")

// parseLayout reads a --layout value: a preset's name, a peer's, or bit
// widths T/M/S with the default tick and epoch; then, after an @, the
// epoch in its place. Bit widths or an epoch the library refuses give its
// error, wrapping ringflake.ErrInvalidConfig.
func parseLayout(value string) (ringflake.Layout, error) {
	name, epoch, hasEpoch := strings.Cut(value, "@")
	l, err := namedLayout(name)
	if err != nil || !hasEpoch {
		return l, err
	}
	t, _, err := instant.Parse("@EPOCH", epoch)
	if err != nil {
		return l, fmt.Errorf("%w: %w", ringflake.ErrInvalidConfig, err)
	}
	l.Epoch = t
	_, err = l.Compose(ringflake.Parts{}) // Compose checks the layout first
	return l, err
}

// namedLayout reads a --layout value without its epoch.
func namedLayout(name string) (ringflake.Layout, error) {
	switch name {
	case "default":
		return ringflake.DefaultLayout(), nil
	case "js":
		return ringflake.JSLayout(), nil
	}
	if l, ok := peerlayout.Named(name); ok {
		return l, nil
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
