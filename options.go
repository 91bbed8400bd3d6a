package ringflake

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/ringflake/ringflake/machineid"
)

// Defaults and limits of the options.
const (
	defaultRingSize = 4096 // 32 KiB, 4.096 s of 1 ms ticks
	maxRingSize     = 1 << 22
	defaultMaxWait  = 100 * time.Millisecond
)

// An Option configures a [Generator] made by [New].
type Option interface {
	apply(*config)
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	machineID  int64
	machineSet bool // WithMachineID(0) is machine 0, not "no machine ID"
	source     machineid.Source
	layout     Layout
	clock      func() time.Time
	ringSize   int
	maxWait    time.Duration
	log        *slog.Logger
	above      ID
	aboveSet   bool
}

// WithMachineID sets a fixed machine ID, 0..Layout.MaxMachine(). Every
// generator that shares an ID space must have its own. New needs either
// this or [WithMachineIDSource]. With a datacenter split, the machine ID of
// datacenter dc's worker w is lo+w, where lo comes from [Layout.Workers].
//
// A plain fixed ID does not protect against a restart with the clock
// behind, nor a second process on the same ID: either repeats IDs. Guard
// it with a file (package machineid_file) to be safe from both:
//
//	ids, err := machineid_file.New("/var/lib/myapp/ringflake", machineid.WithRange(42, 42))
//	g, err := ringflake.New(ctx, ringflake.WithMachineIDSource(ids))
func WithMachineID(id int64) Option {
	return optionFunc(func(c *config) { c.machineID, c.machineSet = id, true })
}

// WithMachineIDSource makes New ask src for the machine ID, within New's
// context. src must honour its context; New returns soon after the context
// ends even if src does not. If src is a [machineid.Leaser], the generator
// follows its lease: it issues nothing while the lease is not held, never
// issues a time outside the lease's marks, and releases the lease on Close;
// and New waits, within the same context, until the clock has passed the
// mark the lease inherited, so that the generator can issue when New
// returns. A Leaser serves one generator at a time. nil means no source.
func WithMachineIDSource(src machineid.Source) Option {
	return optionFunc(func(c *config) { c.source = src })
}

// WithLayout sets the bit layout. The zero Layout means [DefaultLayout].
func WithLayout(l Layout) Option {
	return optionFunc(func(c *config) { c.layout = l })
}

// WithClock sets the clock the generator reads for the time field. nil, the
// default, is the wall clock (time.Now). Waits are always measured in real
// elapsed time, never with this clock, so a frozen clock cannot hang a
// caller. clock must be safe for concurrent use. New hands it to a
// [*machineid.Holder] given to [WithMachineIDSource], so that the lease's
// marks are in the time the generator issues in: it is the one clock of a
// generator and its lease.
func WithClock(clock func() time.Time) Option {
	return optionFunc(func(c *config) { c.clock = clock })
}

// WithRingSize sets the number of ring slots, 1..4194304; 0 means the
// default, 4096; a negative size is refused. A larger ring remembers more ticks: a step back shorter
// than size×Tick continues the exact ticks it returns to, and the spare
// sequence available during a long step back is at most
// size×2^SequenceBits. Each slot costs 8 bytes.
func WithRingSize(n int) Option {
	return optionFunc(func(c *config) { c.ringSize = n })
}

// WithMaxWait bounds how long one NextID or NextN call may wait, in real
// elapsed time, for the next tick, for a clock that is behind, or for a
// lease. A call may overrun it by the timers' lateness: a millisecond or two
// on an idle machine, more when its CPUs are busy. If the clock says the
// wait would be longer than what is left, the call fails at once rather
// than sleep. A negative d means never wait: fail at once; zero means the
// default, 100 ms. NextN's whole batch shares one MaxWait, so a batch
// larger than about (MaxWait/Tick)×2^SequenceBits cannot succeed.
func WithMaxWait(d time.Duration) Option {
	return optionFunc(func(c *config) { c.maxWait = d })
}

// WithAbove makes every ID the generator issues greater than id: it issues
// only in ticks after id's tick under the generator's layout, whatever the
// machine ID, the lease or the clock. Give it the largest ID the fleet
// being replaced has issued (SELECT max(id) from its tables), so that the
// new IDs sort after the old ones and cannot meet them; docs/moving-in.md
// gives the recipe. New waits, within its context, until the clock has
// passed id's tick, as it waits for a lease's inherited mark, and fails
// with a [*ClockError] wrapping [ErrMarkAhead] if it cannot; so does a call
// whose clock steps back to it later. id is read with the layout: an ID
// of an old layout whose time field sits where the new one's does (see
// docs/moving-in.md) gives the old fleet's time. A negative id, or one
// whose tick is the layout's last or beyond, is refused with
// [ErrInvalidConfig]. Not given, the generator has no such floor.
func WithAbove(id ID) Option {
	return optionFunc(func(c *config) { c.above, c.aboveSet = id, true })
}

func (c *config) validate() error {
	if c.layout == (Layout{}) {
		c.layout = DefaultLayout()
	}
	c.layout = c.layout.withDefaults()
	switch {
	case c.ringSize == 0:
		c.ringSize = defaultRingSize
	case c.ringSize < 1 || c.ringSize > maxRingSize:
		return configErr("ring size", c.ringSize, fmt.Sprintf("1..%d (0 means %d)", maxRingSize, defaultRingSize))
	}
	switch {
	case c.maxWait == 0:
		c.maxWait = defaultMaxWait
	case c.maxWait < 0:
		c.maxWait = 0 // never wait
	}
	if err := c.layout.validate(); err != nil {
		return err
	}
	if c.layout.MachineLow {
		return fmt.Errorf("%w: Layout.MachineLow is set: a generator issues with the machine ID above the sequence only; "+
			"issue with the same layout without MachineLow, whose IDs sort with the old ones by time (docs/moving-in.md)", ErrInvalidConfig)
	}
	if err := c.validateAbove(); err != nil {
		return err
	}
	return c.validateMachine()
}

// validateAbove checks WithAbove's ID: not negative, and below the
// layout's last tick, so that some tick of the layout is above it.
func (c *config) validateAbove() error {
	switch {
	case !c.aboveSet:
		return nil
	case c.above < 0:
		return configErr("WithAbove's ID", int64(c.above), "0 up to an ID before the layout's last tick")
	}
	p := c.layout.Decompose(c.above)
	if last := c.layout.maxTicks(); p.Ticks >= last {
		return fmt.Errorf("%w: WithAbove's ID %d is at tick %d of the layout, whose last tick is %d: no ID of the layout is above it; "+
			"an ID of another layout, whose time field sits higher?", ErrInvalidConfig, c.above, p.Ticks, last)
	}
	return nil
}

// validateMachine checks that one way to a machine ID was given, and the
// fixed one's range.
func (c *config) validateMachine() error {
	switch {
	case !c.machineSet && c.source == nil:
		return fmt.Errorf("%w: no machine ID: give WithMachineID, or WithMachineIDSource with a lease (machineid_file, machineid_redis, machineid_etcd, machineid_postgres, machineid_k8s) or another machineid.Source; every generator sharing an ID space needs its own", ErrInvalidConfig)
	case c.machineSet && c.source != nil:
		return fmt.Errorf("%w: both WithMachineID and WithMachineIDSource given; choose one", ErrInvalidConfig)
	case c.machineSet && (c.machineID < 0 || c.machineID > c.layout.MaxMachine()):
		return configErr("machine ID", c.machineID, fmt.Sprintf("0..%d", c.layout.MaxMachine()))
	}
	return nil
}
