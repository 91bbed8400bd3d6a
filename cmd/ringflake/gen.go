package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/machineid"
)

// genFlags holds the parsed flags of "ringflake gen".
type genFlags struct {
	n           int64
	machineID   int64
	clockOffset time.Duration
	redis       redisFlags
}

func runGen(args []string, stdout, stderr io.Writer) error {
	var f genFlags
	fs := flag.NewFlagSet("gen", flag.ContinueOnError)
	fs.Int64Var(&f.n, "n", 1, "number of IDs to print")
	fs.Int64Var(&f.machineID, "machine-id", 0, "machine ID, 0..1023 with the default layout")
	fs.DurationVar(&f.clockOffset, "clock-offset", 0,
		"for testing and demos only: shift the generator's clock by `D`; negative simulates a clock that is behind")
	f.redis.register(fs)
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError("gen: unexpected argument %q", fs.Arg(0))
	}
	if f.n < 0 {
		return usageError("gen: -n = %d; want 0 or more", f.n)
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	if err := f.redis.check(set); err != nil {
		return err
	}
	// A write to a closed pipe (stdout, or stderr for a note) then fails
	// with EPIPE instead of killing the process, which would leave a
	// Redis lease held until its TTL.
	signal.Ignore(syscall.SIGPIPE)
	opts := []ringflake.Option{ringflake.WithMachineID(f.machineID)}
	var clock func() time.Time
	if f.clockOffset != 0 {
		off := f.clockOffset
		clock = func() time.Time { return time.Now().Add(off) }
		opts = append(opts, ringflake.WithClock(clock))
	}
	var svc machineid.Service
	if f.redis.addr != "" {
		var done func()
		var err error
		svc, done, err = f.redis.service(ringflake.DefaultLayout().MaxMachine(), clock)
		if err != nil {
			return err
		}
		defer done()
		// A restarted process may have to wait for its clock to pass the
		// previous holder's mark, and a process on a fresh Redis for the
		// restart floor: up to a TTL counted from when the lease came in,
		// plus the tick after it. Redis blips are ridden out the same way.
		opts[0] = ringflake.WithMachineIDService(svc)
		opts = append(opts, ringflake.WithMaxWait(f.redis.ttl+markWaitSlack))
	}
	g, err := ringflake.New(opts...)
	if err != nil {
		if f.redis.addr != "" {
			// No machine ID to be had: a failure, not bad input. Say which
			// server, and drop New's own prefix, which the CLI's repeats.
			if inner := errors.Unwrap(err); inner != nil && strings.HasPrefix(err.Error(), "ringflake: getting machine ID: ") {
				err = inner
			}
			return fmt.Errorf("gen: machine ID from redis %s: %w", f.redis.addr, err)
		}
		return usageError("gen: %v", err)
	}
	defer g.Close() // releases a Redis lease
	noteMarkWait(svc, clock, stderr)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return writeIDs(ctx, g, f.n, stdout)
}

// markWaitSlack is what gen's MaxWait adds to the TTL with Redis: a wait
// for an inherited mark lasts up to a TTL from when the lease came in, and
// the first ID comes from the tick after the mark.
const markWaitSlack = time.Second

// markWaitNote is the shortest wait for an inherited mark that gen
// explains on stderr before it starts, so that a pause of up to a TTL
// (typically right after Redis started) is not silent.
const markWaitNote = time.Second

// noteMarkWait writes one line to stderr if svc's lease makes the
// generator wait at least markWaitNote for its clock to pass the mark the
// ID's previous holder (or a restarted Redis) may have issued up to.
func noteMarkWait(svc machineid.Service, clock func() time.Time, stderr io.Writer) {
	ls, ok := svc.(interface{ Lease() machineid.Lease })
	if !ok {
		return
	}
	l := ls.Lease()
	if clock == nil {
		clock = time.Now
	}
	if wait := l.After.Sub(clock()); l.Valid && wait >= markWaitNote {
		fmt.Fprintf(stderr, "ringflake: gen: machine ID %d may have been used up to %v from now (by its previous holder, or before Redis restarted); waiting for the clock to pass that\n",
			l.ID, wait.Round(time.Millisecond))
	}
}

// writeIDs prints n IDs from g, one decimal per line, until ctx is done or
// stdout fails. A reader that went away (gen | head) ends the run quietly,
// with errClosedPipe, so that the caller still releases its lease.
func writeIDs(ctx context.Context, g *ringflake.Generator, n int64, stdout io.Writer) error {
	w := bufio.NewWriter(stdout)
	var buf [21]byte
	for i := int64(0); i < n; i++ {
		id, err := g.NextIDContext(ctx)
		if err != nil {
			if ferr := w.Flush(); ferr != nil {
				return writeError(ferr)
			}
			if ctx.Err() != nil {
				return fmt.Errorf("gen: interrupted after %d IDs", i)
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
