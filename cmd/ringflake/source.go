package main

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"time"

	"github.com/ringflake/ringflake"
)

// sourceFlags are the flags gen and serve share: where the generator's
// machine ID comes from, and how long it may wait.
type sourceFlags struct {
	cmd         string // the command's name, for messages; set by register
	machineID   int64
	acquire     time.Duration
	maxWait     time.Duration
	clockOffset time.Duration
	lease       leaseFlags
	state       stateFlags
	set         map[string]bool // the flags given; filled by check
}

// register defines the flags on fs, whose name is the command's.
func (f *sourceFlags) register(fs *flag.FlagSet) {
	f.cmd = fs.Name()
	fs.Int64Var(&f.machineID, "machine-id", 0, "machine ID `M`, 0..1023; every generator sharing the IDs needs its own (with neither this nor --lease: 0, and a note on stderr)")
	fs.DurationVar(&f.acquire, "acquire-timeout", 0, "wait at most `D` for the leased machine ID and for the clock to pass the mark it inherited (default 30s; at least the lease TTL plus --max-clock-skew to ride out a store restart)")
	fs.DurationVar(&f.maxWait, "max-wait", defaultMaxWait, "wait at most `D` for each ID: for the next tick, a clock that stepped back, or a lease that lapsed")
	fs.DurationVar(&f.clockOffset, "clock-offset", 0,
		"for testing and demos only: shift the generator's clock by `D`; negative simulates a clock that is behind")
	f.lease.register(fs)
	f.state.register(fs)
}

// check records the flags given on the parsed fs and rejects bad
// combinations.
func (f *sourceFlags) check(fs *flag.FlagSet) error {
	f.set = map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { f.set[fl.Name] = true })
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
	done   func()           // closes the store's client; call after Close
}

// newGenerator makes the generator the flags describe, logging to log. It
// returns a usage error for a bad setting, and the store's error if no
// machine ID can be had; New waits for a leased ID's inherited mark (up to
// a TTL on a store that just restarted) and logs that it does.
func (f *sourceFlags) newGenerator(log *slog.Logger) (*generator, error) {
	out := &generator{clock: time.Now, done: func() {}}
	opts := []ringflake.Option{
		ringflake.WithAcquireTimeout(f.acquire),
		ringflake.WithMaxWait(f.maxWait),
		ringflake.WithLogger(log),
	}
	var clock func() time.Time // nil: the generator's own wall clock, the fastest
	if f.clockOffset != 0 {
		off := f.clockOffset
		clock = func() time.Time { return time.Now().Add(off) }
		out.clock = clock
		opts = append(opts, ringflake.WithClock(clock))
	}
	where := f.cmd
	switch {
	case f.lease.url != "":
		leaser, done, name, err := f.lease.leaser(ringflake.DefaultLayout().MaxMachine(), clock)
		if err != nil {
			return nil, err
		}
		out.done, out.source = done, "lease "+name
		where += ": " + out.source
		opts = append(opts, ringflake.WithMachineIDSource(leaser))
	default: // --machine-id, or gen's 0
		opt, source, err := f.fixedID(f.machineID, clock, log)
		if err != nil {
			return nil, err
		}
		out.source = source
		opts = append(opts, opt)
	}
	g, err := ringflake.New(opts...)
	if err != nil {
		out.done()
		err = fmt.Errorf("%s: %w", where, err)
		if errors.Is(err, ringflake.ErrInvalidConfig) {
			return nil, fmt.Errorf("%w: %w", errUsage, err)
		}
		return nil, err // no machine ID to be had: a failure, not bad input
	}
	out.Generator = g
	return out, nil
}
