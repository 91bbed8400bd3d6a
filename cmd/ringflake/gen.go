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

	"github.com/ringflake/ringflake"
)

// genFlags holds the parsed flags of "ringflake gen".
type genFlags struct {
	n int64
	sourceFlags
}

// noMachineIDNote is what gen says on stderr when it falls back to
// machine ID 0.
const noMachineIDNote = "ringflake: no --machine-id or --lease given; using machine ID 0, which is unique only if no other generator uses it"

func runGen(args []string, stdout, stderr io.Writer) error {
	f, err := parseGen(args, stderr)
	if err != nil {
		return err
	}
	// A write to a closed pipe (stdout, or stderr for a note) then fails
	// with EPIPE instead of killing the process, which would leave a
	// lease held until its TTL.
	signal.Ignore(syscall.SIGPIPE)
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{ReplaceAttr: dropTime}))
	if f.lease.url == "" && !f.set["machine-id"] {
		fmt.Fprintln(stderr, noMachineIDNote)
	}
	g, err := f.newGenerator(log)
	if err != nil {
		return err
	}
	defer g.done()
	defer g.Close() // releases a lease
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return writeIDs(ctx, g.Generator, f.n, stdout)
}

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
