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
	"sync"
	"syscall"
	"time"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/cmd/ringflake/internal/logs"
	"github.com/ringflake/ringflake/cmd/ringflake/internal/startup"
)

// genFlags holds the parsed flags of "ringflake gen".
type genFlags struct {
	n int64
	sourceFlags
}

// noMachineIDNote is what gen says on stderr when it falls back to
// machine ID 0.
const noMachineIDNote = "ringflake: no --machine-id or --lease given; using machine ID 0, which is unique only if no other generator uses it"

// runGen prints the IDs. A signal stops it at any point within about a
// second (stopGrace) plus the release (at most startup.ReleaseTimeout), however
// long --max-wait is: the IDs printed so far stay printed, the lease is
// released, and it returns an error saying how many IDs it printed, with
// the release's error if that failed.
func runGen(args []string, stdout, stderr io.Writer) error {
	f, err := parseGen(args, stderr)
	if err != nil {
		return err
	}
	// A write to a closed pipe (stdout, or stderr for a note) then fails
	// with EPIPE instead of killing the process, which would leave a
	// lease held until its TTL.
	signal.Ignore(syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := genLog(stderr)
	if f.lease.url == "" && !f.set["machine-id"] {
		fmt.Fprintln(stderr, noMachineIDNote)
	}
	st := startup.New(ctx, f.sourceName())
	p, err := f.prepare(log, st)
	if err != nil {
		return err
	}
	g, err := p.start(st)
	if err != nil {
		p.out.done()
	}
	if errors.Is(err, startup.ErrInterrupted) {
		return fmt.Errorf("gen: %w", err)
	}
	if err != nil {
		return err
	}
	defer g.done()
	return printIDs(ctx, g, f.n, stdout)
}

// printIDs writes n IDs of g to stdout until they are out or ctx ends (a
// signal), then closes g, releasing its lease, within startup.ReleaseTimeout.
func printIDs(ctx context.Context, g *generator, n int64, stdout io.Writer) error {
	out := &idWriter{w: bufio.NewWriter(stdout)}
	done := make(chan error, 1)
	go func() { done <- out.write(ctx, g.Generator, n) }()
	var werr error
	select {
	case werr = <-done:
	case <-ctx.Done():
	}
	deadline := time.NewTimer(startup.ReleaseTimeout)
	defer deadline.Stop()
	// Close wakes a call waiting for a lease; one waiting for the clock
	// sleeps on, for up to --max-wait, and is not waited for past
	// stopGrace.
	relErr := startup.Within(g.Close, deadline.C)
	if ctx.Err() != nil && werr == nil {
		grace := time.NewTimer(stopGrace)
		defer grace.Stop()
		select {
		case <-done:
		case <-grace.C:
		}
		werr = fmt.Errorf("gen: interrupted after %d IDs", out.stop())
	}
	if ferr := out.flush(); ferr != nil && werr == nil {
		werr = ferr
	}
	if relErr != nil && g.leased {
		return errors.Join(werr, fmt.Errorf("gen: releasing the machine ID's lease: %w", relErr))
	}
	return werr
}

// stopGrace is how long gen waits, after a signal, for the call in
// flight to return.
const stopGrace = time.Second

// parseGen parses gen's flags.
func parseGen(args []string, stderr io.Writer) (genFlags, error) {
	var f genFlags
	fs := flag.NewFlagSet("gen", flag.ContinueOnError)
	fs.Int64Var(&f.n, "n", 1, "number of IDs to print")
	f.register(fs)
	if err := parseFlags(fs, args, stderr); err != nil {
		return f, err
	}
	switch {
	case fs.NArg() > 0:
		return f, usageError("gen: unexpected argument %q", fs.Arg(0))
	case f.n < 0:
		return f, usageError("gen: -n = %d; want 0 or more", f.n)
	}
	return f, f.check(fs)
}

// genLog returns gen's logger: the library's records on stderr as text,
// without the time (stderr lines of a command are read as they come), and
// without its "long wait" records. gen prints IDs in bulk: a wait that
// ends in an ID changes nothing for its reader, and one that fails ends gen
// with its error; what makes a wait worth hearing of, a step back of the
// clock or a lease lost, has a record of its own. On a loaded machine calls
// wait 10 to 20 ms for no reason but the scheduler, and such a record came
// before gen's one-line reason for stopping. A wait for the mark under a
// second is left out too (logs.Filter).
func genLog(stderr io.Writer) *slog.Logger {
	return slog.New(logs.Filter(slog.NewTextHandler(stderr, &slog.HandlerOptions{ReplaceAttr: dropTime}), false))
}

// dropTime leaves the time out of log records: stderr lines of a command
// are read as they come.
func dropTime(groups []string, a slog.Attr) slog.Attr {
	if len(groups) == 0 && a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}

// idWriter prints IDs, one decimal per line. Its writes and its stop are
// serialised by mu, so that gen can stop it while a call waits and still
// print every ID issued before.
type idWriter struct {
	mu      sync.Mutex // protects the fields below
	w       *bufio.Writer
	n       int64 // IDs printed
	stopped bool  // no more IDs are printed
}

// write prints n IDs from g until ctx is done or stdout fails. A reader
// that went away (gen | head) ends the run quietly, with errClosedPipe, so
// that the caller still releases its lease. It does not flush.
func (o *idWriter) write(ctx context.Context, g *ringflake.Generator, n int64) error {
	var buf [21]byte
	for i := int64(0); i < n; i++ {
		if ctx.Err() != nil {
			return nil // runGen reports the interruption
		}
		id, err := g.NextID() // waits at most MaxWait
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("gen: after %d IDs: %w", i, err)
		}
		line := append(strconv.AppendInt(buf[:0], int64(id), 10), '\n')
		o.mu.Lock()
		if o.stopped {
			o.mu.Unlock()
			return nil
		}
		_, err = o.w.Write(line)
		o.n++
		o.mu.Unlock()
		if err != nil {
			return writeError(err)
		}
	}
	return nil
}

// stop ends the printing and returns how many IDs were printed.
func (o *idWriter) stop() int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.stopped = true
	return o.n
}

// flush writes out what is buffered.
func (o *idWriter) flush() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.w.Flush(); err != nil {
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
