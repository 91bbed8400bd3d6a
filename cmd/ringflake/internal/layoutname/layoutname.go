// Package layoutname reads the CLI's --layout values: a preset's name
// (default, js), a peer's (internal/peerlayout), or bit widths T/M/S, each
// with an optional @EPOCH.
package layoutname

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/cmd/ringflake/internal/instant"
	"github.com/ringflake/ringflake/internal/peerlayout"
)

// Peers lists the peers' layouts by name, for messages.
var Peers = func() string {
	var names []string
	for _, p := range peerlayout.Peers() {
		names = append(names, p.Name)
	}
	return strings.Join(names, ", ")
}()

// ErrUnknown reports a --layout value that is neither a preset's name nor
// bit widths.
var ErrUnknown = errors.New("unknown layout")

// Parse reads a --layout value: a preset's name, a peer's, or bit widths
// T/M/S with the default tick and epoch; then, after an @, the epoch in
// its place. Bit widths or an epoch the library refuses give its error,
// wrapping ringflake.ErrInvalidConfig; anything else ErrUnknown.
func Parse(value string) (ringflake.Layout, error) {
	name, epoch, hasEpoch := strings.Cut(value, "@")
	l, err := named(name)
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

// Peer reports whether value names a peer's layout, whose IDs may carry
// any time since the peer's epoch, not only ringflake's.
func Peer(value string) bool {
	name, _, _ := strings.Cut(value, "@")
	_, ok := peerlayout.Named(name)
	return ok
}

// named reads a --layout value without its epoch.
func named(name string) (ringflake.Layout, error) {
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
		return ringflake.Layout{}, ErrUnknown
	}
	var bits [3]int
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || p != strconv.Itoa(n) {
			return ringflake.Layout{}, ErrUnknown
		}
		bits[i] = n
	}
	l := ringflake.DefaultLayout() // its tick and epoch
	l.TimeBits, l.MachineBits, l.SequenceBits = bits[0], bits[1], bits[2]
	_, err := l.Compose(ringflake.Parts{}) // Compose checks the layout first
	return l, err
}
