package ringflake

import (
	"fmt"
	"time"

	"github.com/ringflake/ringflake/machineid"
)

const (
	// DefaultRingSize is the number of ring slots when WithRingSize is not
	// given: 4096 slots of 8 bytes (32 KiB), covering 4.096 s of 1 ms ticks.
	DefaultRingSize = 4096
	// MaxRingSize is the largest ring WithRingSize accepts (32 MiB).
	MaxRingSize = 1 << 22
	// DefaultMaxWait bounds each NextID call's waiting when WithMaxWait is
	// not given. It is long enough to ride out sequence exhaustion for many
	// ticks, and short enough that a stalled clock surfaces as an error
	// rather than as a hung request.
	DefaultMaxWait = 100 * time.Millisecond
	// DefaultAcquireTimeout bounds how long New waits for a
	// [machineid.Service] when WithAcquireTimeout is not given.
	DefaultAcquireTimeout = 10 * time.Second
)

// An Option configures a [Generator] made by [New].
type Option interface {
	apply(*config)
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	machineID      int64
	machineSet     bool
	service        machineid.Service
	serviceSet     bool
	layout         Layout
	clock          func() time.Time
	clockSet       bool
	ringSize       int
	maxWait        time.Duration
	acquireTimeout time.Duration
	events         func(Event)
	eventsSet      bool
	eventInterval  time.Duration
	longWait       time.Duration
}

func defaultConfig() config {
	return config{
		layout:         DefaultLayout(),
		ringSize:       DefaultRingSize,
		maxWait:        DefaultMaxWait,
		acquireTimeout: DefaultAcquireTimeout,
		eventInterval:  DefaultEventInterval,
		longWait:       DefaultLongWait,
	}
}

// WithMachineID sets a fixed machine ID, 0..Layout.MaxMachine(). Without it
// (and without WithMachineIDService) the machine ID is 0: every generator
// that shares an ID space must have its own.
func WithMachineID(id int64) Option {
	return optionFunc(func(c *config) { c.machineID, c.machineSet = id, true })
}

// WithMachineIDService makes New ask svc for the machine ID, waiting at most
// the acquire timeout. If svc is a [machineid.Leaser], the generator follows
// its lease: it issues nothing while the lease is invalid, never issues a
// time outside the lease's bounds, and releases the lease on Close. A
// panic in svc.MachineID reaches New's caller, as a direct call's would,
// after a Leaser is closed.
func WithMachineIDService(svc machineid.Service) Option {
	return optionFunc(func(c *config) { c.service, c.serviceSet = svc, true })
}

// WithAcquireTimeout bounds how long New waits for the machine ID service:
// the service's context has this deadline, and New returns at most 50 ms
// after it even if the service ignores it (a late answer's lease is then
// released in the background). It must be positive; the default is
// [DefaultAcquireTimeout].
func WithAcquireTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) { c.acquireTimeout = d })
}

// WithLayout sets the bit layout; the default is [DefaultLayout].
func WithLayout(l Layout) Option {
	return optionFunc(func(c *config) { c.layout = l })
}

// WithClock sets the clock the generator reads for the time field. The
// default is the wall clock (time.Now). Waits are always measured in real
// elapsed time, never with this clock, so a frozen clock cannot hang a
// caller. clock must be safe for concurrent use.
func WithClock(clock func() time.Time) Option {
	return optionFunc(func(c *config) { c.clock, c.clockSet = clock, true })
}

// WithRingSize sets the number of ring slots, 1..[MaxRingSize]. A larger
// ring remembers more ticks: a step back shorter than size×Tick continues
// the exact ticks it returns to, and the spare sequence available during a
// long step back is at most size×2^SequenceBits. Each slot costs 8 bytes.
// The default is [DefaultRingSize].
func WithRingSize(n int) Option {
	return optionFunc(func(c *config) { c.ringSize = n })
}

// WithMaxWait bounds how long one NextID or NextN call may wait, in real
// elapsed time, for the next tick, for a clock that is behind, or for a
// lease; a call may overrun it by the timers' lateness (a millisecond or
// two when the machine is idle, a few more when its CPUs are busy or a
// virtual machine's are descheduled), and by up to 200 µs that a wait for
// the next tick spends checking whether the clock shows it. If the clock
// says the wait will be longer than what is left, the call fails at once
// rather than sleep. Zero means never wait: fail at once. NextN's whole
// batch shares one MaxWait, so a batch larger than about
// (MaxWait/Tick)×2^SequenceBits cannot succeed. The default is
// [DefaultMaxWait].
func WithMaxWait(d time.Duration) Option {
	return optionFunc(func(c *config) { c.maxWait = d })
}

func (c *config) validate() error {
	if err := c.layout.Validate(); err != nil {
		return err
	}
	switch {
	case c.ringSize < 1 || c.ringSize > MaxRingSize:
		return configErr("ring size", c.ringSize, fmt.Sprintf("1..%d", MaxRingSize))
	case c.maxWait < 0:
		return configErr("max wait", c.maxWait, "0 or more")
	case c.clockSet && c.clock == nil:
		return configErr("clock", "nil", "a non-nil func")
	case c.serviceSet && c.service == nil:
		return configErr("machine ID service", "nil", "a non-nil machineid.Service")
	case c.machineSet && c.serviceSet:
		return fmt.Errorf("%w: both WithMachineID and WithMachineIDService given; choose one", ErrInvalidConfig)
	case c.service == nil && (c.machineID < 0 || c.machineID > c.layout.MaxMachine()):
		return configErr("machine ID", c.machineID, fmt.Sprintf("0..%d", c.layout.MaxMachine()))
	case c.acquireTimeout <= 0:
		return configErr("acquire timeout", c.acquireTimeout, "more than 0")
	case c.eventsSet && c.events == nil:
		return configErr("events func", "nil", "a non-nil func")
	case c.eventInterval <= 0:
		return configErr("event interval", c.eventInterval, "more than 0")
	case c.longWait <= 0:
		return configErr("long wait", c.longWait, "more than 0")
	}
	return nil
}
