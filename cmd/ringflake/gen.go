package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/ringflake/ringflake"
)

// genFlags holds the parsed flags of "ringflake gen".
type genFlags struct {
	n           int64
	machineID   int64
	acquire     time.Duration
	maxWait     time.Duration
	clockOffset time.Duration
	lease       leaseFlags
}

// noMachineIDNote is what gen says on stderr when it falls back to
// machine ID 0.
const noMachineIDNote = "ringflake: no --machine-id or --lease given; using machine ID 0, which is unique only if no other generator uses it"

func runGen(args []string, stdout, stderr io.Writer) error {
	f, set, err := parseGen(args, stderr)
	if err != nil {
		return err
	}
	// A write to a closed pipe (stdout, or stderr for a note) then fails
	// with EPIPE instead of killing the process, which would leave a
	// lease held until its TTL.
	signal.Ignore(syscall.SIGPIPE)
	opts := []ringflake.Option{
		ringflake.WithAcquireTimeout(f.acquire),
		ringflake.WithMaxWait(f.maxWait),
		ringflake.WithLogger(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{ReplaceAttr: dropTime}))),
	}
	var clock func() time.Time
	if f.clockOffset != 0 {
		off := f.clockOffset
		clock = func() time.Time { return time.Now().Add(off) }
		opts = append(opts, ringflake.WithClock(clock))
	}
	source := "gen"
	switch {
	case f.lease.url != "":
		leaser, done, name, err := f.lease.leaser(ringflake.DefaultLayout().MaxMachine(), clock)
		if err != nil {
			return err
		}
		defer done()
		opts = append(opts, ringflake.WithMachineIDSource(leaser))
		source = "gen: lease " + name
	case set["machine-id"]:
		opts = append(opts, ringflake.WithMachineID(f.machineID))
	default:
		fmt.Fprintln(stderr, noMachineIDNote)
		opts = append(opts, ringflake.WithMachineID(0))
	}
	// New waits for a leased ID's inherited mark (up to a TTL on a store
	// that just restarted), and logs that it does.
	g, err := ringflake.New(opts...)
	if err != nil {
		err = fmt.Errorf("%s: %w", source, err)
		if errors.Is(err, ringflake.ErrInvalidConfig) {
			return fmt.Errorf("%w: %w", errUsage, err)
		}
		return err // no machine ID to be had: a failure, not bad input
	}
	defer g.Close() // releases a lease
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return writeIDs(ctx, g, f.n, stdout)
}

// parseGen parses gen's flags and returns them with the set of those
// given.
func parseGen(args []string, stderr io.Writer) (genFlags, map[string]bool, error) {
	var f genFlags
	fs := flag.NewFlagSet("gen", flag.ContinueOnError)
	fs.Int64Var(&f.n, "n", 1, "number of IDs to print")
	fs.Int64Var(&f.machineID, "machine-id", 0, "machine ID `M`, 0..1023; every generator sharing the IDs needs its own (with neither this nor --lease: 0, and a note on stderr)")
	fs.DurationVar(&f.acquire, "acquire-timeout", 0, "wait at most `D` for the leased machine ID and for the clock to pass the mark it inherited (default 30s; at least the lease TTL plus --max-clock-skew to ride out a store restart)")
	fs.DurationVar(&f.maxWait, "max-wait", defaultMaxWait, "wait at most `D` for each ID: for the next tick, a clock that stepped back, or a lease that lapsed")
	fs.DurationVar(&f.clockOffset, "clock-offset", 0,
		"for testing and demos only: shift the generator's clock by `D`; negative simulates a clock that is behind")
	f.lease.register(fs)
	set := map[string]bool{}
	if err := parseFlags(fs, args, stderr); err != nil {
		return f, set, err
	}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	switch {
	case fs.NArg() > 0:
		return f, set, usageError("gen: unexpected argument %q", fs.Arg(0))
	case f.n < 0:
		return f, set, usageError("gen: -n = %d; want 0 or more", f.n)
	}
	return f, set, f.lease.check(set)
}

// dropTime leaves the time out of log records: stderr lines of a command
// are read as they come.
func dropTime(groups []string, a slog.Attr) slog.Attr {
	if len(groups) == 0 && a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}

// writeIDs prints n IDs from g, one decimal per line, until ctx is done or
// stdout fails. A reader that went away (gen | head) ends the run quietly,
// with errClosedPipe, so that the caller still releases its lease.
func writeIDs(ctx context.Context, g *ringflake.Generator, n int64, stdout io.Writer) error {
	w := bufio.NewWriter(stdout)
	var buf [21]byte
	for i := int64(0); i < n; i++ {
		if ctx.Err() != nil {
			if ferr := w.Flush(); ferr != nil {
				return writeError(ferr)
			}
			return fmt.Errorf("gen: interrupted after %d IDs", i)
		}
		id, err := g.NextID() // waits at most MaxWait
		if err != nil {
			if ferr := w.Flush(); ferr != nil {
				return writeError(ferr)
			}
			return fmt.Errorf("gen: after %d IDs: %w", i, err)
		}
		line := append(strconv.AppendInt(buf[:0], int64(id), 10), '\n')
		if _, err := w.Write(line); err != nil {
			return writeError(err)
		}
	}
	if err := w.Flush(); err != nil {
		return writeError(err)
	}
	return nil
}

// errClosedPipe ends gen when nobody reads its output any more; the
// process exits with status 141, as if killed by SIGPIPE, and says
// nothing.
var errClosedPipe = errors.New("stdout closed")

// writeError turns a failed write to stdout into the error gen ends with.
func writeError(err error) error {
	if errors.Is(err, syscall.EPIPE) {
		return errClosedPipe
	}
	return fmt.Errorf("gen: writing IDs: %w", err)
}
