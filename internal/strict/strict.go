// Package strict is a classic Snowflake generator, kept only so that
// "ringflake simulate" can show what ringflake does differently. It follows
// Twitter's original design: one mutex, the last tick used and a sequence.
// When the clock reads earlier than the last tick it refuses to issue until
// the clock catches up, and when a tick's sequence is used up it spins on
// the clock until the next tick. Do not use it to make IDs.
package strict

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/ringflake/ringflake"
)

// ErrClockBackwards means the clock reads earlier than the last tick used.
var ErrClockBackwards = errors.New("strict: clock moved backwards; refusing to issue")

// ErrSpinTimeout means a tick's sequence was used up and the clock did not
// reach the next tick within the spin limit.
var ErrSpinTimeout = errors.New("strict: sequence exhausted and the clock did not advance")

// Generator is a strict Snowflake. It is safe for concurrent use: every call
// takes the mutex.
type Generator struct {
	mu       sync.Mutex // protects last and seq
	last     int64      // the last tick issued, -1 before the first
	seq      int64      // the last sequence issued in tick last
	layout   ringflake.Layout
	machine  int64
	clock    func() time.Time
	maxSpin  time.Duration // how long, in real time, to spin for the next tick
	maxSeq   int64
	tickNano int64
}

// New returns a strict generator for layout and machine reading clock. A
// call spins at most maxSpin, in real time, for the next tick when the
// current one is full. layout must be valid and machine in its range.
func New(layout ringflake.Layout, machine int64, clock func() time.Time, maxSpin time.Duration) (*Generator, error) {
	if _, err := layout.Compose(ringflake.Parts{}); err != nil { // checks the layout
		return nil, err
	}
	if machine < 0 || machine > layout.MaxMachine() {
		return nil, fmt.Errorf("strict: machine ID %d outside 0..%d", machine, layout.MaxMachine())
	}
	return &Generator{last: -1, layout: layout, machine: machine, clock: clock, maxSpin: maxSpin,
		maxSeq: 1<<layout.SequenceBits - 1, tickNano: int64(layout.Tick)}, nil
}

// tick returns the clock's current tick, or an error before the epoch.
func (g *Generator) tick() (int64, error) {
	d := g.clock().Sub(g.layout.Epoch)
	if d < 0 {
		return 0, fmt.Errorf("strict: clock before the epoch by %v", -d)
	}
	return int64(d) / g.tickNano, nil
}

// NextID returns a new ID, or [ErrClockBackwards] while the clock is behind
// the last tick used, or [ErrSpinTimeout].
func (g *Generator) NextID() (ringflake.ID, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now, err := g.tick()
	if err != nil {
		return 0, err
	}
	if now < g.last {
		return 0, fmt.Errorf("%w: clock is %d ticks behind", ErrClockBackwards, g.last-now)
	}
	if now == g.last {
		if g.seq < g.maxSeq {
			g.seq++
			return g.compose(now, g.seq)
		}
		if now, err = g.spin(now); err != nil {
			return 0, err
		}
	}
	g.last, g.seq = now, 0
	return g.compose(now, 0)
}

// spin re-reads the clock until it passes tick, holding the lock, as the
// classic design does.
func (g *Generator) spin(tick int64) (int64, error) {
	start := time.Now()
	for {
		now, err := g.tick()
		switch {
		case err != nil:
			return 0, err
		case now > tick:
			return now, nil
		case now < tick:
			return 0, fmt.Errorf("%w: clock is %d ticks behind", ErrClockBackwards, tick-now)
		case time.Since(start) >= g.maxSpin:
			return 0, ErrSpinTimeout
		}
		runtime.Gosched()
	}
}

func (g *Generator) compose(tick, seq int64) (ringflake.ID, error) {
	return g.layout.Compose(ringflake.Parts{Ticks: tick, Machine: g.machine, Sequence: seq})
}
