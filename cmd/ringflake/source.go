package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/cmd/ringflake/internal/startup"
)

// sourceFlags are the flags gen and serve share: where the generator's
// machine ID comes from, and how long it may wait.
type sourceFlags struct {
	cmd         string // the command's name, for messages; set by register
	machineID   int64
	acquire     time.Duration
	maxWait     time.Duration
	clockOffset time.Duration
	datacenter  int64
	above       *ringflake.ID // --above, nil if not given
	layoutFlags
	lease leaseFlags
	state stateFlags
	set   map[string]bool // the flags given; filled by check
}

// register defines the flags on fs, whose name is the command's.
func (f *sourceFlags) register(fs *flag.FlagSet) {
	f.cmd = fs.Name()
	fs.Int64Var(&f.machineID, "machine-id", 0, "machine ID `M`, 0..1023 in the default layout, 0..63 in js (with --datacenter-bits, the worker within --datacenter); every generator sharing the IDs needs its own (with neither this nor --lease: 0, and a note on stderr)")
	fs.DurationVar(&f.acquire, "acquire-timeout", 0, "wait at most `D` for the leased machine ID and for the clock to pass the mark it inherited (0, the default: 30s; at least the lease TTL plus --max-clock-offset to ride out a Redis restart)")
	fs.DurationVar(&f.maxWait, "max-wait", 0, "wait at most `D` for each ID: for the next tick, a clock that stepped back, or a lease that lapsed (0, the default: 100ms; negative: never wait)")
	fs.DurationVar(&f.clockOffset, "clock-offset", 0,
		"for testing and demos only: shift the generator's clock by `D`; negative simulates a clock that is behind")
	fs.Func("above", "issue only IDs above `ID`, the newest of the fleet being replaced (SELECT max(id)): wait for the clock to pass its time, "+
		"and refuse a clock stepped back to it; with the old fleet's --layout, see docs/moving-in.md", func(s string) error {
		id, err := ringflake.ParseID(s)
		if err != nil {
			return err
		}
		f.above = &id
		return nil
	})
	f.layoutFlags.register(fs, true)
	fs.Int64Var(&f.datacenter, "datacenter", 0, "the datacenter `N`, 0..2^B-1, for a layout split by --datacenter-bits B; "+
		"--machine-id then gives the worker within it, 0..2^(10-B)-1 in the default layout, and a lease takes one of the datacenter's machine IDs (--machine-range then names workers)")
	f.lease.register(fs)
	f.state.register(fs)
}

// defaultMaxWait is the library's default WithMaxWait, which it documents
// but does not export.
const defaultMaxWait = 100 * time.Millisecond

// effectiveMaxWait is the MaxWait of --max-wait: the library's default for
// 0, none for a negative value.
func (f *sourceFlags) effectiveMaxWait() time.Duration {
	switch {
	case f.maxWait == 0:
		return defaultMaxWait
	case f.maxWait < 0:
		return 0
	}
	return f.maxWait
}

// layout returns the generator's layout.
func (f *sourceFlags) layout() ringflake.Layout {
	l, _ := f.layoutFlags.layout(f.cmd) // check has refused a bad one
	return l
}

// clock returns the generator's clock: nil for its own wall clock, the
// fastest, or time.Now shifted by --clock-offset.
func (f *sourceFlags) clock() func() time.Time {
	if f.clockOffset == 0 {
		return nil
	}
	off := f.clockOffset
	return func() time.Time { return time.Now().Add(off) }
}

// sourceName says where the machine ID comes from, for messages: "lease"
// and the URL without its password, "--machine-id", or "" for the
// default 0.
func (f *sourceFlags) sourceName() string {
	switch {
	case f.lease.url != "":
		if u, err := f.lease.parsed(); err == nil {
			return "lease " + u.Redacted()
		}
		return "lease"
	case f.set["machine-id"]:
		return "--machine-id"
	}
	return ""
}

// check records the flags given on the parsed fs and rejects bad
// combinations.
func (f *sourceFlags) check(fs *flag.FlagSet) error {
	f.set = map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { f.set[fl.Name] = true })
	if _, err := f.layoutFlags.layout(f.cmd); err != nil {
		return err
	}
	if f.set["datacenter"] && f.dcBits == 0 {
		return usageError("%s: --datacenter needs --datacenter-bits (5 for Twitter's split)", f.cmd)
	}
	if f.dcBits > 0 && !f.set["datacenter"] {
		return usageError("%s: --datacenter-bits %d splits the machine ID; give --datacenter 0..%d", f.cmd, f.dcBits, int64(1)<<f.dcBits-1)
	}
	if f.acquire < 0 {
		return usageError("%s: --acquire-timeout = %v; want 0 (the default, 30s) or more", f.cmd, f.acquire)
	}
	if f.dcBits > 0 {
		lo, hi, err := f.layout().Workers(f.datacenter)
		if err != nil {
			return fmt.Errorf("%w: %w", errUsage, inContext(f.cmd+": --datacenter", err))
		}
		if f.set["machine-id"] && (f.machineID < 0 || f.machineID > hi-lo) {
			return usageError("%s: --machine-id = %d; under --datacenter-bits %d it is the worker within --datacenter %d, 0..%d", f.cmd, f.machineID, f.dcBits, f.datacenter, hi-lo)
		}
	}
	if err := f.state.check(f.cmd, f.set); err != nil {
		return err
	}
	return f.lease.check(f.set)
}

// generator is a Generator made from the shared flags, with what goes
// with it.
type generator struct {
	*ringflake.Generator
	clock  func() time.Time // the generator's clock: time.Now, shifted by --clock-offset
	source string           // where the machine ID comes from: "lease URL", "--machine-id (state file in DIR)", or "" for the default 0
	leased bool             // the machine ID is leased, and Close releases it
	done   func()           // closes the store's client; call after Close
}

// plan is a generator about to be made: the options for New, and what goes
// with the generator.
type plan struct {
	out     *generator // without its Generator
	opts    []ringflake.Option
	acquire time.Duration // --acquire-timeout: New's deadline; 0 for New's default
	where   string        // the command and the source, for New's errors
}

// prepare checks the flags and makes the store's client, without
// contacting the store. It returns a usage error for a bad setting. With
// st, a leaser is handed to st, which can then abandon the start (see
// start).
func (f *sourceFlags) prepare(log *slog.Logger, st *startup.Startup) (*plan, error) {
	out := &generator{clock: time.Now, done: func() {}}
	layout := f.layout()
	opts := []ringflake.Option{
		ringflake.WithMaxWait(f.maxWait),
		ringflake.WithLogger(log),
		ringflake.WithLayout(layout),
	}
	if f.above != nil {
		opts = append(opts, ringflake.WithAbove(*f.above))
	}
	// The machine ID is built once, here: with a datacenter split, the
	// datacenter's first machine ID plus the worker (check has refused a
	// datacenter or a worker out of range); a lease is of the whole ID.
	split := layout.DatacenterBits > 0
	base, maxMachine := int64(0), layout.MaxMachine()
	if split {
		lo, hi, _ := layout.Workers(f.datacenter)
		base, maxMachine = lo, hi-lo
	}
	clock := f.clock()
	if clock != nil {
		out.clock = clock
		opts = append(opts, ringflake.WithClock(clock))
	}
	where := f.cmd
	switch {
	case f.lease.url != "":
		leaser, done, name, err := f.lease.leaser(base, maxMachine, split, clock)
		if err != nil {
			return nil, err
		}
		out.done, out.source, out.leased = done, "lease "+name, true
		where += ": " + out.source
		if st != nil {
			leaser = st.Watch(leaser)
		}
		opts = append(opts, ringflake.WithMachineIDSource(leaser))
	default: // --machine-id, or gen's 0
		id := base + f.machineID
		leaser, source, err := f.fixedID(id, log)
		if err != nil {
			return nil, err
		}
		out.source = source
		if leaser == nil {
			opts = append(opts, ringflake.WithMachineID(id))
			break
		}
		// The state file is a Leaser: New may wait out its mark, which
		// a signal must be able to end, as for a lease.
		out.leased = true
		if st != nil {
			leaser = st.Watch(leaser)
		}
		opts = append(opts, ringflake.WithMachineIDSource(leaser))
	}
	out.done = sync.OnceFunc(out.done) // a failed start and the stop may both close the client
	return &plan{out: out, opts: opts, acquire: f.acquire, where: where}, nil
}

// make makes the generator within ctx (a signal ends it) and
// --acquire-timeout. On failure the store's client stays open, for serve to
// ask again; p.out.done closes it. It returns a usage error for a bad setting, and the
// store's error if no machine ID can be had; New waits for a leased ID's
// inherited mark (up to TTL + twice the clock bound on a Redis that just
// restarted), and for an ID of a full range to free, and logs that it does.
func (p *plan) make(ctx context.Context) (*generator, error) {
	if p.acquire > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.acquire)
		defer cancel()
	}
	g, err := ringflake.New(ctx, p.opts...)
	if err != nil {
		err = inContext(p.where, err)
		// Not errors.Is(err, context.DeadlineExceeded): a release that New
		// made after a failed take has a deadline of its own.
		if errors.Is(err, ringflake.ErrMarkAhead) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			// New names its context; here the flag is what a user can change.
			err = fmt.Errorf("%w (here: --acquire-timeout)", err)
		}
		if errors.Is(err, ringflake.ErrInvalidConfig) {
			return nil, fmt.Errorf("%w: %w", errUsage, err)
		}
		return nil, err // no machine ID to be had: a failure, not bad input
	}
	p.out.Generator = g
	return p.out, nil
}
