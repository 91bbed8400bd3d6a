// Package peerlayout names the layouts of the ID generators that ringflake
// replaces, each the ringflake.Layout that reads the peer's IDs bit for bit
// with the peer's defaults: its epoch, its tick and its widths. The CLI's
// --layout takes these names; docs/moving-in.md gives the same values, with
// what each peer lets its users change, and the tests of
// benchmarks/movein check them against the peers' own Go code (bwmarrin,
// sonyflake v1 and v2) or their source's formula (Twitter, Leaf, Baidu).
//
// They live here, not in package ringflake, because they are facts about
// other projects, which their users often changed (the epoch above all): a
// Go program copies the literal it needs from docs/moving-in.md and sets
// its own fleet's epoch, rather than call up a name that may not be its
// fleet's layout.
package peerlayout

import (
	"time"

	"github.com/ringflake/ringflake"
)

// twepoch is Twitter's Snowflake epoch, 1288834974657 ms after the Unix
// epoch (2010-11-04T01:42:54.657Z), which bwmarrin/snowflake and Leaf
// took over as their default.
var twepoch = time.UnixMilli(1288834974657).UTC()

// A Peer is one named layout.
type Peer struct {
	Name   string           // what --layout takes
	Layout ringflake.Layout // its defaults
	Of     string           // whose IDs, for help and docs
}

// Peers returns every named layout, in the order the docs give them.
func Peers() []Peer {
	return []Peer{
		{"bwmarrin", ringflake.Layout{TimeBits: 41, MachineBits: 10, SequenceBits: 12, Epoch: twepoch, Tick: time.Millisecond},
			"github.com/bwmarrin/snowflake: 41 bits of ms since Twitter's epoch, 10 of node, 12 of step"},
		{"sonyflake-v1", ringflake.Layout{TimeBits: 39, MachineBits: 16, SequenceBits: 8, MachineLow: true,
			Epoch: time.Date(2014, time.September, 1, 0, 0, 0, 0, time.UTC), Tick: 10 * time.Millisecond},
			"github.com/sony/sonyflake: 39 bits of 10 ms since 2014-09-01, 8 of sequence, 16 of machine ID lowest"},
		{"sonyflake-v2", ringflake.Layout{TimeBits: 39, MachineBits: 16, SequenceBits: 8, MachineLow: true,
			Epoch: time.Date(2025, time.January, 1, 0, 0, 0, 0, time.UTC), Tick: 10 * time.Millisecond},
			"github.com/sony/sonyflake/v2: as v1, since 2025-01-01"},
		{"leaf", ringflake.Layout{TimeBits: 41, MachineBits: 10, SequenceBits: 12, Epoch: twepoch, Tick: time.Millisecond},
			"Meituan Leaf's snowflake mode: 41 bits of ms since Twitter's epoch, 10 of worker ID, 12 of sequence"},
		{"twitter", ringflake.Layout{TimeBits: 41, MachineBits: 10, SequenceBits: 12, DatacenterBits: 5, Epoch: twepoch, Tick: time.Millisecond},
			"Twitter's Snowflake: 41 bits of ms since its epoch, 5 of datacenter, 5 of worker, 12 of sequence"},
		{"baidu", ringflake.Layout{TimeBits: 28, MachineBits: 22, SequenceBits: 13,
			Epoch: time.Unix(1463673600, 0).UTC(), Tick: time.Second},
			"Baidu's uid-generator: 28 bits of seconds since 2016-05-20 00:00 UTC+8, 22 of worker ID, 13 of sequence"},
	}
}

// Named returns the layout of the peer called name, and whether there is
// one.
func Named(name string) (ringflake.Layout, bool) {
	for _, p := range Peers() {
		if p.Name == name {
			return p.Layout, true
		}
	}
	return ringflake.Layout{}, false
}
