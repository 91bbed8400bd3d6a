package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"strconv"

	"github.com/ringflake/ringflake"
)

// genFlags holds the parsed flags of "ringflake gen".
type genFlags struct {
	n         int64
	machineID int64
}

func runGen(args []string, stdout, stderr io.Writer) error {
	var f genFlags
	fs := flag.NewFlagSet("gen", flag.ContinueOnError)
	fs.Int64Var(&f.n, "n", 1, "number of IDs to print")
	fs.Int64Var(&f.machineID, "machine-id", 0, "machine ID, 0..1023 with the default layout")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError("gen: unexpected argument %q", fs.Arg(0))
	}
	if f.n < 0 {
		return usageError("gen: -n = %d; want 0 or more", f.n)
	}
	g, err := ringflake.New(ringflake.WithMachineID(f.machineID))
	if err != nil {
		return usageError("gen: %v", err)
	}
	defer g.Close()
	return writeIDs(g, f.n, stdout)
}

// writeIDs prints n IDs from g, one decimal per line.
func writeIDs(g *ringflake.Generator, n int64, stdout io.Writer) error {
	w := bufio.NewWriter(stdout)
	var buf [20]byte
	for i := int64(0); i < n; i++ {
		id, err := g.NextID()
		if err != nil {
			w.Flush()
			return fmt.Errorf("gen: after %d IDs: %w", i, err)
		}
		w.Write(strconv.AppendInt(buf[:0], int64(id), 10))
		w.WriteByte('\n')
	}
	return w.Flush()
}
